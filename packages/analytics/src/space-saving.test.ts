import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { hashString } from './hash.js';
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
    // A new key first counts in its filter bucket: one 'w' does not evict a key counted twice.
    s.add('w');
    expect(s.top(3).map((t) => t.key)).toEqual(['x', 'y', 'z']);
    // Its second occurrence reaches the smallest count: it replaces one of the tied minima and
    // inherits its filtered count as error: guaranteed count 1, ranked last.
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

describe('SpaceSaving under Zipf traffic', () => {
  /** A seeded Zipf (s = 1) sampler over `n` ranks, as page popularity roughly is. */
  function zipf(n: number, seed: number): () => number {
    const cdf = new Float64Array(n);
    let total = 0;
    for (let k = 1; k <= n; k++) total += 1 / k;
    let acc = 0;
    for (let k = 1; k <= n; k++) {
      acc += 1 / k / total;
      cdf[k - 1] = acc;
    }
    let state = seed >>> 0;
    return () => {
      state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
      const u = state / 2 ** 32;
      let lo = 0;
      let hi = n - 1;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if ((cdf[mid] as number) < u) lo = mid + 1;
        else hi = mid;
      }
      return lo;
    };
  }

  for (const [paths, requests] of [
    [1_000, 200_000],
    [100_000, 1_000_000],
  ] as const) {
    it(`shows the true top 10 in order, counts within 2 %, for ${paths.toLocaleString('en')} paths (32 slots)`, () => {
      const s = new SpaceSaving(32);
      const next = zipf(paths, paths);
      const exact = new Map<string, number>();
      for (let i = 0; i < requests; i++) {
        const key = `/docs/${next()}`;
        s.add(key);
        exact.set(key, (exact.get(key) ?? 0) + 1);
      }
      const truth = [...exact].sort((a, b) => b[1] - a[1]).slice(0, 10);
      const top = s.top(10);
      expect(top.map((t) => t.key)).toEqual(truth.map(([k]) => k));
      top.forEach((t, i) => {
        const real = truth[i]?.[1] as number;
        expect(t.count).toBeLessThanOrEqual(real);
        expect(t.count).toBeGreaterThanOrEqual(real * 0.98);
      });
    });
  }

  it('keeps the smallest count without a scan per new key, and answers exactly as the algorithm scanning every time', () => {
    // The plain statement of filtered space-saving: a scan for the first smallest count on every
    // key not tracked. The class remembers that slot instead; its answers must not change.
    const reference = (capacity: number, buckets: number, stream: string[]) => {
      const keys: string[] = [];
      const counts: number[] = [];
      const errors: number[] = [];
      const filter = new Array<number>(buckets).fill(0);
      for (const key of stream) {
        const slot = keys.indexOf(key);
        if (slot >= 0) {
          counts[slot] = (counts[slot] as number) + 1;
          continue;
        }
        const bucket = hashString(key) & (buckets - 1);
        const filtered = filter[bucket] as number;
        let target = keys.length;
        if (keys.length === capacity) {
          target = 0;
          for (let i = 1; i < capacity; i++) if ((counts[i] as number) < (counts[target] as number)) target = i;
          const min = counts[target] as number;
          if (filtered + 1 < min) {
            filter[bucket] = filtered + 1;
            continue;
          }
          const home = hashString(keys[target] as string) & (buckets - 1);
          filter[home] = Math.max(filter[home] as number, min);
        }
        keys[target] = key;
        counts[target] = filtered + 1;
        errors[target] = filtered;
      }
      return keys
        .map((key, i) => ({ key, count: (counts[i] as number) - (errors[i] as number) }))
        .sort((a, b) => b.count - a.count || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    };
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }),
        fc.constantFrom(1, 2, 8, 64),
        fc.array(fc.integer({ min: 0, max: 40 }), { maxLength: 600, size: 'max' }),
        (capacity, buckets, picks) => {
          // Small keys over a skewed alphabet: many evictions, ties and returning keys.
          const stream = picks.map((n) => `/k${n % (1 + (n % 13))}`);
          const s = new SpaceSaving(capacity, buckets);
          for (const key of stream) s.add(key);
          expect(s.top(capacity)).toEqual(reference(capacity, buckets, stream));
        },
      ),
      { numRuns: 500 },
    );
  });

  it('merge: over 3 summaries of a random split, the true top 10 in order, counts within 2 %, lower bounds', () => {
    const parts = [new SpaceSaving(32), new SpaceSaving(32), new SpaceSaving(32)];
    const next = zipf(1_000, 1_000);
    let split = 7;
    const exact = new Map<string, number>();
    for (let i = 0; i < 200_000; i++) {
      const key = `/docs/${next()}`;
      split = (Math.imul(split, 1_103_515_245) + 12_345) >>> 0;
      parts[split % 3]?.add(key);
      exact.set(key, (exact.get(key) ?? 0) + 1);
    }
    const merged = SpaceSaving.merge(
      32,
      parts.map((p) => p.exportState()),
    );
    const truth = [...exact].sort((a, b) => b[1] - a[1]).slice(0, 10);
    const top = merged.top(10);
    expect(top.map((t) => t.key)).toEqual(truth.map(([k]) => k));
    top.forEach((t, i) => {
      const real = truth[i]?.[1] as number;
      expect(t.count).toBeLessThanOrEqual(real);
      expect(t.count).toBeGreaterThanOrEqual(real * 0.98);
    });
  });
});

