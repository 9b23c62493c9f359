import { describe, expect, it } from 'vitest';
import { recordValidationFailure, VALIDATION_FAILURE_WINDOW_MS, validationHeldUntil } from './validation-hold.js';

const T0 = Date.UTC(2025, 0, 1);
const MIN = 60_000;
const HOUR = VALIDATION_FAILURE_WINDOW_MS;

/** Failure times after recording each of `times` in order. */
const failuresAt = (...times: number[]) => times.reduce<number[]>((list, at) => recordValidationFailure(list, at), []);

describe('validationHeldUntil', () => {
  const five = failuresAt(T0, T0 + 10 * MIN, T0 + 20 * MIN, T0 + 30 * MIN, T0 + 40 * MIN);

  it.each([
    { case: '4 failures in an hour: no hold', failures: five.slice(0, 4), now: T0 + 40 * MIN, expected: null },
    {
      case: '5 failures in an hour: held until the oldest is an hour old',
      failures: five,
      now: T0 + 40 * MIN,
      expected: T0 + HOUR,
    },
    {
      case: '1 ms before the oldest is an hour old: still held',
      failures: five,
      now: T0 + HOUR - 1,
      expected: T0 + HOUR,
    },
    { case: 'the oldest is an hour old: free', failures: five, now: T0 + HOUR, expected: null },
    { case: 'no failures', failures: [], now: T0, expected: null },
  ])('$case', ({ failures, now, expected }) => {
    expect(validationHeldUntil(failures, now)).toBe(expected);
  });

  it('5 failures spread over more than an hour put no hold', () => {
    const spread = failuresAt(T0, T0 + 20 * MIN, T0 + 40 * MIN, T0 + 60 * MIN, T0 + 80 * MIN);
    expect(validationHeldUntil(spread, T0 + 80 * MIN)).toBeNull();
  });

  it('a sixth failure in the hour holds until the second-oldest of the last five is an hour old', () => {
    const six = [T0, T0 + 1 * MIN, T0 + 2 * MIN, T0 + 3 * MIN, T0 + 4 * MIN, T0 + 5 * MIN];
    expect(validationHeldUntil(six, T0 + 5 * MIN)).toBe(T0 + MIN + HOUR);
  });
});

describe('recordValidationFailure', () => {
  it('keeps only the last five failures inside the hour, oldest first', () => {
    expect(failuresAt(T0, T0 + HOUR, T0 + HOUR + 1)).toEqual([T0 + HOUR, T0 + HOUR + 1]);
    const many = Array.from({ length: 8 }, (_, i) => T0 + i * MIN);
    expect(failuresAt(...many)).toEqual(many.slice(-5));
  });
});
