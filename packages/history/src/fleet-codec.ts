import {
  emptyRollup,
  type MinuteRollup,
  type PageVitals,
  ROLLUP_DIMENSIONS,
  type RollupDimension,
  type VitalCounts,
} from '@proxyd/analytics';

/** Packed register bytes of a rollup's visitor sketch (precision 10). */
const REGISTER_BYTES = emptyRollup('x', 0).visitors.length;
const STATUS_KEYS = ['s1xx', 's2xx', 's3xx', 's4xx', 's5xx', 'other'] as const;
const COUNT_KEYS = ['requests', 'page_views', 'bot_requests', 'bytes_sent'] as const;
const VITALS = ['lcp', 'cls', 'inp'] as const;
const RATINGS = ['good', 'needs_improvement', 'poor'] as const;

/**
 * One node's rollups as JSON text for the fleet (`storage redis`): the
 * rollups as they are, the visitor sketch as base64 of its packed registers.
 */
export function encodeFleetBatch(rollups: readonly MinuteRollup[]): string {
  return JSON.stringify(rollups.map((r) => ({ ...r, visitors: Buffer.from(r.visitors).toString('base64') })));
}

/**
 * The rollups of {@link encodeFleetBatch}'s text, checked: what another
 * node wrote is input from outside, so anything that is not a well-formed
 * rollup (a count that is not a whole number ≥ 0, a minute off the minute,
 * a sketch of the wrong size…) throws a RangeError naming it, and nothing
 * of the batch is written.
 */
export function decodeFleetBatch(text: string): MinuteRollup[] {
  const parsed: unknown = JSON.parse(text);
  if (!Array.isArray(parsed)) throw new RangeError('a fleet batch is a JSON array of rollups');
  return parsed.map((item, i) => decodeRollup(item, `rollup ${i}`));
}

function decodeRollup(item: unknown, at: string): MinuteRollup {
  const o = record(item, at);
  const domain = o.domain;
  const minute = o.minute;
  if (typeof domain !== 'string' || domain === '' || domain.length > 253 || domain !== domain.toLowerCase())
    throw new RangeError(`${at}: domain is not a lowercase host`);
  if (!Number.isSafeInteger(minute) || (minute as number) % 60_000 !== 0)
    throw new RangeError(`${at}: minute is not the start of a minute`);
  const rollup = emptyRollup(domain, minute as number);
  for (const key of COUNT_KEYS) rollup[key] = count(o[key], `${at}.${key}`);
  const status = record(o.status, `${at}.status`);
  for (const key of STATUS_KEYS) rollup.status[key] = count(status[key], `${at}.status.${key}`);
  const visitors = typeof o.visitors === 'string' ? Buffer.from(o.visitors, 'base64') : null;
  if (visitors === null || visitors.length !== REGISTER_BYTES)
    throw new RangeError(`${at}: visitors is not a sketch of ${REGISTER_BYTES} bytes`);
  rollup.visitors = new Uint8Array(visitors);
  const breakdowns = record(o.breakdowns, `${at}.breakdowns`);
  for (const d of ROLLUP_DIMENSIONS) {
    if (breakdowns[d] === undefined) continue;
    const keys = record(breakdowns[d], `${at}.breakdowns.${d}`);
    const out = rollup.breakdowns[d as RollupDimension];
    for (const key of Object.keys(keys)) out[key] = count(keys[key], `${at}.breakdowns.${d}`);
  }
  const vitals = record(o.vitals, `${at}.vitals`);
  for (const path of Object.keys(vitals)) {
    const page = record(vitals[path], `${at}.vitals`);
    const out = {} as PageVitals;
    for (const metric of VITALS) {
      const counts = record(page[metric], `${at}.vitals.${metric}`);
      const c = {} as VitalCounts;
      for (const rating of RATINGS) c[rating] = count(counts[rating], `${at}.vitals.${metric}.${rating}`);
      out[metric] = c;
    }
    rollup.vitals[path] = out;
  }
  return rollup;
}

function record(v: unknown, at: string): Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new RangeError(`${at} is not an object`);
  return v as Record<string, unknown>;
}

function count(v: unknown, at: string): number {
  if (!Number.isSafeInteger(v) || (v as number) < 0) throw new RangeError(`${at} is not a whole number ≥ 0`);
  return v as number;
}
