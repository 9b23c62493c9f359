import { constants } from 'node:fs';
import { copyFile, open, readdir, readFile, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { parseDomain, parseHostPort } from '@proxyd/model';
import { type Static, Type } from 'typebox';
// typebox/schema's validator (the engine typebox/compile's wraps): typebox/compile also loads
// typebox/value's ~300 modules for methods this file does not call (issue 32).
import { Compile, type Validator } from 'typebox/schema';
import type { ApiRouteRecord } from './api-route.js';
import { StoreError, StoreErrorCode } from './errors.js';
import { JournalWriter, journalLine, parseJournal, syncDirectory, writeAll } from './journal.js';

/** The format tag of the state file; bumped on an incompatible change. */
export const STATE_FORMAT = 'proxyd-routes/1';

/** One route of the state file. */
const StateFileRoute = Type.Object(
  {
    domain: Type.String({ minLength: 1, maxLength: 253, description: 'Lowercase hostname or *.wildcard' }),
    upstream: Type.String({ minLength: 3, description: 'Canonical host:port' }),
    tls: Type.Boolean({ description: 'Connect to the upstream with TLS' }),
    source: Type.Union([Type.String(), Type.Null()], { description: 'Owning controller tag' }),
  },
  { additionalProperties: false },
);

/** The state file's schema: the routes written through the admin API. */
export const StateFileContent = Type.Object(
  { format: Type.Literal(STATE_FORMAT), routes: Type.Array(StateFileRoute) },
  { additionalProperties: false },
);
export type StateFileContent = Static<typeof StateFileContent>;

/** The file's frame: checked whole; its routes are then checked one by one. */
const StateFileFrame = Type.Object(
  { format: Type.Literal(STATE_FORMAT), routes: Type.Array(Type.Unknown()) },
  { additionalProperties: false },
);

let frameChecker: Validator<typeof StateFileFrame> | null = null;
let routeChecker: Validator<typeof StateFileRoute> | null = null;

/** A `source` tag as the admin API accepts it (its `SOURCE_PATTERN`): 1-128 visible ASCII characters. */
const SOURCE_TAG = /^[\x21-\x7e]{1,128}$/;

/** Problems quoted in {@link RecoveredState.reason}; the rest are counted. */
const REASON_PROBLEMS = 3;

/**
 * Routes per batch a writer hands {@link StateFile.writeBatches} (~80 KB,
 * one `writev`): the event loop runs between two batches, so writing a file
 * of 100,000 routes never holds the data plane for long.
 */
export const BATCH_ROUTES = 1000;

/**
 * The journal is folded into the state file (in the background) once it is
 * longer than the file and than this: a compaction costs O(file) every
 * O(file) bytes of writes, so O(1) per write on average.
 */
export const COMPACT_MIN_BYTES = 1024 * 1024;

const SEPARATOR = Buffer.from(',\n');

/** The state file's text of one route (a line of the file). */
export function recordLine(record: ApiRouteRecord): string {
  return JSON.stringify({ domain: record.domain, upstream: record.upstream, tls: record.tls, source: record.source });
}

/**
 * One route line (as {@link recordLine} writes it) read back from outside
 * (the fleet's shared storage): the record, or why it is unusable, checked
 * as the state file's routes are (schema, lowercase domain, `host:port`,
 * source tag).
 */
export function parseRecordLine(line: string): ApiRouteRecord | string {
  let route: unknown;
  try {
    route = JSON.parse(line);
  } catch (err) {
    return `not valid JSON: ${(err as Error).message}`;
  }
  routeChecker ??= Compile(StateFileRoute);
  const problem = routeProblem(routeChecker, route, NO_DOMAINS);
  return problem === null ? (route as ApiRouteRecord) : problem;
}

const NO_DOMAINS: ReadonlySet<string> = new Set();

/** A route of the state file that {@link StateFile.load} left out. */
export interface RejectedRoute {
  /** Its position in the file's `routes`, from 0. */
  index: number;
  /** Its domain as written, or null when it has none that is a string. */
  domain: string | null;
  /** Why, e.g. `domain "a..b" has an empty label`. */
  problem: string;
}

/** What {@link StateFile.load} found when the file, or some of its routes, was unusable. */
export interface RecoveredState {
  /** Why: the file's problem, or how many routes were left out and the first problems. */
  reason: string;
  /** Where the file as it was is kept for inspection (never overwritten). */
  copy: string;
  /** Routes loaded all the same: 0 when the whole file was unusable. */
  kept: number;
  /** The routes left out; empty when the whole file was unusable. */
  rejected: RejectedRoute[];
}

/**
 * The routes file in the state directory and its journal. A write of the
 * store appends one line to the journal (`<file>.journal`, see
 * `journal.ts`) and fdatasyncs it: O(what changed). The file itself is
 * replaced atomically (a temp file beside it written and fsynced, renamed
 * over it, the directory fsynced: a crash leaves the old or the new
 * complete file) at start when a journal is left, and by a compaction once
 * the journal outgrows it. The file is one JSON document with one route per
 * line, written chunk by chunk.
 */
export class StateFile {
  readonly path: string;
  readonly journal: JournalWriter;
  #seq = 0;
  /** The state file's size as last written or read (what the journal is compared with). */
  #fileBytes = 0;

  constructor(filePath: string) {
    this.path = filePath;
    this.journal = new JournalWriter(`${filePath}.journal`);
  }

  /** Appends one batch (the state-file lines of the routes set, the domains deleted); resolves once durable. */
  append(puts: readonly Buffer[], deleted: readonly string[]): Promise<void> {
    return this.journal.append(journalLine(puts, deleted));
  }

  /** Whether the journal has outgrown the file ({@link COMPACT_MIN_BYTES}). */
  get wantsCompaction(): boolean {
    return this.journal.bytes > Math.max(COMPACT_MIN_BYTES, this.#fileBytes);
  }

  /**
   * Folds the journal into the file: `lines` (every route's line, in file
   * order) are the table as of the journal's length now, which is where the
   * journal is then cut (the lines appended meanwhile are kept).
   */
  async compact(lines: readonly Buffer[]): Promise<void> {
    const cut = this.journal.bytes;
    const batches: Buffer[][] = [];
    for (let at = 0; at < lines.length; at += BATCH_ROUTES) batches.push(lines.slice(at, at + BATCH_ROUTES));
    await this.writeBatches(batches);
    await this.journal.rotate(cut);
  }

  /** Waits for a journal write in flight and closes the journal. */
  close(): Promise<void> {
    return this.journal.close();
  }

  /**
   * Reads the routes. A missing file is an empty set. Nothing in the file
   * is lost: whatever is set aside is kept in a copy.
   *
   * - A file that is not JSON, or not `{format, routes: [...]}` of this
   *   format, is moved to `<file>.corrupt-<time>` and reported in
   *   `recovered` (`kept` 0); the store starts with no API routes.
   * - Otherwise each route is checked as the admin API checks a write: the
   *   schema (`tls` a boolean, no other field), a lowercase domain the
   *   model's `parseDomain` accepts, seen once (a repeat is left out), an
   *   upstream `parseHostPort` accepts, a `source` of 1-128 visible ASCII
   *   characters or null. When some fail, the file is copied to
   *   `<file>.corrupt-<time>`, rewritten with the valid routes (so the next
   *   start does not report them again), and `recovered` lists the ones
   *   left out; the valid routes load.
   *
   * Leftover temp files of an interrupted write are removed.
   */
  async load(): Promise<{ records: ApiRouteRecord[]; recovered: RecoveredState | null }> {
    await this.#removeTempFiles();
    const loaded = await this.#loadFile();
    return await this.#replayJournal(loaded.records, loaded.recovered);
  }

  /**
   * Replays the journal over the file's `records` (see `journal.ts`): each
   * complete line in order; a last line cut short (a crash mid-append) was
   * never acknowledged and is left out. A line or route that is unusable
   * is left out and reported; the journal as it was is copied to
   * `<journal>.corrupt-<time>`. The result is written as the new file and
   * the journal removed, so the store starts with an empty journal.
   */
  async #replayJournal(
    records: ApiRouteRecord[],
    recovered: RecoveredState | null,
  ): Promise<{ records: ApiRouteRecord[]; recovered: RecoveredState | null }> {
    const journalPath = this.journal.path;
    let text: string;
    try {
      text = await readFile(journalPath, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { records, recovered };
      throw new StoreError(StoreErrorCode.LOAD_FAILED, `cannot read ${journalPath}: ${(err as Error).message}`, {
        cause: err,
      });
    }
    if (text === '') return { records, recovered };
    const parsed = parseJournal(text);
    routeChecker ??= Compile(StateFileRoute);
    const checker = routeChecker;
    const merged = new Map(records.map((record) => [record.domain, record]));
    const problems = [...parsed.problems];
    const none = new Set<string>();
    for (const [at, batch] of parsed.batches.entries()) {
      for (const domain of batch.delete) {
        if (typeof domain === 'string') merged.delete(domain);
        else problems.push(`batch ${at + 1}: a deleted domain that is not a string`);
      }
      for (const route of batch.put) {
        const problem = routeProblem(checker, route, none);
        if (problem === null) merged.set((route as ApiRouteRecord).domain, route as ApiRouteRecord);
        else problems.push(`batch ${at + 1}: ${problem}`);
      }
    }
    const result = [...merged.values()].sort((a, b) => (a.domain < b.domain ? -1 : a.domain > b.domain ? 1 : 0));
    let journalRecovered = recovered;
    if (problems.length > 0) {
      const copy = `${journalPath}.corrupt-${new Date().toISOString().replace(/[:.]/g, '-')}`;
      await copyFile(journalPath, copy, constants.COPYFILE_EXCL);
      const shown = problems.slice(0, REASON_PROBLEMS).join('; ');
      const more =
        problems.length > REASON_PROBLEMS ? `; and ${problems.length - REASON_PROBLEMS} more (see the copy)` : '';
      const reason = `journal: ${problems.length} unusable entr${problems.length === 1 ? 'y' : 'ies'} left out: ${shown}${more}`;
      journalRecovered =
        recovered === null
          ? { reason, copy, kept: result.length, rejected: [] }
          : { ...recovered, reason: `${recovered.reason}; ${reason}`, kept: result.length };
    }
    // Folded into the file: a crash before the journal is removed replays it again over the new file, to the same table.
    await this.write(result);
    await rm(journalPath, { force: true });
    await syncDirectory(journalPath);
    return { records: result, recovered: journalRecovered };
  }

  /** The file's routes (see {@link load}), without the journal. */
  async #loadFile(): Promise<{ records: ApiRouteRecord[]; recovered: RecoveredState | null }> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { records: [], recovered: null };
      throw new StoreError(StoreErrorCode.LOAD_FAILED, `cannot read ${this.path}: ${(err as Error).message}`, {
        cause: err,
      });
    }
    this.#fileBytes = Buffer.byteLength(text);
    const checked = validate(text);
    if (typeof checked === 'string') {
      const copy = this.#copyName();
      await rename(this.path, copy);
      return { records: [], recovered: { reason: checked, copy, kept: 0, rejected: [] } };
    }
    const { records, rejected } = checked;
    if (rejected.length === 0) return { records, recovered: null };
    const copy = this.#copyName();
    await copyFile(this.path, copy, constants.COPYFILE_EXCL);
    let reason = leftOutReason(records.length + rejected.length, rejected);
    try {
      await this.write(records);
    } catch (err) {
      // The file keeps every route; the next start reports them again.
      reason += `; the file could not be rewritten without them: ${(err as Error).message}`;
    }
    return { records, recovered: { reason, copy, kept: records.length, rejected } };
  }

  /** `<file>.corrupt-<time>`: where a file set aside goes. */
  #copyName(): string {
    return `${this.path}.corrupt-${new Date().toISOString().replace(/[:.]/g, '-')}`;
  }

  /** Atomically replaces the file with `records`; resolves once durable. */
  write(records: readonly ApiRouteRecord[]): Promise<void> {
    const batches: Buffer[][] = [];
    for (let at = 0; at < records.length; at += BATCH_ROUTES) {
      batches.push(records.slice(at, at + BATCH_ROUTES).map((record) => Buffer.from(recordLine(record))));
    }
    return this.writeBatches(batches);
  }

  /**
   * Atomically replaces the file with these routes, given in batches of
   * {@link recordLine}s as UTF-8 (each batch non-empty, read lazily: the
   * event loop runs between two); resolves once durable.
   */
  async writeBatches(batches: Iterable<readonly Buffer[]>): Promise<void> {
    const tmp = `${this.path}.tmp-${process.pid}-${this.#seq++}`;
    try {
      const file = await open(tmp, 'w', 0o600);
      let bytes = 0;
      try {
        let head = Buffer.from(`{"format":${JSON.stringify(STATE_FORMAT)},"routes":[\n`);
        for (const batch of batches) {
          const buffers: Buffer[] = [head];
          for (const [i, line] of batch.entries()) {
            if (i > 0) buffers.push(SEPARATOR);
            buffers.push(line);
          }
          await writeAll(file, buffers);
          for (const buffer of buffers) bytes += buffer.length;
          head = SEPARATOR;
        }
        const tail = head === SEPARATOR ? Buffer.from('\n]}\n') : Buffer.concat([head, Buffer.from(']}\n')]);
        await writeAll(file, [tail]);
        bytes += tail.length;
        await file.sync();
      } finally {
        await file.close();
      }
      await rename(tmp, this.path);
      await syncDirectory(this.path);
      this.#fileBytes = bytes;
    } catch (err) {
      await rm(tmp, { force: true });
      throw new StoreError(StoreErrorCode.PERSIST_FAILED, `cannot write ${this.path}: ${(err as Error).message}`, {
        cause: err,
      });
    }
  }

  async #removeTempFiles(): Promise<void> {
    const dir = path.dirname(this.path);
    const prefix = `${path.basename(this.path)}.tmp-`;
    let names: string[];
    try {
      names = await readdir(dir);
    } catch {
      return;
    }
    await Promise.all(names.filter((n) => n.startsWith(prefix)).map((n) => rm(path.join(dir, n), { force: true })));
  }
}

