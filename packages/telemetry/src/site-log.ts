import path from 'node:path';
import type { LogOutput, LogRoll, RequestRecord, RouteSpec, Site } from '@proxyd/model';
import type { Logger } from 'pino';
import { RollingFile } from './site-log-file.js';
import { formatSiteLogLine } from './site-log-line.js';

// Sites' `log` outputs. Who writes what, with N worker processes:
//
// - every data-plane process (the one process, or each worker) formats the
//   lines of its own requests ({@link SiteLogRecorder}) and hands them on in
//   batches, every 100 ms or 64 KiB, off the request's path;
// - one process owns every output ({@link SiteLogOutputs}): the daemon's
//   main process (the primary with workers, which serves no traffic).
//   Workers send their batches over IPC. One writer per file: lines are
//   never interleaved or torn, and a roll is a rename between two batches,
//   with no line lost or written to a file already rolled.

/** The log target of sites' log failures (a file that cannot be written, rolled or opened; lines dropped). */
export const SITE_LOG_TARGET = 'proxy::site_log';

/** `[output key, lines]` pairs, each `lines` whole lines ending in `\n`. */
export type SiteLogBatch = [key: string, lines: string][];

/** Keys of the outputs: `stdout`, `stderr`, `file:<absolute path>`. */
export type SiteLogKey = string;

/** The output key of a `log` output; null for `discard` (nothing is formatted). A relative path resolves against the working directory. */
export function siteLogKey(output: LogOutput): SiteLogKey | null {
  switch (output.kind) {
    case 'file':
      return `file:${path.resolve(output.path)}`;
    case 'discard':
      return null;
    default:
      return output.kind;
  }
}

/** Options of {@link SiteLogRecorder}. */
export interface SiteLogRecorderOptions {
  /** Longest a line waits before its batch goes, ms (default 100). */
  flushMs?: number;
  /** A batch goes at once when its lines reach this size, bytes (default 64 KiB). */
  maxBatchBytes?: number;
}

/**
 * The `onRequest` side of sites' logs, in a data-plane process: one JSON
 * line ({@link formatSiteLogLine}) per finished request of a site that has
 * a `log` (by the record's matched domain), collected per output and handed
 * to `deliver` in batches. A request of a site without a log costs one map
 * look-up.
 */
export class SiteLogRecorder {
  #byDomain = new Map<string, SiteLogKey>();
  #pending = new Map<SiteLogKey, string>();
  #bytes = 0;
  #timer: NodeJS.Timeout | null = null;
  readonly #deliver: (batch: SiteLogBatch) => void;
  readonly #flushMs: number;
  readonly #maxBatchBytes: number;

  constructor(deliver: (batch: SiteLogBatch) => void, options: SiteLogRecorderOptions = {}) {
    this.#deliver = deliver;
    this.#flushMs = options.flushMs ?? 100;
    this.#maxBatchBytes = options.maxBatchBytes ?? 64 * 1024;
  }

  /** Follows a route table: which domains log, and where. */
  setRoutes(routes: readonly RouteSpec[]): void {
    const next = new Map<string, SiteLogKey>();
    for (const route of routes) {
      const key = route.site.log === null ? null : siteLogKey(route.site.log.output);
      if (key !== null) next.set(route.domain, key);
    }
    this.#byDomain = next;
  }

  /** Follows a change of the route table (the routes added or replaced, the domains removed): O(changes). */
  applyChanges(upserted: readonly RouteSpec[], removed: readonly string[]): void {
    for (const domain of removed) this.#byDomain.delete(domain);
    for (const route of upserted) {
      const key = route.site.log === null ? null : siteLogKey(route.site.log.output);
      if (key !== null) this.#byDomain.set(route.domain, key);
      else this.#byDomain.delete(route.domain);
    }
  }

