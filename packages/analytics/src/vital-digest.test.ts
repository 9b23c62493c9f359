import { afterEach, describe, expect, it, vi } from 'vitest';
import { PENDING_LIMIT, VitalDigest } from './vital-digest.js';

function lognormal(rand: () => number, median: number, sigma: number): number {
  const u1 = rand() || 1e-12;
  const u2 = rand();
  const z = Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
  return median * Math.exp(sigma * z);
}

function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1_664_525) + 1_013_904_223) >>> 0;
    return s / 2 ** 32;
  };
}

function exact(sorted: number[], q: number): number {
  const pos = q * (sorted.length - 1);
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return (sorted[lo] as number) + ((sorted[hi] as number) - (sorted[lo] as number)) * (pos - lo);
}

describe('VitalDigest', () => {
  const cases = [
    { name: 'LCP (ms, log-normal, median 2000)', median: 2000, sigma: 0.6 },
    { name: 'CLS (score, log-normal, median 0.05)', median: 0.05, sigma: 1.0 },
    { name: 'INP (ms, log-normal, median 150)', median: 150, sigma: 0.8 },
  ];
  afterEach(() => {
    vi.restoreAllMocks();
  });

  for (const c of cases) {
    it(`${c.name}: p50/p75/p95/p99 within 5 % of exact over 100,000 samples`, () => {
      const rand = seeded(7);
      // tdigest shuffles centroids with Math.random at each compress: seeded here so the run is
      // repeatable. Unseeded, 60 runs of the CLS case gave at worst 2.4 % at p99; one CI run, 6.3 %.
      const shuffle = seeded(11);
      vi.spyOn(Math, 'random').mockImplementation(shuffle);
      const d = new VitalDigest();
      const values: number[] = [];
      for (let i = 0; i < 100_000; i++) {
        const v = lognormal(rand, c.median, c.sigma);
        values.push(v);
        d.observe(v);
      }
      d.flush();
      values.sort((a, b) => a - b);
      const p = d.percentiles();
      for (const [key, q] of [
        ['p50', 0.5],
        ['p75', 0.75],
        ['p95', 0.95],
        ['p99', 0.99],
      ] as const) {
        const want = exact(values, q);
        expect(Math.abs(p[key] - want) / want, `${key}: ${p[key]} vs ${want}`).toBeLessThan(0.05);
      }
    });
  }

  it('percentiles are 0.0 until flushed; reads never flush; the buffer flushes at 100', () => {
    const d = new VitalDigest();
    expect(d.percentiles()).toEqual({ p50: 0, p75: 0, p95: 0, p99: 0 });
    for (let i = 1; i < PENDING_LIMIT; i++) d.observe(1000);
    expect(d.percentiles().p50).toBe(0);
    expect(d.pending).toBe(99);
    expect(d.percentiles().p50).toBe(0);
    d.observe(1000);
    expect(d.pending).toBe(0);
    expect(d.flushed).toBe(100);
    expect(d.percentiles().p50).toBeCloseTo(1000);
    // Lag: 50 new observations stay invisible until the cycle flushes them.
    for (let i = 0; i < 50; i++) d.observe(5000);
    expect(d.percentiles().p99).toBeCloseTo(1000);
    d.flush();
    expect(d.percentiles().p99).toBeGreaterThan(4000);
  });

  it('mergedPercentiles: one flushed digest gives exactly its own percentiles', () => {
    vi.spyOn(Math, 'random').mockImplementation(seeded(11));
    const rand = seeded(3);
    const d = new VitalDigest();
    for (let i = 0; i < 20_000; i++) d.observe(lognormal(rand, 2000, 0.6));
    d.flush();
    expect(VitalDigest.mergedPercentiles([d.exportState()])).toEqual(d.percentiles());
  });

  it('mergedPercentiles: 3 digests and their pending buffers (100,000 LCP samples split) within 5 % of exact', () => {
    vi.spyOn(Math, 'random').mockImplementation(seeded(11));
    const rand = seeded(17);
    const parts = [new VitalDigest(), new VitalDigest(), new VitalDigest()];
    const values: number[] = [];
    for (let i = 0; i < 100_000; i++) {
      const v = lognormal(rand, 2000, 0.6);
      values.push(v);
      parts[Math.floor(rand() * 3)]?.observe(v);
    }
    expect(parts.some((p) => p.pending > 0)).toBe(true);
    const merged = VitalDigest.mergedPercentiles(parts.map((p) => p.exportState()));
    values.sort((a, b) => a - b);
    for (const [key, q] of [
      ['p50', 0.5],
      ['p75', 0.75],
      ['p95', 0.95],
      ['p99', 0.99],
    ] as const) {
      const want = exact(values, q);
      expect(Math.abs(merged[key] - want) / want, `${key}: ${merged[key]} vs ${want}`).toBeLessThan(0.05);
    }
  });

  it('mergedPercentiles: pending observations count with weight 1; nothing observed is all 0.0', () => {
    const a = new VitalDigest();
    const b = new VitalDigest();
    expect(VitalDigest.mergedPercentiles([a.exportState(), b.exportState()])).toEqual({
      p50: 0,
      p75: 0,
      p95: 0,
      p99: 0,
    });
    expect(VitalDigest.mergedPercentiles([])).toEqual({ p50: 0, p75: 0, p95: 0, p99: 0 });
    for (const v of [10, 20, 30]) a.observe(v);
    b.observe(40);
    // Four points of weight 1, centred at 0.5, 1.5, 2.5, 3.5: p50 at 2 lies half way between 20 and 30.
    expect(a.percentiles().p50).toBe(0);
    const p = VitalDigest.mergedPercentiles([a.exportState(), b.exportState()]);
    expect(p.p50).toBe(25);
    expect(p.p99).toBe(40);
    expect(a.pending).toBe(3);
  });
});
