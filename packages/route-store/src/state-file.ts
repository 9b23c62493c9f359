import { type FileHandle, open, readdir, readFile, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { parseDomain } from '@proxyd/proxy-core/model';
import { type Static, Type } from 'typebox';
import { Compile, type Validator } from 'typebox/compile';
import type { ApiRouteRecord } from './api-route.js';
import { StoreError, StoreErrorCode } from './errors.js';
import { parseUpstream } from './upstream.js';

/** The format tag of the state file; bumped on an incompatible change. */
export const STATE_FORMAT = 'proxyd-routes/1';

/** The state file's schema: the routes written through the admin API. */
export const StateFileContent = Type.Object(
  {
    format: Type.Literal(STATE_FORMAT),
    routes: Type.Array(
      Type.Object(
        {
          domain: Type.String({ minLength: 1, maxLength: 253, description: 'Lowercase hostname or *.wildcard' }),
          upstream: Type.String({ minLength: 3, description: 'Canonical host:port' }),
          tls: Type.Boolean({ description: 'Connect to the upstream with TLS' }),
          source: Type.Union([Type.String(), Type.Null()], { description: 'Owning controller tag' }),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);
export type StateFileContent = Static<typeof StateFileContent>;

let checker: Validator<Record<string, never>, typeof StateFileContent> | null = null;

/**
 * Routes per batch a writer hands {@link StateFile.writeBatches} (~80 KB,
 * one `writev`): the event loop runs between two batches, so writing a file
 * of 100,000 routes never holds the data plane for long.
 */
export const BATCH_ROUTES = 1000;

const SEPARATOR = Buffer.from(',\n');

/** The state file's text of one route (a line of the file). */
export function recordLine(record: ApiRouteRecord): string {
  return JSON.stringify({ domain: record.domain, upstream: record.upstream, tls: record.tls, source: record.source });
}

/** What {@link StateFile.load} found when the file was unusable. */
export interface RecoveredState {
  /** Why the file was rejected. */
  reason: string;
  /** Where the rejected file was moved (kept for inspection). */
  copy: string;
}

/**
 * The routes file in the state directory. Writes are atomic and durable:
 * a temp file beside it is written and fsynced, renamed over the file, and
 * the directory fsynced, so a crash at any moment leaves either the old or
 * the new complete file. The file is one JSON document with one route per
 * line, written chunk by chunk.
 */
export class StateFile {
  readonly path: string;
  #seq = 0;

  constructor(filePath: string) {
    this.path = filePath;
  }

  /**
   * Reads the routes. A missing file is an empty set. A file that is not
   * valid JSON, fails the schema, or holds a domain or an upstream that the
   * model's value rules (`parseDomain`, `parseHostPort`) refuse is moved to
   * `<file>.corrupt-<time>` (never overwritten) and reported in `recovered`;
   * the store then starts with no API routes.
   * Leftover temp files of an interrupted write are removed.
   */
  async load(): Promise<{ records: ApiRouteRecord[]; recovered: RecoveredState | null }> {
    await this.#removeTempFiles();
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { records: [], recovered: null };
      throw new StoreError(StoreErrorCode.LOAD_FAILED, `cannot read ${this.path}: ${(err as Error).message}`, {
        cause: err,
      });
    }
    const reason = validate(text);
    if (typeof reason === 'string') {
      const copy = `${this.path}.corrupt-${new Date().toISOString().replace(/[:.]/g, '-')}`;
      await rename(this.path, copy);
      return { records: [], recovered: { reason, copy } };
    }
    return { records: reason.routes, recovered: null };
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
      try {
        let head = Buffer.from(`{"format":${JSON.stringify(STATE_FORMAT)},"routes":[\n`);
        for (const batch of batches) {
          const buffers: Buffer[] = [head];
          for (const [i, line] of batch.entries()) {
            if (i > 0) buffers.push(SEPARATOR);
            buffers.push(line);
          }
          await writeAll(file, buffers);
          head = SEPARATOR;
        }
        await writeAll(file, [head === SEPARATOR ? Buffer.from('\n]}\n') : Buffer.concat([head, Buffer.from(']}\n')])]);
        await file.sync();
      } finally {
        await file.close();
      }
      await rename(tmp, this.path);
      const dir = await open(path.dirname(this.path), 'r');
      try {
        await dir.sync();
      } finally {
        await dir.close();
      }
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

/** Writes all of `buffers` at the file's position (one `writev` unless it is cut short). */
async function writeAll(file: FileHandle, buffers: Buffer[]): Promise<void> {
  let rest = buffers;
  while (rest.length > 0) {
    let { bytesWritten } = await file.writev(rest);
    let at = 0;
    while (at < rest.length && bytesWritten >= (rest[at] as Buffer).length)
      bytesWritten -= (rest[at++] as Buffer).length;
    rest = rest.slice(at);
    if (bytesWritten > 0) rest[0] = (rest[0] as Buffer).subarray(bytesWritten);
  }
}

/** The parsed content, or the reason it is unusable. */
function validate(text: string): StateFileContent | string {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    return `not valid JSON: ${(err as Error).message}`;
  }
  checker ??= Compile(StateFileContent);
  if (!checker.Check(json)) {
    const [first] = checker.Errors(json);
    return `does not match ${STATE_FORMAT}: ${first ? `${first.instancePath || '/'} ${first.message}` : 'invalid'}`;
  }
  const seen = new Set<string>();
  for (const route of json.routes) {
    if (route.domain !== route.domain.toLowerCase()) return `domain "${route.domain}" is not lowercase`;
    const domain = parseDomain(route.domain);
    if (!domain.ok) return `domain ${JSON.stringify(route.domain)} ${domain.problem}`;
    if (seen.has(route.domain)) return `domain "${route.domain}" appears twice`;
    seen.add(route.domain);
    try {
      parseUpstream(route.upstream);
    } catch (err) {
      return (err as Error).message;
    }
  }
  return json;
}
