import type { StatsDimension } from '@proxyd/model';
import { STATS_DIMENSIONS } from '@proxyd/model/rules';
import { HyperLogLog } from './hyperloglog.js';

/**
 * Good / needs-improvement / poor counts of one Web Vital (spec §2.4
 * thresholds: LCP ≤2500 / >4000 ms, CLS ≤0.1 / >0.25, INP ≤200 / >500 ms;
 * see {@link rateVital}). Their sum is the metric's sample count.
 */
export interface VitalCounts {
  good: number;
  needs_improvement: number;
  poor: number;
}

/** Dimensions a breakdown is kept for (README, "Rollups"): the model's stats dimensions, one list for both. */
export const ROLLUP_DIMENSIONS = STATS_DIMENSIONS;
/** One of {@link ROLLUP_DIMENSIONS}. */
export type RollupDimension = StatsDimension;

/** HyperLogLog precision of {@link MinuteRollup.visitors}: 2^10 registers, 641 bytes packed, standard error ≈ 3.25 %. */
export const ROLLUP_HLL_PRECISION = 10;
/** Named keys per dimension per rollup at most; further keys are summed under {@link ROLLUP_OTHER_KEY}. */
export const ROLLUP_MAX_KEYS = 100;
/** Page paths with Web Vitals per rollup at most; further paths are summed under {@link ROLLUP_OTHER_KEY}. */
export const ROLLUP_MAX_VITAL_PATHS = 100;
/** The key the counts past a bound are summed under (a breakdown key or a vitals path). */
export const ROLLUP_OTHER_KEY = '(other)';

/** The Web Vitals of one page path: counts per metric. */
export interface PageVitals {
  lcp: VitalCounts;
  cls: VitalCounts;
  inp: VitalCounts;
}

/** Requests by status class. */
export interface StatusCounts {
  s1xx: number;
  s2xx: number;
  s3xx: number;
  s4xx: number;
  s5xx: number;
  other: number;
}

/**
 * What one domain did in one UTC minute, in one process. Mergeable
 * ({@link mergeRollups}: counts summed, HyperLogLog registers by max) and
 * plain data: structured-clone safe, so it crosses IPC from the workers.
 */
export interface MinuteRollup {
  /** Lowercase host. */
  domain: string;
  /** Epoch ms of the UTC minute's start (a multiple of 60,000). */
  minute: number;
  /** Every request the domain served: assets, beacons and bots included (the snapshot's rule, README). */
  requests: number;
  /** Page views by humans (README, "The page-view rule"). */
  page_views: number;
  /** Requests whose user agent the bot list (`isbot`) recognises. */
  bot_requests: number;
  /** Body bytes sent, every request. */
  bytes_sent: number;
  /** Every request by status class. */
  status: StatusCounts;
  /**
   * Packed HyperLogLog registers (precision {@link ROLLUP_HLL_PRECISION}) of
   * hash(daily salt, client IP, user agent) over page views. Estimate with
   * `HyperLogLog.merge([visitors], ROLLUP_HLL_PRECISION).estimate()`.
   */
  visitors: Uint8Array;
  /** Key → page views in this minute, at most {@link ROLLUP_MAX_KEYS} keys per dimension plus {@link ROLLUP_OTHER_KEY}. */
  breakdowns: Record<RollupDimension, Record<string, number>>;
  /** Page path → Web Vitals counts, at most {@link ROLLUP_MAX_VITAL_PATHS} paths plus {@link ROLLUP_OTHER_KEY}. */
  vitals: Record<string, PageVitals>;
}

/** A Web Vitals metric of a rollup. */
export type RollupVital = keyof PageVitals;

/** The spec's §2.4 thresholds per metric: good at or below the first, poor above the second (ms; CLS a score). */
export const VITAL_THRESHOLDS: Readonly<Record<RollupVital, readonly [good: number, poor: number]>> = Object.freeze({
  lcp: [2500, 4000],
  cls: [0.1, 0.25],
  inp: [200, 500],
});

/** The rating of one observation: `good` at or below the good threshold, `poor` above the poor one. */
export function rateVital(metric: RollupVital, value: number): keyof VitalCounts {
  const [good, poor] = VITAL_THRESHOLDS[metric];
  if (value <= good) return 'good';
  return value > poor ? 'poor' : 'needs_improvement';
}

/** Packed register bytes of a {@link ROLLUP_HLL_PRECISION} HyperLogLog. */
const REGISTER_BYTES = new HyperLogLog(ROLLUP_HLL_PRECISION).bytes;

/** A rollup with every count at zero and every breakdown empty. */
export function emptyRollup(domain: string, minute: number): MinuteRollup {
  const breakdowns = {} as Record<RollupDimension, Record<string, number>>;
  for (const d of ROLLUP_DIMENSIONS) breakdowns[d] = Object.create(null);
  return {
    domain,
    minute,
    requests: 0,
    page_views: 0,
    bot_requests: 0,
    bytes_sent: 0,
    status: { s1xx: 0, s2xx: 0, s3xx: 0, s4xx: 0, s5xx: 0, other: 0 },
    visitors: new Uint8Array(REGISTER_BYTES),
    breakdowns,
    vitals: Object.create(null),
  };
}

