import {
  emptyRollup,
  HyperLogLog,
  type MinuteRollup,
  ROLLUP_HLL_PRECISION,
  type RollupDimension,
} from '@proxyd/analytics';

/** What a generated minute holds. */
export interface MinuteSpec {
  /** Page views, spread over `pages` (default: all on `/`). */
  pageViews?: number;
  /** Requests besides page views (assets, beacons). */
  extraRequests?: number;
  bots?: number;
  bytes?: number;
  /** Visitor ids seen (each a distinct person that minute). */
  visitors?: readonly string[];
  /** Key → page views per dimension. */
  breakdowns?: Partial<Record<RollupDimension, Record<string, number>>>;
  /** Path → LCP good count (other counts zero) for a quick vitals row. */
  lcpGood?: Record<string, number>;
}

/** A rollup as the analytics would hand it over: counts, a visitor sketch, breakdowns. */
export function rollup(domain: string, minute: number, spec: MinuteSpec = {}): MinuteRollup {
  const r = emptyRollup(domain, minute);
  const views = spec.pageViews ?? 0;
  r.page_views = views;
  r.requests = views + (spec.extraRequests ?? 0) + (spec.bots ?? 0);
  r.bot_requests = spec.bots ?? 0;
  r.bytes_sent = spec.bytes ?? r.requests * 1000;
  r.status.s2xx = r.requests;
  const hll = new HyperLogLog(ROLLUP_HLL_PRECISION);
  for (const v of spec.visitors ?? []) hll.add(v);
  r.visitors = hll.exportRegisters();
  for (const [dim, keys] of Object.entries(spec.breakdowns ?? {})) {
    Object.assign(r.breakdowns[dim as RollupDimension], keys);
  }
  for (const [path, good] of Object.entries(spec.lcpGood ?? {})) {
    r.vitals[path] = {
      lcp: { good, needs_improvement: 0, poor: 0 },
      cls: { good: 0, needs_improvement: 0, poor: 0 },
      inp: { good: 0, needs_improvement: 0, poor: 0 },
    };
  }
  return r;
}

/** Minutes since the epoch, as ms. */
export const MINUTE = 60_000;
export const HOUR = 3_600_000;
export const DAY = 86_400_000;
/** 2026-11-20T00:00:00Z: a UTC midnight to build times from. */
export const T0 = Date.UTC(2026, 10, 20);
