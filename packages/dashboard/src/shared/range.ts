/**
 * Date ranges and intervals: the presets of the range picker, the interval a
 * range is drawn with, bucket alignment. Shared by the server (defaults,
 * limits) and the browser UI. Times are epoch ms; buckets are UTC-aligned
 * (a day bucket is a UTC day, as the history store keeps them).
 */
import { MAX_STATS_POINTS, STATS_INTERVAL_MS, statsBucketCount } from '@proxyd/model';
import type { Interval, Range } from '../source.js';

/** Width of one bucket of each interval, ms (the model's stats-query rule). */
export const INTERVAL_MS: Readonly<Record<Interval, number>> = STATS_INTERVAL_MS;

/** Most buckets one time series may have (more is a 400, as in the stats API: the model's rule). */
export const MAX_BUCKETS = MAX_STATS_POINTS;

/** What the history store keeps of each tier by default (the Proxyfile's `history` option can change it). */
export const DEFAULT_RETENTION_MS: Readonly<Record<'minute' | 'hour', number>> = {
  minute: 48 * 3_600_000,
  hour: 90 * 86_400_000,
};

/** The presets of the range picker. */
export const PRESETS = ['realtime', 'today', '24h', '7d', '30d', '90d', 'custom'] as const;

/** One of {@link PRESETS}. */
export type Preset = (typeof PRESETS)[number];

/** The label each preset shows. */
export const PRESET_LABELS: Readonly<Record<Preset, string>> = {
  realtime: 'Real time',
  today: 'Today',
  '24h': 'Last 24 hours',
  '7d': 'Last 7 days',
  '30d': 'Last 30 days',
  '90d': 'Last 90 days',
  custom: 'Custom range',
};

/** How far back the real-time view's minute chart reaches, ms. */
export const REALTIME_WINDOW_MS = 30 * 60_000;

/** The start of `t`'s bucket. */
export function floorTo(t: number, interval: Interval): number {
  const width = INTERVAL_MS[interval];
  return Math.floor(t / width) * width;
}

/** The end of `t`'s bucket, or `t` when it is a bucket boundary. */
export function ceilTo(t: number, interval: Interval): number {
  const width = INTERVAL_MS[interval];
  return Math.ceil(t / width) * width;
}

/** How many buckets of `interval` the range spans (partial buckets count): the model's `statsBucketCount`. */
export const bucketCount: (range: Range, interval: Interval) => number = statsBucketCount;

/**
 * The interval a range is drawn with: minutes for up to 6 hours, hours for
 * up to 8 days, days beyond, each only while the store still keeps that
 * tier for the range's start (`retention`, default {@link DEFAULT_RETENTION_MS}).
 */
export function intervalFor(range: Range, now: number, retention = DEFAULT_RETENTION_MS): Interval {
  const span = range.to - range.from;
  if (span <= 6 * 3_600_000 && range.from >= now - retention.minute) return 'minute';
  if (span <= 8 * 86_400_000 && range.from >= now - retention.hour) return 'hour';
  return 'day';
}

/** A range with the interval to draw it with, its ends on bucket boundaries. */
export interface Window extends Range {
  interval: Interval;
}

/** Aligns a range to `interval`'s buckets, keeping at most {@link MAX_BUCKETS} (the newest). */
export function aligned(range: Range, interval: Interval): Window {
  const to = ceilTo(range.to, interval);
  const from = Math.max(floorTo(range.from, interval), to - MAX_BUCKETS * INTERVAL_MS[interval]);
  return { from, to, interval };
}

/**
 * The window of a preset at `now`. `startOfToday` is the local midnight of
 * `now` (the browser's time zone; default: UTC midnight). `realtime` is the
 * last {@link REALTIME_WINDOW_MS} of complete minutes; the others include the
 * current bucket; `custom` needs its own range
 * ({@link customWindow}) and is not a preset window.
 */
export function presetWindow(
  preset: Exclude<Preset, 'custom'>,
  now: number,
  startOfToday: number = floorTo(now, 'day'),
): Window {
  const hour = INTERVAL_MS.hour;
  const day = INTERVAL_MS.day;
  switch (preset) {
    case 'realtime':
      // Complete minutes only: the current one is not in history until it ends.
      return aligned({ from: floorTo(now, 'minute') - REALTIME_WINDOW_MS, to: floorTo(now, 'minute') }, 'minute');
    case 'today':
      return aligned({ from: startOfToday, to: now + 1 }, 'hour');
    case '24h':
      return aligned({ from: floorTo(now, 'hour') - 23 * hour, to: now + 1 }, 'hour');
    case '7d':
      return aligned({ from: floorTo(now, 'hour') - (7 * 24 - 1) * hour, to: now + 1 }, 'hour');
    case '30d':
      return aligned({ from: floorTo(now, 'day') - 29 * day, to: now + 1 }, 'day');
    case '90d':
      return aligned({ from: floorTo(now, 'day') - 89 * day, to: now + 1 }, 'day');
  }
}

/** The window of a custom range (its ends as given, e.g. local midnights), with its interval by {@link intervalFor}. */
export function customWindow(range: Range, now: number, retention = DEFAULT_RETENTION_MS): Window {
  const from = Math.min(range.from, range.to);
  const to = Math.max(range.from, range.to);
  return aligned({ from, to }, intervalFor({ from, to }, now, retention));
}
