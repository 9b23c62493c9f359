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

  for (const [name, buckets, width] of [
    ['1-minute window (60 × 1 s)', 60, 1000],
    ['60-minute window (120 × 30 s)', 120, 30_000],
  ] as const) {
    it(`${name}: never over-counts; worst case it misses the oldest bucket (an event counted for ≥ ${buckets - 1} and < ${buckets} widths)`, () => {
      const w = new SlidingWindowCounter(buckets, width);
      const window = buckets * width;
      const b0 = Math.ceil(1_700_000_000_000 / width) * width; // a bucket boundary
      // 10 events at the very end of a bucket, 5 at the start of the next one.
      for (let i = 0; i < 10; i++) w.add(b0 + width - 1);
      for (let i = 0; i < 5; i++) w.add(b0 + width);
      // Read exactly (buckets - 1) widths + 1 ms after the first events: they are younger than
      // the nominal window (window - width + 1 ms old) yet already dropped. This is the worst case.
      const edge = b0 + window;
      expect(edge - (b0 + width - 1)).toBe(window - width + 1);
      expect(w.count(edge - 1)).toBe(15);
      expect(w.count(edge)).toBe(5);
      // The missing part is at most one bucket of the window's events.
      expect(15 - w.count(edge)).toBeLessThanOrEqual(10);
      // An event at a bucket's start is counted until just before it is one window old.
      expect(w.count(b0 + width + window - 1)).toBe(5);
      expect(w.count(b0 + width + window)).toBe(0);
      // At a steady rate (one event per width/10), the count is between (buckets - 1) and buckets widths' worth.
      const steady = new SlidingWindowCounter(buckets, width);
      const step = width / 10;
      const end = b0 + 3 * window;
      const times: number[] = [];
      for (let t = b0; t < end; t += step) {
        steady.add(t);
        times.push(t);
      }
      for (const at of [end - 1, end - width / 2, end - step / 2, end - width + 1]) {
        const n = steady.count(at);
        const exact = times.filter((t) => t > at - window && t <= at).length;
        expect(n).toBeLessThanOrEqual(exact);
        expect(n).toBeGreaterThanOrEqual(exact - 10);
        expect((exact - n) / exact).toBeLessThanOrEqual(1 / buckets + 1e-9);
      }
    });
  }

  it('merge: rings of several processes line up by absolute bucket; a bucket a newer one replaced in any ring is out', () => {
    const t0 = 1_700_000_000_000;
    const one = new SlidingWindowCounter(60, 1000);
    const a = new SlidingWindowCounter(60, 1000);
    const b = new SlidingWindowCounter(60, 1000);
    // a: 3 events at t0; b: 2 at t0 + 30 s; then both at t0 + 60 s, the slot of t0 again.
    const events: Array<[number, SlidingWindowCounter]> = [
      [t0, a],
      [t0 + 1, a],
      [t0 + 2, a],
      [t0 + 30_000, b],
      [t0 + 30_500, b],
      [t0 + 60_000, b],
      [t0 + 60_001, a],
      [t0 + 60_002, b],
    ];
    for (const [at, ring] of events) {
      one.add(at);
      ring.add(at);
    }
    const merged = SlidingWindowCounter.merge(60, 1000, [a.exportSlots(), b.exportSlots()]);
    expect(merged.exportSlots()).toEqual(one.exportSlots());
    for (const at of [t0 + 60_002, t0 + 89_999, t0 + 90_000, t0 + 119_999, t0 + 120_000]) {
      expect(merged.count(at), `at +${at - t0} ms`).toBe(one.count(at));
    }
    expect(merged.count(t0 + 60_002)).toBe(5);
  });

  it('merge: one ring still holding an old bucket in a slot another ring reused does not add it', () => {
    const t0 = 1_700_000_000_000;
    const a = new SlidingWindowCounter(60, 1000);
    const b = new SlidingWindowCounter(60, 1000);
    a.add(t0); // slot s, bucket B
    b.add(t0 + 60_000); // slot s, bucket B + 60
    const merged = SlidingWindowCounter.merge(60, 1000, [a.exportSlots(), b.exportSlots()]);
    expect(merged.count(t0 + 60_000)).toBe(1);
    const reversed = SlidingWindowCounter.merge(60, 1000, [b.exportSlots(), a.exportSlots()]);
    expect(reversed.exportSlots()).toEqual(merged.exportSlots());
    expect(() => SlidingWindowCounter.merge(120, 30_000, [a.exportSlots()])).toThrow(RangeError);
  });
});