/** Zero counts of one metric. */
export function emptyVitalCounts(): VitalCounts {
  return { good: 0, needs_improvement: 0, poor: 0 };
}

/** Zero counts of one page. */
export function emptyPageVitals(): PageVitals {
  return { lcp: emptyVitalCounts(), cls: emptyVitalCounts(), inp: emptyVitalCounts() };
}

/**
 * Adds `from` into `into` (same domain and minute, else a RangeError) and
 * returns `into`: counts summed, visitors by register max, breakdowns and
 * vitals summed per key. When a union has more than {@link ROLLUP_MAX_KEYS}
 * named keys (or {@link ROLLUP_MAX_VITAL_PATHS} paths), the largest are kept
 * (ties by key, so the result does not depend on the order of merging) and
 * the rest are added to {@link ROLLUP_OTHER_KEY}: totals are always exact;
 * which keys are named is exact while no union passes the bound. `from` is
 * not changed.
 */
export function mergeRollups(into: MinuteRollup, from: MinuteRollup): MinuteRollup {
  if (into.domain !== from.domain || into.minute !== from.minute) {
    throw new RangeError(`cannot merge ${from.domain}@${from.minute} into ${into.domain}@${into.minute}`);
  }
  into.requests += from.requests;
  into.page_views += from.page_views;
  into.bot_requests += from.bot_requests;
  into.bytes_sent += from.bytes_sent;
  const s = into.status;
  const f = from.status;
  s.s1xx += f.s1xx;
  s.s2xx += f.s2xx;
  s.s3xx += f.s3xx;
  s.s4xx += f.s4xx;
  s.s5xx += f.s5xx;
  s.other += f.other;
  into.visitors = HyperLogLog.merge([into.visitors, from.visitors], ROLLUP_HLL_PRECISION).exportRegisters();
  for (const d of ROLLUP_DIMENSIONS) {
    into.breakdowns[d] = mergeRecords(into.breakdowns[d], from.breakdowns[d], ROLLUP_MAX_KEYS, sum, same, same);
  }
  into.vitals = mergeRecords(
    into.vitals,
    from.vitals,
    ROLLUP_MAX_VITAL_PATHS,
    addPageVitals,
    clonePageVitals,
    pageSamples,
  );
  return into;
}

/** A copy of one page's counts. */
function clonePageVitals(v: PageVitals): PageVitals {
  return { lcp: { ...v.lcp }, cls: { ...v.cls }, inp: { ...v.inp } };
}

/** Adds `from`'s counts into `into`; returns `into`. */
export function addPageVitals(into: PageVitals, from: PageVitals): PageVitals {
  for (const m of ['lcp', 'cls', 'inp'] as const) {
    into[m].good += from[m].good;
    into[m].needs_improvement += from[m].needs_improvement;
    into[m].poor += from[m].poor;
  }
  return into;
}

/** Every sample of one page, all metrics. */
function pageSamples(v: PageVitals): number {
  return (
    v.lcp.good +
    v.lcp.needs_improvement +
    v.lcp.poor +
    v.cls.good +
    v.cls.needs_improvement +
    v.cls.poor +
    v.inp.good +
    v.inp.needs_improvement +
    v.inp.poor
  );
}

const sum = (a: number, b: number): number => a + b;
const same = (n: number): number => n;

/**
 * A new null-prototype record (a key such as `__proto__` stays a key) of the
 * union of `a` and `b`, values added with `add` (which may change its first
 * argument, always a copy made by `clone` or a value of `a`); past `max`
 * named keys, the largest by `weight` (ties by key) and the rest added into
 * {@link ROLLUP_OTHER_KEY}.
 */
function mergeRecords<T>(
  a: Record<string, T>,
  b: Record<string, T>,
  max: number,
  add: (into: T, from: T) => T,
  clone: (v: T) => T,
  weight: (v: T) => number,
): Record<string, T> {
  const union = new Map<string, T>();
  for (const key of Object.keys(a)) union.set(key, a[key] as T);
  for (const key of Object.keys(b)) {
    const v = b[key] as T;
    const had = union.get(key);
    union.set(key, had === undefined ? clone(v) : add(had, v));
  }
  const out = Object.create(null) as Record<string, T>;
  let other = union.get(ROLLUP_OTHER_KEY);
  union.delete(ROLLUP_OTHER_KEY);
  if (union.size <= max) for (const [key, v] of union) out[key] = v;
  else {
    const named = [...union.keys()].sort(
      (x, y) => weight(union.get(y) as T) - weight(union.get(x) as T) || (x < y ? -1 : x > y ? 1 : 0),
    );
    for (let i = 0; i < named.length; i++) {
      const v = union.get(named[i] as string) as T;
      if (i < max) out[named[i] as string] = v;
      else other = other === undefined ? clone(v) : add(other, v);
    }
  }
  if (other !== undefined) out[ROLLUP_OTHER_KEY] = other;
  return out;
}
