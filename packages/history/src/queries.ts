import type { Piece, planRange, Range } from './buckets.js';
import { HistoryError } from './errors.js';
import type { VitalTotals } from './types.js';

/** Throws `HISTORY_BAD_RANGE` unless `range` is whole epoch ms with `from` before `to`. */
export function checkRange(range: Range): void {
  const { from, to } = range;
  if (!Number.isSafeInteger(from) || !Number.isSafeInteger(to) || from >= to) {
    throw new HistoryError('HISTORY_BAD_RANGE', `from ${from} must be before to ${to} (epoch ms)`);
  }
}

/** The pieces of a plan in time order, consecutive whole days as one day piece. */
export function mergeWholeDays(slices: ReturnType<typeof planRange>): Piece[] {
  const out: Piece[] = [];
  for (const slice of slices) {
    for (const p of slice.pieces) {
      const last = out.at(-1);
      if (last !== undefined && last.interval === p.interval && last.to >= p.from) last.to = Math.max(last.to, p.to);
      else out.push({ ...p });
    }
  }
  return out;
}

/** The `limit` entries with the largest weight, descending, ties by key. */
export function top<T>(entries: Map<string, T>, limit: number, weight: (v: T) => number): Array<[string, T]> {
  return [...entries]
    .map(([key, v]) => ({ key, v, w: weight(v) }))
    .filter((e) => e.w > 0)
    .sort((a, b) => b.w - a.w || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    .slice(0, Math.max(0, limit))
    .map((e) => [e.key, e.v]);
}

/** One metric's totals from a page's {@link VITAL_COLUMNS} sums, starting at `at`. */
export function vital(sums: number[], at: number): VitalTotals {
  const good = sums[at] as number;
  const needs_improvement = sums[at + 1] as number;
  const poor = sums[at + 2] as number;
  return { good, needs_improvement, poor, samples: good + needs_improvement + poor };
}