describe('SpaceSaving.merge', () => {
  it('is exact while the union of keys fits the capacity (counts add up, ties by key)', () => {
    const a = new SpaceSaving(8);
    const b = new SpaceSaving(8);
    for (const k of ['/x', '/y', '/x', '/z']) a.add(k);
    for (const k of ['/y', '/w', '/y', '/x']) b.add(k);
    const merged = SpaceSaving.merge(8, [a.exportState(), b.exportState()]);
    expect(merged.top(10)).toEqual([
      { key: '/x', count: 3 },
      { key: '/y', count: 3 },
      { key: '/w', count: 1 },
      { key: '/z', count: 1 },
    ]);
    // The merged summary counts on like one that saw both streams.
    merged.add('/z');
    expect(merged.top(10).find((t) => t.key === '/z')?.count).toBe(2);
    expect(SpaceSaving.merge(8, []).top(10)).toEqual([]);
  });

  it('a key filtered in one summary adds that bucket to its count and error: its guaranteed count is the sum where tracked', () => {
    const a = new SpaceSaving(2, 1);
    const b = new SpaceSaving(2, 1);
    for (const k of ['/p', '/p', '/p', '/q', '/q', '/q']) a.add(k);
    // a is full (/p 3, /q 3): /r counts in a's one bucket twice (below the smallest count, 3).
    a.add('/r');
    a.add('/r');
    for (const k of ['/r', '/r', '/r', '/r', '/p']) b.add(k);
    const [sa, sb] = [a.exportState(), b.exportState()];
    expect(sa.buckets[0]).toBe(2);
    const merged = SpaceSaving.merge(2, [sa, sb]).exportState();
    // Upper bounds: /r 4 (b) + 2 (a's bucket) = 6, /p 3 + 1 = 4, /q 3 + 0 (b never filled) = 3.
    // Capacity 2 keeps /r and /p; /q's count (3) raises its bucket.
    expect(merged.keys).toEqual(['/r', '/p']);
    expect([...merged.counts]).toEqual([6, 4, 2, 0]);
    expect(merged.buckets[0]).toBe(3);
    // Guaranteed counts: /r 6 − 2 (its 4 in b), /p 4 − 0; a tie, ranked by key.
    expect(SpaceSaving.merge(2, [sa, sb]).top(2)).toEqual([
      { key: '/p', count: 4 },
      { key: '/r', count: 4 },
    ]);
  });

  it('counts stay bounds: guaranteed count ≤ true count ≤ count, for any split (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 6 }),
        fc.constantFrom(1, 4, 16),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 30 }), fc.integer({ min: 0, max: 2 })), { maxLength: 400 }),
        (capacity, buckets, picks) => {
          const parts = [0, 1, 2].map(() => new SpaceSaving(capacity, buckets));
          const exact = new Map<string, number>();
          for (const [n, part] of picks) {
            const key = `/k${n % (1 + (n % 11))}`;
            parts[part]?.add(key);
            exact.set(key, (exact.get(key) ?? 0) + 1);
          }
          const merged = SpaceSaving.merge(
            capacity,
            parts.map((p) => p.exportState()),
          );
          const state = merged.exportState();
          const n = state.keys.length;
          expect(n).toBe(Math.min(capacity, exact.size));
          state.keys.forEach((key, i) => {
            const count = state.counts[i] as number;
            const error = state.counts[n + i] as number;
            expect(count - error).toBeLessThanOrEqual(exact.get(key) as number);
            expect(count).toBeGreaterThanOrEqual(exact.get(key) as number);
          });
          // A key left out counted at most its bucket.
          for (const [key, count] of exact) {
            if (!state.keys.includes(key))
              expect(count).toBeLessThanOrEqual(state.buckets[hashString(key) & (buckets - 1)] as number);
          }
        },
      ),
      { numRuns: 500 },
    );
  });
});
