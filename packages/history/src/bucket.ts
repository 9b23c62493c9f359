import { type MinuteRollup, type PageVitals, ROLLUP_DIMENSIONS } from '@proxyd/analytics';
import { DIMENSION_IDS } from './schema.js';

/** One bucket of one tier, as a flush adds to it. */
export interface Bucket {
  id: number;
  tier: number;
  t: number;
  /** {@link COUNTS} then {@link STATUS}. */
  counts: number[];
  registers: Uint8Array;
  breakdowns: Map<number, Map<string, number>>;
  /** Path → {@link VITAL_COLUMNS}. */
  vitals: Map<string, number[]>;
}

/** Adds one minute rollup into a bucket: counts, breakdown keys, vitals. */
export function addRollup(b: Bucket, r: MinuteRollup): void {
  const c = b.counts;
  const s = r.status;
  const values = [
    r.requests,
    r.page_views,
    r.bot_requests,
    r.bytes_sent,
    s.s1xx,
    s.s2xx,
    s.s3xx,
    s.s4xx,
    s.s5xx,
    s.other,
  ];
  for (let i = 0; i < values.length; i++) c[i] = (c[i] as number) + (values[i] as number);
  for (const dimension of ROLLUP_DIMENSIONS) {
    const dim = DIMENSION_IDS[dimension];
    const keys = r.breakdowns[dimension];
    if (dim === undefined || keys === undefined) continue;
    let into = b.breakdowns.get(dim);
    for (const key of Object.keys(keys)) {
      const n = keys[key] as number;
      if (!(n > 0)) continue;
      if (into === undefined) {
        into = new Map();
        b.breakdowns.set(dim, into);
      }
      into.set(key, (into.get(key) ?? 0) + n);
    }
  }
  for (const path of Object.keys(r.vitals)) {
    const v = r.vitals[path] as PageVitals;
    const add = [
      v.lcp.good,
      v.lcp.needs_improvement,
      v.lcp.poor,
      v.cls.good,
      v.cls.needs_improvement,
      v.cls.poor,
      v.inp.good,
      v.inp.needs_improvement,
      v.inp.poor,
    ];
    const had = b.vitals.get(path);
    if (had === undefined) b.vitals.set(path, add);
    else for (let i = 0; i < add.length; i++) had[i] = (had[i] as number) + (add[i] as number);
  }
}
