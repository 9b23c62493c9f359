import { describe, expect, it } from 'vitest';
import { SlidingWindowCounter } from './sliding-window.js';

describe('SlidingWindowCounter', () => {
  it('counts events inside the window and drops them at the edge (1 s buckets)', () => {
    const w = new SlidingWindowCounter(60, 1000);
    const t0 = 1_700_000_000_000;
    w.add(t0);
    w.add(t0 + 500);
    w.add(t0 + 30_000);
    expect(w.count(t0 + 30_000)).toBe(3);
    // 59.999 s after t0's bucket start: still inside.
    expect(w.count(t0 + 59_999)).toBe(3);
    // The bucket of t0 leaves at t0 + 60 s.
    expect(w.count(t0 + 60_000)).toBe(1);
    expect(w.count(t0 + 89_999)).toBe(1);
    expect(w.count(t0 + 90_000)).toBe(0);
  });

  it('an idle counter decays to 0 and a reused slot starts fresh', () => {
    const w = new SlidingWindowCounter(360, 10_000);
    const t0 = 1_700_000_000_000;
    for (let i = 0; i < 1000; i++) w.add(t0 + i);
    expect(w.count(t0 + 1000)).toBe(1000);
    expect(w.count(t0 + 3_599_999)).toBe(1000);
    expect(w.count(t0 + 3_600_000)).toBe(0);
    // Same slot one full ring later: the old count is not added.
    w.add(t0 + 3_600_000);
    expect(w.count(t0 + 3_600_000)).toBe(1);
  });

  it('the worst-case error is one bucket of events at the trailing edge', () => {
    const w = new SlidingWindowCounter(60, 1000);
    const t0 = 1_700_000_000_000;
    // 10 events at the very start of a bucket; read 60.9 s later (nominally all out).
    for (let i = 0; i < 10; i++) w.add(t0);
    expect(w.count(t0 + 59_900)).toBe(10);
    expect(w.count(t0 + 60_000)).toBe(0);
  });
});
