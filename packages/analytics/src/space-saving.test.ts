import { describe, expect, it } from 'vitest';
import { SpaceSaving } from './space-saving.js';

describe('SpaceSaving', () => {
  it('keeps exact counts while keys fit, sorted by count then key', () => {
    const s = new SpaceSaving(32);
    for (let i = 1; i <= 12; i++) for (let j = 0; j < i; j++) s.add(`/p${i}`);
    s.add('/a');
    s.add('/b');
    const top = s.top(10);
    expect(top).toHaveLength(10);
    expect(top[0]).toEqual({ key: '/p12', count: 12 });
    expect(top.map((t) => t.count)).toEqual([12, 11, 10, 9, 8, 7, 6, 5, 4, 3]);
  });

  it('breaks ties by key (ascending), also between an evicting key and a tracked one', () => {
    const s = new SpaceSaving(3);
    for (const k of ['z', 'y', 'x', 'x', 'y', 'z']) s.add(k);
    expect(s.top(3)).toEqual([
      { key: 'x', count: 2 },
      { key: 'y', count: 2 },
      { key: 'z', count: 2 },
    ]);
    // 'w' evicts one of the tied minima and inherits its count as error: guaranteed count 1, ranked last.
    s.add('w');
    const top = s.top(3);
    expect(top[2]).toEqual({ key: 'w', count: 1 });
    expect(top.slice(0, 2).map((t) => t.count)).toEqual([2, 2]);
    expect((top[0]?.key as string) < (top[1]?.key as string)).toBe(true);
  });

  it('finds the heavy hitters (over total/capacity) in a long tail of 100,000 distinct keys', () => {
    const s = new SpaceSaving(32);
    const heavy = Array.from({ length: 10 }, (_, i) => `/heavy/${i}`);
    // Each heavy key gets ~8,300 of ~188,000 requests (> 188,000 / 32 ≈ 5,900).
    for (let i = 0; i < 100_000; i++) {
      s.add(`/tail/${i}`);
      if (i % 2 === 0) s.add(heavy[(i / 2) % 10] as string);
      if (i % 3 === 0) s.add(heavy[(i / 3) % 10] as string);
      if (i % 20 === 0) s.add(heavy[0] as string);
    }
    const top = s.top(10).map((t) => t.key);
    expect(new Set(top)).toEqual(new Set(heavy));
    expect(s.top(1)[0]?.key).toBe('/heavy/0');
    expect(s.top(100)).toHaveLength(32);
  });
});
