import { describe, expect, it } from 'vitest';
import { planRange } from './buckets.js';

const H = 3_600_000;
const M = 60_000;
const D = 86_400_000;
const T0 = Date.UTC(2026, 10, 20);
const keepAll = { minute: 0, hour: 0 };

describe('planRange', () => {
  it('whole days by their day rows, the rest by whole hours and minutes, cut at midnight', () => {
    const slices = planRange({ from: T0 + 22 * H + 30 * M, to: T0 + 2 * D + 1 * H + 15 * M }, keepAll);
    expect(slices).toEqual([
      {
        day: T0,
        whole: false,
        pieces: [
          { interval: 'minute', from: T0 + 22 * H + 30 * M, to: T0 + 23 * H },
          { interval: 'hour', from: T0 + 23 * H, to: T0 + D },
        ],
      },
      { day: T0 + D, whole: true, pieces: [{ interval: 'day', from: T0 + D, to: T0 + 2 * D }] },
      {
        day: T0 + 2 * D,
        whole: false,
        pieces: [
          { interval: 'hour', from: T0 + 2 * D, to: T0 + 2 * D + H },
          { interval: 'minute', from: T0 + 2 * D + H, to: T0 + 2 * D + H + 15 * M },
        ],
      },
    ]);
  });

  it('widens to whole minutes; a range inside one hour is minutes only', () => {
    expect(planRange({ from: T0 + 10 * M + 5, to: T0 + 12 * M + 1 }, keepAll)).toEqual([
      { day: T0, whole: false, pieces: [{ interval: 'minute', from: T0 + 10 * M, to: T0 + 13 * M }] },
    ]);
  });

  it('minutes a tier no longer keeps are read from their hour; hours from their day', () => {
    const range = { from: T0 + 10 * H + 5 * M, to: T0 + 12 * H + 30 * M };
    expect(planRange(range, { minute: T0 + D, hour: 0 })[0]?.pieces).toEqual([
      { interval: 'hour', from: T0 + 10 * H, to: T0 + 13 * H },
    ]);
    expect(planRange(range, { minute: T0 + D, hour: T0 + D })).toEqual([
      { day: T0, whole: true, pieces: [{ interval: 'day', from: T0, to: T0 + D }] },
    ]);
  });
});
