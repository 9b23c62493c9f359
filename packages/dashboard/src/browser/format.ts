import { VITAL_THRESHOLDS, type VitalMetric } from '../shared/vitals.js';
import type { Interval } from '../source.js';

const whole = new Intl.NumberFormat(undefined, { maximumFractionDigits: 0 });
const compact = new Intl.NumberFormat(undefined, { notation: 'compact', maximumFractionDigits: 1 });
const percent = new Intl.NumberFormat(undefined, { style: 'percent', maximumFractionDigits: 0 });

/** A count: exact up to 9,999, then compact (12.3K). */
export function count(n: number): string {
  return Math.abs(n) < 10_000 ? whole.format(n) : compact.format(n);
}

/** A share 0–1 as a percentage. */
export function share(n: number): string {
  return percent.format(n);
}

/** Bytes in B, kB, MB, GB, TB (powers of 1000). */
export function bytes(n: number): string {
  const units = ['B', 'kB', 'MB', 'GB', 'TB'];
  let value = n;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return `${value >= 100 || unit === 0 ? Math.round(value) : value.toFixed(1)} ${units[unit]}`;
}

/** A Web Vital value with its unit: `1.84 s`, `320 ms`, `0.07`. */
export function vital(metric: VitalMetric, value: number): string {
  if (VITAL_THRESHOLDS[metric].unit === '') return value.toFixed(2);
  return value >= 1000 ? `${(value / 1000).toFixed(2)} s` : `${Math.round(value)} ms`;
}

let regions: Intl.DisplayNames | null | undefined;

/** A country's name in the reader's language (from the browser, no request), else its code. */
export function countryName(code: string): string {
  if (!/^[A-Z]{2}$/.test(code)) return code === '' ? 'Unknown' : code;
  if (regions === undefined) {
    try {
      regions = new Intl.DisplayNames(undefined, { type: 'region' });
    } catch {
      regions = null;
    }
  }
  try {
    return regions?.of(code) ?? code;
  } catch {
    return code;
  }
}

/** A bucket start as the chart's tooltips and titles show it. */
export function bucketLabel(t: number, interval: Interval): string {
  const date = new Date(t);
  if (interval === 'day') return date.toLocaleDateString(undefined, { timeZone: 'UTC', dateStyle: 'medium' });
  return date.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
}

/** A time of day: `14:03:10`. */
export function clock(t: number): string {
  return new Date(t).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' });
}

/** `YYYY-MM-DD` of a local date (for `<input type="date">`). */
export function isoDate(t: number): string {
  const d = new Date(t);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
}

/** Local midnight of a `YYYY-MM-DD`, epoch ms; NaN when it is not one. */
export function localMidnight(value: string): number {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (m === null) return Number.NaN;
  return new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3])).getTime();
}
