import { randomBytes } from 'node:crypto';
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { type MinuteRollup, mergeRollups, ROLLUP_OTHER_KEY, type RollupDimension } from '@proxyd/analytics';
import { addRollup, type Bucket } from './bucket.js';
import { bucketOf, INTERVAL_MS, INTERVALS, type Interval, planRange, type Range, TIER } from './buckets.js';
import { HistoryError } from './errors.js';
import { checkRange, mergeWholeDays, top, vital } from './queries.js';
import { DIMENSION_IDS } from './schema.js';
import { decodeSketchInto, encodeSketch, estimateRegisters, REGISTERS, unpackRegisters } from './sketch.js';
import { COUNTS, num, prepareStatements, type Row, STATUS, VITAL_COLUMNS } from './statements.js';
import type {
  BreakdownItem,
  PageVitalsItem,
  Retention,
  SeriesPoint,
  StatusTotals,
  Totals,
  WriteResult,
} from './types.js';

/** Buckets a time series answers at most; a longer one is `HISTORY_TOO_MANY_POINTS` (a coarser interval answers). */
export const MAX_POINTS = 1500;
/** Keys per (hour bucket, dimension) kept once the hour is over; the rest are summed under `(other)`. Same for vitals paths. */
export const HOUR_KEYS = 100;
/** Keys per (day bucket, dimension) kept once the day is over; the rest are summed under `(other)`. Same for vitals paths. */
export const DAY_KEYS = 500;
/** Keys per (day bucket, dimension) left in days older than the hour tier when the size bound trims the long tail. */
export const TAIL_KEYS = 50;
/** Default retention: 48 h of minutes, 90 days of hours, days until the size bound trims them. */
export const DEFAULT_RETENTION: Readonly<Retention> = Object.freeze({
  minute: 48 * INTERVAL_MS.hour,
  hour: 90 * INTERVAL_MS.day,
  day: null,
});
/** Default size bound of the database file, bytes. */
export const DEFAULT_MAX_BYTES = 256_000_000;
/** Trimming starts above this share of the bound… */
const HIGH_WATER = 0.9;
/** …and stops below this one, so that it runs seldom. */
const LOW_WATER = 0.75;
/** A bucket is compacted once it ended this long ago (a worker's rollups arrive a minute or so late). */
const FOLD_DELAY_MS = 5 * INTERVAL_MS.minute;
/** How long the id of a fleet batch written here is remembered, ms: longer than a batch stays in Redis. */
export const FLEET_MARK_MS = 25 * INTERVAL_MS.hour;
/** Visitor salt bytes (one per UTC day). */
export const SALT_BYTES = 32;

/** What {@link HistoryStore} is built with (see `openHistory`). */
export interface StoreOptions {
  retention: Retention;
  maxBytes: number;
  now: () => number;
}

/**
 * The history of every domain in one SQLite database: `write` once a
 * minute, queries any time. Synchronous (node:sqlite): each call holds the
 * thread it runs on for its duration, so the daemon calls it on the control
 * plane, never in a process that serves traffic (see the README's numbers).
 */
export class HistoryStore {
  readonly file: string;
  readonly #db: DatabaseSync;
  readonly #retention: Retention;
  readonly #maxBytes: number;
  readonly #now: () => number;
  readonly #ids = new Map<string, number>();
  readonly #s: Record<string, StatementSync>;
  #closed = false;

  constructor(db: DatabaseSync, file: string, options: StoreOptions) {
    this.#db = db;
    this.file = file;
    this.#retention = { ...options.retention };
    this.#maxBytes = options.maxBytes;
    this.#now = options.now;
    this.#s = prepareStatements(db);
  }

  /** The retention in force, ms per tier. */
  get retention(): Readonly<Retention> {
    return this.#retention;
  }

  /** The size bound, bytes. */
  get maxBytes(): number {
    return this.#maxBytes;
  }