/**
 * The valid routes and the ones left out ({@link StateFile.load} lists the
 * checks), or the reason the whole file is unusable.
 */
function validate(text: string): { records: ApiRouteRecord[]; rejected: RejectedRoute[] } | string {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    return `not valid JSON: ${(err as Error).message}`;
  }
  frameChecker ??= Compile(StateFileFrame);
  if (!frameChecker.Check(json)) return schemaProblem(frameChecker.Errors(json)[1]);
  routeChecker ??= Compile(StateFileRoute);
  const checker = routeChecker;
  const records: ApiRouteRecord[] = [];
  const rejected: RejectedRoute[] = [];
  const seen = new Set<string>();
  for (let index = 0; index < json.routes.length; index++) {
    const route = json.routes[index];
    const problem = routeProblem(checker, route, seen);
    if (problem === null) {
      records.push(route as ApiRouteRecord);
      seen.add((route as ApiRouteRecord).domain);
    } else {
      const domain = (route as { domain?: unknown } | null)?.domain;
      rejected.push({ index, domain: typeof domain === 'string' ? domain : null, problem });
    }
  }
  return { records, rejected };
}

/** Why one route of the file is unusable, or null; `seen` holds the domains of the valid routes before it. */
function routeProblem(
  checker: Validator<typeof StateFileRoute>,
  route: unknown,
  seen: ReadonlySet<string>,
): string | null {
  if (!checker.Check(route)) return schemaProblem(checker.Errors(route)[1]);
  const q = (text: string) => JSON.stringify(text.length > 64 ? `${text.slice(0, 64)}…` : text);
  if (route.domain !== route.domain.toLowerCase()) return `domain ${q(route.domain)} is not lowercase`;
  const domain = parseDomain(route.domain);
  if (!domain.ok) return `domain ${q(route.domain)} ${domain.problem}`;
  if (seen.has(route.domain)) return `domain ${q(route.domain)} appears twice`;
  const upstream = parseHostPort(route.upstream);
  if (!upstream.ok) return `upstream ${q(route.upstream)} ${upstream.problem}`;
  if (route.source !== null && !SOURCE_TAG.test(route.source)) {
    return `source ${q(route.source)} is not 1-128 visible ASCII characters`;
  }
  return null;
}