  /** The `DataPlaneHooks.onRequest` hook (bound). */
  readonly onRequest = (record: RequestRecord): void => {
    if (record.domain === null || this.#byDomain.size === 0) return;
    const key = this.#byDomain.get(record.domain);
    if (key === undefined) return;
    const line = formatSiteLogLine(record);
    this.#pending.set(key, (this.#pending.get(key) ?? '') + line);
    this.#bytes += line.length;
    if (this.#bytes >= this.#maxBatchBytes) this.flush();
    else this.#timer ??= setTimeout(() => this.flush(), this.#flushMs).unref();
  };

  /** Hands what is collected to `deliver` now (nothing when empty); returns the batch. */
  flush(): SiteLogBatch | null {
    const batch = this.take();
    if (batch !== null) this.#deliver(batch);
    return batch;
  }

  /** What is collected, taken out without `deliver` (null when empty). */
  take(): SiteLogBatch | null {
    if (this.#timer !== null) {
      clearTimeout(this.#timer);
      this.#timer = null;
    }
    if (this.#pending.size === 0) return null;
    const batch: SiteLogBatch = [...this.#pending];
    this.#pending = new Map();
    this.#bytes = 0;
    return batch;
  }
}

/** Options of {@link SiteLogOutputs}. */
export interface SiteLogOutputsOptions {
  /** Target `proxy::site_log`: failures to write, roll or open, and lines dropped. */
  logger: Logger;
  /** Writes to stdout / stderr (default the process's). */
  stdout?: (text: string) => void;
  stderr?: (text: string) => void;
  /** How long a file no site uses any more stays open for lines still on their way, ms (default 10 s). */
  lingerMs?: number;
  /** Bytes a file may have waiting for the disk; lines past it are dropped and counted (default 16 MiB). */
  maxPendingBytes?: number;
}

/** One line at most per write to a pipe: writes up to PIPE_BUF (4096) are atomic among the processes sharing it. */
const PIPE_BUF = 4096;
const NEWLINE = 0x0a;

interface OpenFile {
  file: RollingFile;
  roll: LogRoll | null;
  /** Set while no site uses it: the close timer. */
  retiring: NodeJS.Timeout | null;
}

/**
 * The outputs of sites' logs, owned by one process: files ({@link
 * RollingFile}, one per absolute path, shared by the sites naming it),
 * stdout and stderr. {@link prepare} opens what a config needs before the
 * config is published, so a file that cannot be opened fails the start or
 * the reload with its reason and the running config keeps logging as it did.
 */
export class SiteLogOutputs {
  #files = new Map<SiteLogKey, OpenFile>();
  #dropped = 0;
  #lastDropReport = 0;
  readonly #logger: Logger;
  readonly #stdout: (text: string) => void;
  readonly #stderr: (text: string) => void;
  readonly #lingerMs: number;
  readonly #maxPending: number;

  constructor(options: SiteLogOutputsOptions) {
    this.#logger = options.logger;
    this.#stdout = options.stdout ?? ((text) => process.stdout.write(text));
    this.#stderr = options.stderr ?? ((text) => process.stderr.write(text));
    this.#lingerMs = options.lingerMs ?? 10_000;
    this.#maxPending = options.maxPendingBytes ?? 16 * 1024 * 1024;
  }

  /**
   * Opens every file the sites' logs name that is not open yet. Rejects,
   * having opened nothing new, when one cannot be opened or two sites roll
   * one file differently: `site "a.example.com": log file "/var/log/a.log"
   * cannot be opened: EACCES: permission denied, open '/var/log/a.log'`.
   */
  async prepare(sites: Iterable<Site>): Promise<void> {
    const opened: [SiteLogKey, OpenFile][] = [];
    try {
      for (const [key, want] of wantedFiles(sites, true)) {
        if (this.#files.has(key)) continue;
        let file: RollingFile;
        try {
          file = await RollingFile.open(want.path, want.roll, { onError: (err, what) => this.#failed(err, what) });
        } catch (err) {
          throw new Error(
            `site ${JSON.stringify(want.site)}: log file ${JSON.stringify(want.path)} cannot be opened: ${(err as Error).message}`,
          );
        }
        opened.push([key, { file, roll: want.roll, retiring: null }]);
      }
    } catch (err) {
      await Promise.all(opened.map(([, o]) => o.file.close()));
      throw err;
    }
    for (const [key, o] of opened) this.#files.set(key, o);
  }

  /**
   * Follows the published sites: roll settings apply from the next write;
   * a file no site names any more is closed after the linger (lines still
   * on their way from workers are written meanwhile).
   */
  retain(sites: Iterable<Site>): void {
    // No file open: nothing to follow, and the sites are not walked (a route write at 100,000 routes).
    if (this.#files.size === 0) return;
    const wanted = wantedFiles(sites, false);
    for (const [key, open] of this.#files) {
      const want = wanted.get(key);
      if (want !== undefined) {
        if (open.retiring !== null) clearTimeout(open.retiring);
        open.retiring = null;
        open.roll = want.roll;
        open.file.setRoll(want.roll);
      } else if (open.retiring === null) {
        open.retiring = setTimeout(() => {
          if (this.#files.get(key) !== open) return;
          this.#files.delete(key);
          void open.file.close();
        }, this.#lingerMs).unref();
      }
    }
  }

  /** Writes a batch of lines (from this process or a worker). */
  writeBatch(batch: SiteLogBatch): void {
    for (const [key, lines] of batch) this.write(key, lines);
  }

  /** Writes whole lines to an output; an unknown key drops them (counted). */
  write(key: SiteLogKey, lines: string): void {
    if (key === 'stdout' || key === 'stderr') {
      writeLineChunks(key === 'stdout' ? this.#stdout : this.#stderr, lines);
      return;
    }
    const open = this.#files.get(key);
    if (open === undefined || open.file.pending > this.#maxPending) {
      this.#drop(lines, key);
      return;
    }
    open.file.write(lines);
  }

  /** Resolves when every file has what was written so far. */
  async flush(): Promise<void> {
    await Promise.all([...this.#files.values()].map((o) => o.file.flush()));
  }

  /** Flushes and closes every file. */
  async close(): Promise<void> {
    const files = [...this.#files.values()];
    this.#files.clear();
    for (const o of files) if (o.retiring !== null) clearTimeout(o.retiring);
    await Promise.all(files.map((o) => o.file.close()));
  }

  #failed(err: Error, what: string): void {
    this.#logger.error({ error: err.message }, `site log: ${what} failed`);
  }

  #drop(lines: string, key: SiteLogKey): void {
    let n = 0;
    for (let i = lines.indexOf('\n'); i !== -1; i = lines.indexOf('\n', i + 1)) n++;
    this.#dropped += n;
    const now = Date.now();
    if (now - this.#lastDropReport < 10_000) return;
    this.#lastDropReport = now;
    this.#logger.warn(
      { output: key, dropped: this.#dropped },
      `site log: ${this.#dropped} line(s) dropped (the file is not open, or the disk is behind by more than ${this.#maxPending} bytes)`,
    );
    this.#dropped = 0;
  }
}

/** The files sites' logs name, by key; `strict`: throws when two sites roll one file differently (else the first wins). */
function wantedFiles(
  sites: Iterable<Site>,
  strict: boolean,
): Map<SiteLogKey, { path: string; roll: LogRoll | null; site: string }> {
  const wanted = new Map<SiteLogKey, { path: string; roll: LogRoll | null; site: string }>();
  for (const site of sites) {
    const output = site.log?.output;
    if (output?.kind !== 'file') continue;
    const key = siteLogKey(output) as SiteLogKey;
    const name = site.addresses[0]?.host ?? '?';
    const first = wanted.get(key);
    if (first === undefined) wanted.set(key, { path: output.path, roll: output.roll, site: name });
    else if (strict && JSON.stringify(first.roll) !== JSON.stringify(output.roll)) {
      throw new Error(
        `sites ${JSON.stringify(first.site)} and ${JSON.stringify(name)} log to ${JSON.stringify(output.path)} with different roll options; one file rolls one way`,
      );
    }
  }
  return wanted;
}

/** Writes `lines` in pieces of whole lines, each at most {@link PIPE_BUF} bytes (a longer line goes alone). */
function writeLineChunks(write: (text: string) => void, lines: string): void {
  // UTF-16 length × 3 bounds the UTF-8 length.
  if (lines.length * 3 <= PIPE_BUF) {
    write(lines);
    return;
  }
  const buf = Buffer.from(lines);
  let start = 0;
  while (start < buf.length) {
    let end = buf.length;
    if (end - start > PIPE_BUF) {
      end = buf.lastIndexOf(NEWLINE, start + PIPE_BUF - 1) + 1;
      if (end <= start) end = buf.indexOf(NEWLINE, start) + 1 || buf.length;
    }
    write(buf.toString('utf8', start, end));
    start = end;
  }
}