  /**
   * Writes one flush in one transaction: each rollup (those of the same
   * domain and minute merged first; `mergeRollups` may change the rollups
   * given) as its minute row, added into its hour and day rows (counts
   * summed, visitor sketches by register max). Then, in the same
   * transaction, rows past their tier's retention are deleted and the
   * finished hours' and days' breakdowns compacted to their top
   * {@link HOUR_KEYS} / {@link DAY_KEYS} keys. Then, if the file is over 90 %
   * of its bound, old data is trimmed (see `#trim`) to 75 %.
   *
   * `batches`: the ids of the fleet batches (`storage redis`) these rollups
   * are, marked written in the same transaction, so that a batch is written
   * once whatever repeats or restarts ({@link hasBatch}); marks are kept
   * {@link FLEET_MARK_MS}.
   */
  write(rollups: readonly MinuteRollup[], now = this.#now(), batches: readonly string[] = []): WriteResult {
    this.#open();
    const started = performance.now();
    const merged = new Map<string, MinuteRollup>();
    for (const r of rollups) {
      const key = `${r.minute} ${r.domain}`;
      const had = merged.get(key);
      if (had === undefined) merged.set(key, r);
      else mergeRollups(had, r);
    }
    let deleted = 0;
    this.#transaction(() => {
      this.#writeBuckets(merged.values());
      for (const id of batches) this.#stmt('putBatch').run(id, now);
      if (batches.length > 0) this.#stmt('expireBatches').run(now - FLEET_MARK_MS);
      deleted += this.#expire(now);
      this.#compact(now);
    });
    const trimmed = this.#enforceBound(now);
    deleted += trimmed;
    this.#db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
    return { rollups: merged.size, ms: performance.now() - started, deleted, trimmed: trimmed > 0 };
  }

  /** Whether the fleet batch `id` was written here (within {@link FLEET_MARK_MS}). */
  hasBatch(id: string): boolean {
    this.#open();
    return this.#stmt('hasBatch').get(id) !== undefined;
  }

  /**
   * The visitor salt of the UTC day of `now`: 32 random bytes, created and
   * stored on the day's first call, kept in the database until the day is
   * over (a restart the same day counts the same visitors as the same),
   * then deleted: yesterday's visitors can no longer be linked to today's.
   */
  visitorSalt(now = this.#now()): Buffer {
    this.#open();
    const day = bucketOf(now, 'day');
    let salt: Buffer | undefined;
    this.#transaction(() => {
      this.#s.dropSalts?.run(day);
      const row = this.#s.getSalt?.get(day) as { salt: Uint8Array } | undefined;
      if (row !== undefined && row.salt.length === SALT_BYTES) salt = Buffer.from(row.salt);
      else {
        salt = randomBytes(SALT_BYTES);
        this.#s.putSalt?.run(day, salt);
      }
    });
    return salt as Buffer;
  }

  /** Makes `salt` the UTC day's visitor salt (the fleet's, `storage redis`): kept like one made here. */
  adoptVisitorSalt(salt: Buffer, now = this.#now()): void {
    this.#open();
    if (salt.length !== SALT_BYTES) throw new RangeError(`a visitor salt is ${SALT_BYTES} bytes, not ${salt.length}`);
    this.#s.putSalt?.run(bucketOf(now, 'day'), salt);
  }

  /** Domains with history, sorted. */
  domains(): string[] {
    this.#open();
    return (this.#stmt('domains').all() as Array<{ name: string }>).map((r) => r.name);
  }

  /** Whether `domain` (lowercase) has any history. */
  hasDomain(domain: string): boolean {
    this.#open();
    const id = this.#idOf(domain);
    return id !== undefined && this.#stmt('hasSeries').get(id) !== undefined;
  }

  /**
   * Every bucket of `interval` from the one holding `range.from` up to
   * `range.to` (exclusive), zeros where nothing was kept (no traffic, or
   * older than the tier keeps). More than {@link MAX_POINTS} buckets is
   * `HISTORY_TOO_MANY_POINTS`.
   */
  timeseries(domain: string, range: Range, interval: Interval): SeriesPoint[] {
    this.#open();
    checkRange(range);
    if (!INTERVALS.includes(interval)) throw new HistoryError('HISTORY_BAD_INTERVAL', String(interval));
    const ms = INTERVAL_MS[interval];
    const start = bucketOf(range.from, interval);
    const count = Math.ceil((range.to - start) / ms);
    if (count > MAX_POINTS) {
      throw new HistoryError(
        'HISTORY_TOO_MANY_POINTS',
        `${count} ${interval} buckets in the range, at most ${MAX_POINTS}: ask for a coarser interval or a shorter range`,
      );
    }
    const points: SeriesPoint[] = [];
    for (let i = 0; i < count; i++) {
      points.push({ t: start + i * ms, page_views: 0, visitors: 0, requests: 0, bot_requests: 0, bytes_sent: 0 });
    }
    const id = this.#idOf(domain);
    if (id === undefined) return points;
    for (const row of this.#stmt('series').iterate(id, TIER[interval], start, range.to) as Iterable<Row>) {
      const point = points[(num(row.t) - start) / ms];
      if (point === undefined) continue;
      point.page_views = num(row.page_views);
      point.visitors = num(row.visitors);
      point.requests = num(row.requests);
      point.bot_requests = num(row.bot_requests);
      point.bytes_sent = num(row.bytes_sent);
    }
    return points;
  }

  /**
   * What `domain` did over `range` (widened to whole minutes; see
   * `planRange` for old data). Visitors: each UTC day's unique visitors
   * (the union of the day's sketches in the range), summed over days.
   */
  totals(domain: string, range: Range): Totals {
    this.#open();
    checkRange(range);
    const totals: Totals = {
      page_views: 0,
      visitors: 0,
      requests: 0,
      bot_requests: 0,
      bytes_sent: 0,
      status: { s1xx: 0, s2xx: 0, s3xx: 0, s4xx: 0, s5xx: 0, other: 0 },
    };
    const id = this.#idOf(domain);
    if (id === undefined) return totals;
    const slices = planRange(range, this.#oldest());
    const registers = new Uint8Array(REGISTERS);
    for (const piece of mergeWholeDays(slices)) {
      const row = this.#stmt('sums').get(id, TIER[piece.interval], piece.from, piece.to) as Row;
      for (const c of COUNTS) totals[c] += num(row[c]);
      for (const c of STATUS) totals.status[c as keyof StatusTotals] += num(row[c]);
      // A day row's visitors are that day's uniques.
      if (piece.interval === 'day') totals.visitors += num(row.visitors);
    }
    for (const slice of slices) {
      if (slice.pieces.some((p) => p.interval === 'day')) continue;
      registers.fill(0);
      for (const p of slice.pieces) {
        for (const row of this.#stmt('sketches').iterate(id, TIER[p.interval], p.from, p.to) as Iterable<Row>) {
          decodeSketchInto(row.registers as Uint8Array, registers);
        }
      }
      totals.visitors += estimateRegisters(registers);
    }
    return totals;
  }

  /** The `limit` keys of `dimension` with the most page views over `range`, descending (ties by key). */
  breakdown(domain: string, dimension: RollupDimension, range: Range, limit = 10): BreakdownItem[] {
    this.#open();
    checkRange(range);
    const dim = DIMENSION_IDS[dimension];
    if (dim === undefined) throw new HistoryError('HISTORY_BAD_DIMENSION', String(dimension));
    const id = this.#idOf(domain);
    if (id === undefined) return [];
    const counts = new Map<string, number>();
    for (const p of mergeWholeDays(planRange(range, this.#oldest()))) {
      for (const row of this.#stmt('breakdown').iterate(id, TIER[p.interval], dim, p.from, p.to) as Iterable<Row>) {
        const key = row.key as string;
        if (key === ROLLUP_OTHER_KEY) continue;
        counts.set(key, (counts.get(key) ?? 0) + num(row.n));
      }
    }
    return top(counts, limit, (n) => n).map(([key, page_views]) => ({ key, page_views }));
  }

  /** The `limit` pages with the most Web Vitals samples over `range`, their counts per metric. */
  vitals(domain: string, range: Range, limit = 20): PageVitalsItem[] {
    this.#open();
    checkRange(range);
    const id = this.#idOf(domain);
    if (id === undefined) return [];
    const pages = new Map<string, number[]>();
    for (const p of mergeWholeDays(planRange(range, this.#oldest()))) {
      for (const row of this.#stmt('vitals').iterate(id, TIER[p.interval], p.from, p.to) as Iterable<Row>) {
        const path = row.path as string;
        if (path === ROLLUP_OTHER_KEY) continue;
        const sums = pages.get(path) ?? new Array<number>(VITAL_COLUMNS.length).fill(0);
        VITAL_COLUMNS.forEach((c, i) => {
          sums[i] = (sums[i] as number) + num(row[c]);
        });
        pages.set(path, sums);
      }
    }
    const samples = (s: number[]) => s.reduce((a, b) => a + b, 0);
    return top(pages, limit, samples).map(([path, s]) => ({
      path,
      lcp: vital(s, 0),
      cls: vital(s, 3),
      inp: vital(s, 6),
    }));
  }

  /** The database file's size, bytes (pages in use and free; the WAL is checkpointed after every write). */
  sizeBytes(): number {
    this.#open();
    return num(this.#pragma('pageCount')) * num(this.#pragma('pageSize'));
  }

  /** Closes the database; later calls throw `HISTORY_CLOSED`. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#db.close();
  }

  #open(): void {
    if (this.#closed) throw new HistoryError('HISTORY_CLOSED');
  }

  #stmt(name: string): StatementSync {
    return this.#s[name] as StatementSync;
  }

  #pragma(name: 'pageCount' | 'freePages' | 'pageSize'): number {
    const row = this.#stmt(name).get() as Row;
    return num(Object.values(row)[0]);
  }

  #transaction(body: () => void): void {
    this.#db.exec('BEGIN IMMEDIATE');
    try {
      body();
      this.#db.exec('COMMIT');
    } catch (err) {
      this.#db.exec('ROLLBACK');
      throw err;
    }
  }

  #idOf(domain: string): number | undefined {
    const cached = this.#ids.get(domain);
    if (cached !== undefined) return cached;
    const row = this.#stmt('domainId').get(domain) as Row | undefined;
    if (row === undefined) return undefined;
    const id = num(row.id);
    this.#ids.set(domain, id);
    return id;
  }

  #meta(key: string): number {
    const row = this.#stmt('getMeta').get(key) as Row | undefined;
    return row === undefined ? 0 : num(row.value);
  }

  /** The oldest bucket each fine tier still holds: its retention, or further if the size bound trimmed it. */
  #oldest(now = this.#now()): Record<'minute' | 'hour', number> {
    return {
      minute: Math.max(bucketOf(now - this.#retention.minute, 'minute'), this.#meta('trim_minute')),
      hour: Math.max(bucketOf(now - this.#retention.hour, 'hour'), this.#meta('trim_hour')),
    };
  }

  /**
   * Adds the rollups into their buckets of every tier, in memory first (one
   * flush's rollups of one hour or day are added up before they are
   * written), then writes each bucket once: counts and breakdowns added to
   * what the row has, sketches by register max.
   */
  #writeBuckets(rollups: Iterable<MinuteRollup>): void {
    const buckets = new Map<string, Bucket>();
    for (const r of rollups) {
      let id = this.#idOf(r.domain);
      if (id === undefined) {
        this.#stmt('addDomain').run(r.domain);
        id = this.#idOf(r.domain) as number;
      }
      const registers = unpackRegisters(r.visitors);
      for (const interval of INTERVALS) {
        const tier = TIER[interval];
        const t = bucketOf(r.minute, interval);
        const key = `${id} ${tier} ${t}`;
        let b = buckets.get(key);
        if (b === undefined) {
          b = {
            id,
            tier,
            t,
            counts: new Array<number>(COUNTS.length + STATUS.length).fill(0),
            registers: registers.slice(),
            breakdowns: new Map(),
            vitals: new Map(),
          };
          buckets.set(key, b);
        } else {
          for (let i = 0; i < REGISTERS; i++) {
            if ((registers[i] as number) > (b.registers[i] as number)) b.registers[i] = registers[i] as number;
          }
        }
        addRollup(b, r);
      }
    }
    for (const b of buckets.values()) {
      const had = this.#stmt('getSketch').get(b.id, b.tier, b.t) as Row | undefined;
      if (had !== undefined) decodeSketchInto(had.registers as Uint8Array, b.registers);
      this.#stmt('putSketch').run(b.id, b.tier, b.t, encodeSketch(b.registers));
      this.#stmt('upsertSeries').run(b.id, b.tier, b.t, ...b.counts, estimateRegisters(b.registers));
      for (const [dim, keys] of b.breakdowns) {
        for (const [key, n] of keys) this.#stmt('upsertBreakdown').run(b.id, b.tier, dim, b.t, key, n);
      }
      for (const [path, v] of b.vitals) this.#stmt('upsertVitals').run(b.id, b.tier, b.t, path, ...v);
    }
  }

  /** Deletes the rows of every domain in `[from, to)` of one tier; returns how many. */
  #deleteRange(id: number, tier: number, from: number, to: number): number {
    let n = 0;
    n += Number(this.#stmt('deleteSeries').run(id, tier, from, to).changes);
    n += Number(this.#stmt('deleteSketches').run(id, tier, from, to).changes);
    n += Number(this.#stmt('deleteVitals').run(id, tier, from, to).changes);
    for (const dim of Object.values(DIMENSION_IDS)) {
      n += Number(this.#stmt('deleteBreakdowns').run(id, tier, dim, from, to).changes);
    }
    return n;
  }

  #domainIds(): number[] {
    return (this.#stmt('allIds').all() as Row[]).map((r) => num(r.id));
  }

  /** Retention: rows of each tier older than it keeps. Runs when a tier's cut moved (each minute for minutes). */
  #expire(now: number): number {
    const cuts: Array<[Interval, number | null]> = [
      ['minute', bucketOf(now - this.#retention.minute, 'minute')],
      ['hour', bucketOf(now - this.#retention.hour, 'hour')],
      ['day', this.#retention.day === null ? null : bucketOf(now - this.#retention.day, 'day')],
    ];
    let deleted = 0;
    const ids = this.#domainIds();
    for (const [interval, cut] of cuts) {
      if (cut === null || cut <= this.#meta(`expired_${interval}`)) continue;
      for (const id of ids) deleted += this.#deleteRange(id, TIER[interval], Number.MIN_SAFE_INTEGER, cut);
      this.#stmt('setMeta').run(`expired_${interval}`, cut);
      if (interval === 'day' || (interval === 'hour' && this.#retention.day === null)) this.#dropEmptyDomains();
    }
    return deleted;
  }

  #dropEmptyDomains(): void {
    if (Number(this.#stmt('dropEmptyDomains').run().changes) > 0) this.#ids.clear();
  }

  /** Compacts the hours and days that ended since the last flush: their top keys kept, the rest summed under `(other)`. */
  #compact(now: number): void {
    for (const [interval, cap] of [
      ['hour', HOUR_KEYS],
      ['day', DAY_KEYS],
    ] as const) {
      const finished = bucketOf(now - FOLD_DELAY_MS, interval);
      const cursor = this.#meta(`fold_${interval}`);
      if (finished <= cursor) continue;
      this.#foldBuckets(TIER[interval], cursor, finished, cap);
      this.#stmt('setMeta').run(`fold_${interval}`, finished);
    }
  }

  /** Folds every bucket of `tier` in `[from, to)` of every domain to its top `cap` keys and paths. */
  #foldBuckets(tier: number, from: number, to: number, cap: number): void {
    for (const id of this.#domainIds()) {
      for (const row of this.#stmt('bucketsIn').all(id, tier, from, to) as Row[]) {
        const t = num(row.t);
        for (const dim of Object.values(DIMENSION_IDS)) this.#foldBreakdown(id, tier, dim, t, cap);
        this.#foldVitals(id, tier, t, cap);
      }
    }
  }

  #foldBreakdown(id: number, tier: number, dim: number, t: number, cap: number): void {
    const tail = this.#stmt('breakdownTail').all(id, tier, dim, t, cap) as Row[];
    if (tail.length === 0) return;
    let other = 0;
    for (const row of tail) {
      other += num(row.page_views);
      this.#stmt('deleteBreakdownKey').run(id, tier, dim, t, row.key as string);
    }
    this.#stmt('upsertBreakdown').run(id, tier, dim, t, ROLLUP_OTHER_KEY, other);
  }

  #foldVitals(id: number, tier: number, t: number, cap: number): void {
    const tail = this.#stmt('vitalsTail').all(id, tier, t, cap) as Row[];
    if (tail.length === 0) return;
    const sums = new Array<number>(VITAL_COLUMNS.length).fill(0);
    for (const row of tail) {
      VITAL_COLUMNS.forEach((c, i) => {
        sums[i] = (sums[i] as number) + num(row[c]);
      });
      this.#stmt('deleteVitalsPath').run(id, tier, t, row.path as string);
    }
    this.#stmt('upsertVitals').run(id, tier, t, ROLLUP_OTHER_KEY, ...sums);
  }

  /** Bytes of the pages in use. */
  #usedBytes(): number {
    return (this.#pragma('pageCount') - this.#pragma('freePages')) * this.#pragma('pageSize');
  }

  /**
   * The size bound: over {@link HIGH_WATER} of `maxBytes`, old data goes,
   * one step at a time, until the pages in use are under {@link LOW_WATER};
   * then free pages are given back, so the file shrinks. Returns the rows
   * deleted.
   */
  #enforceBound(now: number): number {
    const free = this.#pragma('freePages') * this.#pragma('pageSize');
    if (this.#usedBytes() <= this.#maxBytes * HIGH_WATER) {
      // Retention freed pages: the file gives them back once they add up.
      if (free > this.#maxBytes * 0.05) this.#db.exec('PRAGMA incremental_vacuum');
      return 0;
    }
    let deleted = 0;
    for (let step = 0; step < 10_000; step++) {
      let done = -1;
      this.#transaction(() => {
        done = this.#trimStep(now);
      });
      if (done < 0) break;
      deleted += done;
      if (this.#usedBytes() <= this.#maxBytes * LOW_WATER) break;
    }
    this.#db.exec('PRAGMA incremental_vacuum');
    return deleted;
  }

  /** The oldest bucket of `tier` any domain has, or null. */
  #oldestBucket(tier: number): number | null {
    let oldest: number | null = null;
    for (const id of this.#domainIds()) {
      const row = this.#stmt('oldestBucket').get(id, tier) as Row | undefined;
      if (row !== undefined && (oldest === null || num(row.t) < oldest)) oldest = num(row.t);
    }
    return oldest;
  }

  /**
   * One step of trimming, the least useful data first; -1 when nothing is
   * left to trim. In order: the long tail of the breakdowns of days older
   * than the hour tier (folded to {@link TAIL_KEYS} keys, 30 days a step);
   * those days themselves (a week a step); hours older than the minute tier
   * (a day a step); then whole days from the oldest, every tier (the current
   * UTC day is never trimmed).
   */
  #trimStep(now: number): number {
    const oldest = this.#oldest(now);
    const hourDays = bucketOf(oldest.hour, 'day');
    const ids = this.#domainIds();
    const oldestDay = this.#oldestBucket(TIER.day);
    const tailCursor = Math.max(this.#meta('tail_day'), oldestDay ?? 0);
    if (oldestDay !== null && tailCursor < hourDays) {
      const to = Math.min(tailCursor + 30 * INTERVAL_MS.day, hourDays);
      this.#foldBuckets(TIER.day, tailCursor, to, TAIL_KEYS);
      this.#stmt('setMeta').run('tail_day', to);
      return 0;
    }
    if (oldestDay !== null && oldestDay < hourDays) {
      const to = Math.min(oldestDay + 7 * INTERVAL_MS.day, hourDays);
      let n = 0;
      for (const id of ids) n += this.#deleteRange(id, TIER.day, oldestDay, to);
      return n;
    }
    const minuteHours = bucketOf(oldest.minute, 'hour');
    const oldestHour = this.#oldestBucket(TIER.hour);
    if (oldestHour !== null && oldestHour < minuteHours) {
      const to = Math.min(oldestHour + INTERVAL_MS.day, minuteHours);
      let n = 0;
      for (const id of ids) n += this.#deleteRange(id, TIER.hour, oldestHour, to);
      this.#stmt('setMeta').run('trim_hour', to);
      return n;
    }
    const today = bucketOf(now, 'day');
    const first = [oldestDay, oldestHour, this.#oldestBucket(TIER.minute)]
      .filter((t): t is number => t !== null)
      .reduce((a, b) => Math.min(a, b), Number.POSITIVE_INFINITY);
    if (!Number.isFinite(first) || bucketOf(first, 'day') >= today) return -1;
    const to = bucketOf(first, 'day') + INTERVAL_MS.day;
    let n = 0;
    for (const id of ids)
      for (const tier of [TIER.minute, TIER.hour, TIER.day]) n += this.#deleteRange(id, tier, first, to);
    this.#stmt('setMeta').run('trim_hour', Math.max(this.#meta('trim_hour'), to));
    this.#stmt('setMeta').run('trim_minute', Math.max(this.#meta('trim_minute'), to));
    return n;
  }
}
