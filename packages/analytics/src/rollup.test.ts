import { describe, expect, it } from 'vitest';
import { HyperLogLog } from './hyperloglog.js';
import {
  emptyRollup,
  type MinuteRollup,
  mergeRollups,
  ROLLUP_DIMENSIONS,
  ROLLUP_HLL_PRECISION,
  ROLLUP_MAX_KEYS,
  ROLLUP_MAX_VITAL_PATHS,
  ROLLUP_OTHER_KEY,
  rateVital,
} from './rollup.js';

const MINUTE = Date.UTC(2026, 5, 1, 12, 30);

/** A rollup with some traffic: `seed` varies every count, `visitors` distinct values added to the HLL. */
function sample(seed: number, visitors: string[], keys: string[] = ['/a', '/b']): MinuteRollup {
  const r = emptyRollup('example.com', MINUTE);
  r.requests = 10 * seed;
  r.page_views = 3 * seed;
  r.bot_requests = seed;
  r.bytes_sent = 1000 * seed;
  r.status.s2xx = 8 * seed;
  r.status.s4xx = 2 * seed;
  const hll = new HyperLogLog(ROLLUP_HLL_PRECISION);
  for (const v of visitors) hll.add(v);
  r.visitors = hll.exportRegisters();
  for (const [i, k] of keys.entries()) {
    r.breakdowns.pages[k] = seed + i;
    r.breakdowns.browsers[`Browser ${i}`] = seed;
  }
  r.vitals['/a'] = {
    lcp: { good: seed, needs_improvement: 1, poor: 0 },
    cls: { good: 1, needs_improvement: 0, poor: seed },
    inp: { good: 0, needs_improvement: seed, poor: 1 },
  };
  return r;
}

/** A deep copy through the structured clone a worker's IPC uses. */
const copy = (r: MinuteRollup): MinuteRollup => structuredClone(r);

/** A comparable form: records as sorted entries, registers as arrays. */
function plain(r: MinuteRollup): unknown {
  const sorted = (o: Record<string, unknown>) => Object.entries(o).sort(([a], [b]) => (a < b ? -1 : 1));
  return {
    ...r,
    visitors: [...r.visitors],
    breakdowns: ROLLUP_DIMENSIONS.map((d) => sorted(r.breakdowns[d])),
    vitals: sorted(r.vitals),
  };
}

describe('rateVital', () => {
  it('rates at the spec thresholds: good at or below, poor strictly above', () => {
    expect(rateVital('lcp', 2500)).toBe('good');
    expect(rateVital('lcp', 2500.1)).toBe('needs_improvement');
    expect(rateVital('lcp', 4000)).toBe('needs_improvement');
    expect(rateVital('lcp', 4000.1)).toBe('poor');
    expect(rateVital('cls', 0.1)).toBe('good');
    expect(rateVital('cls', 0.10001)).toBe('needs_improvement');
    expect(rateVital('cls', 0.25)).toBe('needs_improvement');
    expect(rateVital('cls', 0.2501)).toBe('poor');
    expect(rateVital('inp', 0)).toBe('good');
    expect(rateVital('inp', 200)).toBe('good');
    expect(rateVital('inp', 201)).toBe('needs_improvement');
    expect(rateVital('inp', 500)).toBe('needs_improvement');
    expect(rateVital('inp', 501)).toBe('poor');
  });
});

describe('emptyRollup', () => {
  it('has every dimension, zero counts and empty precision-10 registers', () => {
    const r = emptyRollup('example.com', MINUTE);
    expect(Object.keys(r.breakdowns).sort()).toEqual([...ROLLUP_DIMENSIONS].sort());
    expect(r.requests + r.page_views + r.bot_requests + r.bytes_sent).toBe(0);
    expect(Object.values(r.status)).toEqual([0, 0, 0, 0, 0, 0]);
    expect(r.visitors.length).toBe(new HyperLogLog(ROLLUP_HLL_PRECISION).bytes);
    expect(HyperLogLog.merge([r.visitors], ROLLUP_HLL_PRECISION).estimate()).toBe(0);
  });

  it('survives a structured clone (the worker IPC) unchanged', () => {
    const r = sample(3, ['1', '2', '3']);
    const c = structuredClone(r);
    expect(plain(c)).toEqual(plain(r));
    expect(c.visitors).toBeInstanceOf(Uint8Array);
  });
});