/** A schema error for the reason: `does not match proxyd-routes/1: /tls must be boolean`. */
function schemaProblem(
  errors: Iterable<{ keyword: string; instancePath: string; message: string; params: object }>,
): string {
  const list = [...errors];
  // An extra field gives two errors; the one naming the field reads better than "schema is false".
  const first = list.find((e) => e.keyword === 'additionalProperties') ?? list[0];
  if (first === undefined) return `does not match ${STATE_FORMAT}`;
  const extra = (first.params as { additionalProperties?: unknown }).additionalProperties;
  const names = Array.isArray(extra) ? ` (${extra.map((n) => JSON.stringify(n)).join(', ')})` : '';
  return `does not match ${STATE_FORMAT}: ${first.instancePath || '/'} ${first.message}${names}`;
}

/** `2 of 5 routes left out: route 1: domain "a..b" has an empty label; …`. */
function leftOutReason(total: number, rejected: readonly RejectedRoute[]): string {
  const shown = rejected.slice(0, REASON_PROBLEMS).map((r) => `route ${r.index}: ${r.problem}`);
  const more = rejected.length - shown.length;
  return (
    `${rejected.length} of ${total} routes left out: ${shown.join('; ')}` +
    (more > 0 ? `; and ${more} more (see the copy)` : '')
  );
}
