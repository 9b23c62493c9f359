import { describe, expect, it } from 'vitest';
import { type BackoffState, DEFAULT_BACKOFF_POLICY, recordFailure } from './backoff.js';

const T0 = Date.UTC(2025, 0, 1);
const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;
const noJitter = () => 0;

/** Fails `count` times, each at the scheduled next attempt, and returns the delays. */
function delays(count: number, random: () => number): number[] {
  let state: BackoffState | null = null;
  let at = T0;
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    state = recordFailure(state, { at, error: 'boom' }, random);
    if (state.gaveUp) throw new Error('gave up too early');
    out.push(state.nextAttemptAt - at);
    at = state.nextAttemptAt;
  }
  return out;
}

describe('recordFailure', () => {
  it('starts at 1 minute, doubles, and is capped at 6 hours', () => {
    expect(delays(12, noJitter).map((ms) => ms / MIN)).toEqual([1, 2, 4, 8, 16, 32, 64, 128, 256, 360, 360, 360]);
  });

  it.each([
    { random: 0.5, first: 54_000, capped: 6 * HOUR * 0.9 },
    { random: 0.999_999, first: 48_001, capped: 17_280_005 },
  ])('jitter shortens each delay by up to 20 % (random $random)', ({ random, first, capped }) => {
    const sequence = delays(12, () => random);
    expect(sequence[0]).toBe(first);
    expect(sequence.at(-1)).toBe(capped);
  });

  it('keeps the run: first failure, count and the latest error', () => {
    const first = recordFailure(null, { at: T0, error: 'connect ECONNREFUSED 127.0.0.1:14000' }, noJitter);
    const second = recordFailure(first, { at: T0 + MIN, error: 'urn:ietf:params:acme:error:rateLimited' }, noJitter);
    expect(second).toEqual({
      firstFailureAt: T0,
      lastFailureAt: T0 + MIN,
      failures: 2,
      lastError: 'urn:ietf:params:acme:error:rateLimited',
      gaveUp: false,
      nextAttemptAt: T0 + 3 * MIN,
    });
  });

  it('a success resets the backoff: the next failure waits 1 minute again', () => {
    let state: BackoffState | null = null;
    for (let i = 0; i < 5; i++) state = recordFailure(state, { at: T0 + i * HOUR, error: 'x' }, noJitter);
    state = null; // success
    expect(recordFailure(state, { at: T0 + DAY, error: 'x' }, noJitter)).toMatchObject({
      failures: 1,
      firstFailureAt: T0 + DAY,
      nextAttemptAt: T0 + DAY + MIN,
    });
  });

  describe("the CA's Retry-After", () => {
    const first = (retryAt: number) => recordFailure(null, { at: T0, error: 'x', retryAt }, noJitter);

    it.each([
      { case: 'longer than the backoff is honoured', retryAt: T0 + 30 * MIN, next: T0 + 30 * MIN },
      { case: 'shorter than the backoff does not shorten it', retryAt: T0 + 10_000, next: T0 + MIN },
      { case: 'in the past does not shorten it', retryAt: T0 - HOUR, next: T0 + MIN },
      { case: 'exactly the cap is honoured', retryAt: T0 + 6 * HOUR, next: T0 + 6 * HOUR },
      { case: 'beyond the cap is capped at 6 hours', retryAt: T0 + 7 * DAY, next: T0 + 6 * HOUR },
    ])('$case', ({ retryAt, next }) => {
      expect(first(retryAt)).toMatchObject({ gaveUp: false, nextAttemptAt: next });
    });
  });

  describe('giving up after 30 days', () => {
    const failingSince = recordFailure(null, { at: T0, error: 'first' }, noJitter);
    const GIVE_UP = T0 + DEFAULT_BACKOFF_POLICY.giveUpAfterMs;

    it('retries a failure 1 ms short of 30 days', () => {
      expect(recordFailure(failingSince, { at: GIVE_UP - 1, error: 'late' }, noJitter)).toMatchObject({
        gaveUp: false,
        failures: 2,
      });
    });

    it('gives up at a failure 30 days into the run, and says when and why', () => {
      expect(recordFailure(failingSince, { at: GIVE_UP, error: 'NXDOMAIN' }, noJitter)).toEqual({
        firstFailureAt: T0,
        lastFailureAt: GIVE_UP,
        failures: 2,
        lastError: 'NXDOMAIN',
        gaveUp: true,
        gaveUpAt: GIVE_UP,
      });
    });

    it('gives up on a real schedule, failing at every attempt, 30 days after the first failure', () => {
      let state: BackoffState = failingSince;
      while (!state.gaveUp) state = recordFailure(state, { at: state.nextAttemptAt, error: 'x' }, noJitter);
      expect(state.gaveUpAt).toBeGreaterThanOrEqual(GIVE_UP);
      expect(state.gaveUpAt).toBeLessThan(GIVE_UP + 6 * HOUR);
    });

    it('a failure after giving up (an attempt asked for anew) starts a new run', () => {
      const gaveUp = recordFailure(failingSince, { at: GIVE_UP, error: 'x' }, noJitter);
      expect(recordFailure(gaveUp, { at: GIVE_UP + DAY, error: 'y' }, noJitter)).toMatchObject({
        gaveUp: false,
        failures: 1,
        firstFailureAt: GIVE_UP + DAY,
        nextAttemptAt: GIVE_UP + DAY + MIN,
      });
    });
  });
});