describe('mergeRollups', () => {
  it('sums counts, unions visitors and sums breakdowns and vitals', () => {
    const a = sample(1, ['ip1', 'ip2']);
    const b = sample(2, ['ip2', 'ip3'], ['/b', '/c']);
    const m = mergeRollups(copy(a), b);
    expect(m.requests).toBe(30);
    expect(m.page_views).toBe(9);
    expect(m.bot_requests).toBe(3);
    expect(m.bytes_sent).toBe(3000);
    expect(m.status).toEqual({ s1xx: 0, s2xx: 24, s3xx: 0, s4xx: 6, s5xx: 0, other: 0 });
    expect(HyperLogLog.merge([m.visitors], ROLLUP_HLL_PRECISION).estimate()).toBe(3);
    expect({ ...m.breakdowns.pages }).toEqual({ '/a': 1, '/b': 2 + 2, '/c': 3 });
    expect({ ...m.breakdowns.browsers }).toEqual({ 'Browser 0': 3, 'Browser 1': 3 });
    expect(m.vitals['/a']).toEqual({
      lcp: { good: 3, needs_improvement: 2, poor: 0 },
      cls: { good: 2, needs_improvement: 0, poor: 3 },
      inp: { good: 0, needs_improvement: 3, poor: 2 },
    });
    // `from` is unchanged.
    expect(plain(b)).toEqual(plain(sample(2, ['ip2', 'ip3'], ['/b', '/c'])));
  });

  it('is commutative and associative', () => {
    const rollups = [sample(1, ['a', 'b']), sample(2, ['b', 'c'], ['/x']), sample(5, ['d'], ['/a', '/y', '/z'])];
    const [a, b, c] = rollups as [MinuteRollup, MinuteRollup, MinuteRollup];
    const ab = mergeRollups(copy(a), b);
    const ba = mergeRollups(copy(b), a);
    expect(plain(ab)).toEqual(plain(ba));
    const left = mergeRollups(mergeRollups(copy(a), b), c);
    const right = mergeRollups(copy(a), mergeRollups(copy(b), c));
    const other = mergeRollups(mergeRollups(copy(c), a), b);
    expect(plain(left)).toEqual(plain(right));
    expect(plain(left)).toEqual(plain(other));
    // Merging into an empty rollup is the identity.
    expect(plain(mergeRollups(emptyRollup('example.com', MINUTE), a))).toEqual(plain(a));
  });

  it('keeps at most 100 named keys, the largest, and sums the rest under (other)', () => {
    const a = emptyRollup('example.com', MINUTE);
    const b = emptyRollup('example.com', MINUTE);
    for (let i = 0; i < 80; i++) a.breakdowns.referrers[`a${i}.example`] = 10;
    for (let i = 0; i < 80; i++) b.breakdowns.referrers[`b${i}.example`] = i < 30 ? 20 : 1;
    b.breakdowns.referrers[ROLLUP_OTHER_KEY] = 7;
    const m = mergeRollups(copy(a), b);
    const refs = m.breakdowns.referrers;
    const named = Object.keys(refs).filter((k) => k !== ROLLUP_OTHER_KEY);
    expect(named).toHaveLength(ROLLUP_MAX_KEYS);
    // The 30 keys of 20, then 70 of the 80 keys of 10 (by key); 10 of 10 and 50 of 1 fold into (other).
    for (let i = 0; i < 30; i++) expect(refs[`b${i}.example`]).toBe(20);
    expect(refs[ROLLUP_OTHER_KEY]).toBe(7 + 10 * 10 + 50);
    const total = (r: Record<string, number>) => Object.values(r).reduce((s, n) => s + n, 0);
    expect(total(refs)).toBe(total(a.breakdowns.referrers) + total(b.breakdowns.referrers));
    // The order of merging does not change which keys are kept.
    expect(plain(mergeRollups(copy(b), a))).toEqual(plain(m));
  });

  it('keeps at most 100 vitals paths and folds the rest into (other)', () => {
    const a = emptyRollup('example.com', MINUTE);
    const b = emptyRollup('example.com', MINUTE);
    const one = () => ({
      lcp: { good: 1, needs_improvement: 0, poor: 0 },
      cls: { good: 0, needs_improvement: 0, poor: 0 },
      inp: { good: 0, needs_improvement: 0, poor: 1 },
    });
    for (let i = 0; i < 70; i++) a.vitals[`/a${i}`] = one();
    for (let i = 0; i < 70; i++) b.vitals[`/b${i}`] = one();
    const m = mergeRollups(a, b);
    expect(Object.keys(m.vitals)).toHaveLength(ROLLUP_MAX_VITAL_PATHS + 1);
    expect(m.vitals[ROLLUP_OTHER_KEY]?.lcp.good).toBe(40);
    expect(m.vitals[ROLLUP_OTHER_KEY]?.inp.poor).toBe(40);
  });

  it('keeps a key named __proto__ as a key', () => {
    const a = emptyRollup('example.com', MINUTE);
    const b = structuredClone(emptyRollup('example.com', MINUTE));
    const key = '__proto__';
    a.breakdowns.utm_source[key] = 2;
    Object.defineProperty(b.breakdowns.utm_source, key, { value: 3, enumerable: true });
    const m = mergeRollups(a, b);
    expect(Object.entries(m.breakdowns.utm_source)).toEqual([['__proto__', 5]]);
  });

  it('refuses rollups of another domain or minute', () => {
    expect(() => mergeRollups(emptyRollup('a.example', MINUTE), emptyRollup('b.example', MINUTE))).toThrow(RangeError);
    expect(() => mergeRollups(emptyRollup('a.example', MINUTE), emptyRollup('a.example', MINUTE + 60_000))).toThrow(
      RangeError,
    );
  });
});
