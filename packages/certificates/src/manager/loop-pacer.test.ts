import { describe, expect, it } from 'vitest';
import { loopPacer } from './loop-pacer.js';

/** Keeps the event loop busy for `ms` in one go. */
function spin(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy
  }
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

// Issue 30: certificate attempts wait while the event loop is busy, so route writes do not wait behind them.
describe('loopPacer', () => {
  it('lets an attempt start at once when the loop has been idle', async () => {
    const pace = loopPacer({ utilization: 0.5, windowMs: 40, waitMs: 5 });
    await new Promise((resolve) => setTimeout(resolve, 60));
    const t0 = performance.now();
    await pace();
    expect(performance.now() - t0).toBeLessThan(20);
  });

  it('holds an attempt back while the loop was busy for more than its share of the window', async () => {
    const pace = loopPacer({ utilization: 0.5, windowMs: 40, waitMs: 5 });
    // Busy for ~90 % of a window: turns of 9 ms, 1 ms apart.
    for (let i = 0; i < 6; i++) {
      spin(9);
      await tick();
    }
    let started = false;
    const paced = pace().then(() => {
      started = true;
    });
    spin(9);
    await tick();
    expect(started).toBe(false);
    // Idle again: it starts within a window or two.
    const t0 = performance.now();
    await paced;
    const waited = performance.now() - t0;
    expect(waited).toBeGreaterThan(0);
    expect(waited).toBeLessThan(400);
  });
});

describe('loopPacer: CPU off the loop', () => {
  it('holds an attempt back while the thread pool kept a core busy, the loop idle', async () => {
    const { pbkdf2 } = await import('node:crypto');
    // A low bar: beside other busy processes the pool's two threads may get well under a core between them,
    // while the idle loop's own share stays near 0 (a pacer that counted only the loop would let it start).
    const pace = loopPacer({ utilization: 0.1, windowMs: 40, waitMs: 5 });
    // Work on libuv's pool only: the loop waits, the process burns CPU.
    const burn = () => new Promise((resolve) => pbkdf2('p', 's', 200_000, 32, 'sha256', resolve));
    const until = performance.now() + 60;
    while (performance.now() < until) await Promise.all([burn(), burn()]);
    let started = false;
    const paced = pace().then(() => {
      started = true;
    });
    await burn();
    expect(started).toBe(false);
    await paced;
  });
});
