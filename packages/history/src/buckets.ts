/** A bucket size of the stats: a tier of the database and a time-series interval. */
export type Interval = 'minute' | 'hour' | 'day';
/** Every interval, finest first. */
export const INTERVALS: readonly Interval[] = ['minute', 'hour', 'day'];
/** A bucket's length, ms (UTC: a day is always 86,400,000 ms). */
export const INTERVAL_MS: Readonly<Record<Interval, number>> = Object.freeze({
  minute: 60_000,
  hour: 3_600_000,
  day: 86_400_000,
});
/** The tier number a bucket size is stored under (`tier` column). */
export const TIER: Readonly<Record<Interval, number>> = Object.freeze({ minute: 0, hour: 1, day: 2 });

/** A time range, epoch ms, `[from, to)`. */
export interface Range {
  from: number;
  to: number;
}

/** The start of the bucket of `interval` that holds `t`. */
export function bucketOf(t: number, interval: Interval): number {
  const ms = INTERVAL_MS[interval];
  return Math.floor(t / ms) * ms;
}

/** `t` rounded up to a bucket boundary of `interval`. */
export function ceilTo(t: number, interval: Interval): number {
  const ms = INTERVAL_MS[interval];
  return Math.ceil(t / ms) * ms;
}

/** Rows of one tier summed over `[from, to)` (bucket starts). */
export interface Piece {
  interval: Interval;
  from: number;
  to: number;
}

/** The pieces of one UTC day of a range. */
export interface DaySlice {
  /** The day's start. */
  day: number;
  /** The whole day is in the range: its day row answers. */
  whole: boolean;
  pieces: Piece[];
}

/**
 * How a range is read: the range widened to whole minutes, cut at UTC
 * midnights; a whole day is its day row; a part of a day is its whole
 * hours' rows and its other minutes' rows. Rows a tier no longer keeps
 * (`oldest[interval]`: the oldest bucket start the tier still holds) are
 * replaced by the coarser bucket that holds them, so an old range is
 * answered at the resolution kept for it (a range that starts 10:05 five
 * days ago counts from 10:00, once minutes of five days ago are gone).
 */
export function planRange(range: Range, oldest: Readonly<Record<'minute' | 'hour', number>>): DaySlice[] {
  const from = bucketOf(range.from, 'minute');
  const to = ceilTo(range.to, 'minute');
  const slices: DaySlice[] = [];
  for (let day = bucketOf(from, 'day'); day < to; day += INTERVAL_MS.day) {
    const a = Math.max(from, day);
    const b = Math.min(to, day + INTERVAL_MS.day);
    if (a === day && b === day + INTERVAL_MS.day) {
      slices.push({ day, whole: true, pieces: [{ interval: 'day', from: day, to: b }] });
      continue;
    }
    const pieces: Piece[] = [];
    const h1 = ceilTo(a, 'hour');
    const h2 = bucketOf(b, 'hour');
    if (h1 < h2) {
      if (a < h1) pieces.push({ interval: 'minute', from: a, to: h1 });
      pieces.push({ interval: 'hour', from: h1, to: h2 });
      if (h2 < b) pieces.push({ interval: 'minute', from: h2, to: b });
    } else {
      pieces.push({ interval: 'minute', from: a, to: b });
    }
    const kept = coarsen(pieces, oldest);
    const whole = kept.length === 1 && kept[0]?.interval === 'day';
    slices.push({ day, whole, pieces: kept });
  }
  return slices;
}

/** Replaces pieces older than their tier keeps by the coarser buckets that hold them; merges overlaps. */
function coarsen(pieces: Piece[], oldest: Readonly<Record<'minute' | 'hour', number>>): Piece[] {
  let out = pieces;
  for (const [fine, coarse] of [
    ['minute', 'hour'],
    ['hour', 'day'],
  ] as const) {
    const next: Piece[] = [];
    for (const p of out) {
      if (p.interval === fine && p.from < oldest[fine]) {
        next.push({ interval: coarse, from: bucketOf(p.from, coarse), to: ceilTo(p.to, coarse) });
      } else next.push(p);
    }
    out = mergePieces(next);
  }
  return out;
}

/** Pieces of the same tier that overlap or touch, as one; the rest as they are, in time order. */
function mergePieces(pieces: Piece[]): Piece[] {
  const sorted = [...pieces].sort((x, y) => x.from - y.from || x.to - y.to);
  const out: Piece[] = [];
  for (const p of sorted) {
    const same = out.findLast((q) => q.interval === p.interval);
    if (same !== undefined && p.from <= same.to) {
      same.to = Math.max(same.to, p.to);
      continue;
    }
    out.push({ ...p });
  }
  // A coarse piece swallows the finer pieces it covers.
  return out.filter(
    (p) =>
      !out.some(
        (q) => q !== p && INTERVAL_MS[q.interval] > INTERVAL_MS[p.interval] && q.from <= p.from && p.to <= q.to,
      ),
  );
}
