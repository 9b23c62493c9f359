import { describe, expect, it } from 'vitest';
import { VerificationGate } from './verification-gate.js';

/** A verification that finishes when the test says so, and counts how many run at once. */
function controlled() {
  const state = { running: 0, peak: 0, started: 0, finish: [] as ((ok: boolean) => void)[] };
  const task = () => {
    state.started++;
    state.running++;
    state.peak = Math.max(state.peak, state.running);
    return new Promise<boolean>((resolve) => {
      state.finish.push((ok) => {
        state.running--;
        resolve(ok);
      });
    });
  };
  return { state, task };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('VerificationGate', () => {
  it('runs at most maxInFlight at once, queues maxQueued, refuses the rest without running them', async () => {
    const gate = new VerificationGate({ maxInFlight: 2, maxQueued: 3 });
    const { state, task } = controlled();
    const results = Array.from({ length: 10 }, () => gate.run(task));
    expect(results.filter((r) => r === null)).toHaveLength(5);
    expect(state.started).toBe(2);
    expect(gate.inFlight).toBe(2);
    expect(gate.queued).toBe(3);
    // Finish them one by one: the queue drains in order, never more than 2 at once.
    const verdicts: boolean[] = [];
    for (const r of results) r?.then((ok) => verdicts.push(ok));
    for (let i = 0; i < 5; i++) {
      state.finish.shift()?.(i % 2 === 0);
      await tick();
    }
    expect(state.started).toBe(5);
    expect(state.peak).toBe(2);
    expect(verdicts).toEqual([true, false, true, false, true]);
    expect(gate.inFlight).toBe(0);
    expect(gate.queued).toBe(0);
    // Room again.
    expect(gate.run(task)).not.toBeNull();
  });

  it('frees the slot when a verification throws or rejects', async () => {
    const gate = new VerificationGate({ maxInFlight: 1, maxQueued: 0 });
    await expect(
      gate.run(() => {
        throw new Error('sync');
      }),
    ).rejects.toThrow('sync');
    await expect(gate.run(() => Promise.reject(new Error('async')))).rejects.toThrow('async');
    expect(await gate.run(() => Promise.resolve(true))).toBe(true);
  });

  it('rejects a nonsensical bound', () => {
    expect(() => new VerificationGate({ maxInFlight: 0 })).toThrow(RangeError);
    expect(() => new VerificationGate({ maxQueued: -1 })).toThrow(RangeError);
  });
});
