import { open, readdir, readFile, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { parseDomain } from '@proxyd/proxy-core/model';
import { type Static, Type } from 'typebox';
import { Value } from 'typebox/value';
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
 * the new complete file.
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
  async write(records: readonly ApiRouteRecord[]): Promise<void> {
    const content: StateFileContent = { format: STATE_FORMAT, routes: [...records] };
    const tmp = `${this.path}.tmp-${process.pid}-${this.#seq++}`;
    try {
      const file = await open(tmp, 'w', 0o600);
      try {
        await file.writeFile(`${JSON.stringify(content, null, 1)}\n`, 'utf8');
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

/** The parsed content, or the reason it is unusable. */
function validate(text: string): StateFileContent | string {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    return `not valid JSON: ${(err as Error).message}`;
  }
  if (!Value.Check(StateFileContent, json)) {
    const [first] = Value.Errors(StateFileContent, json);
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
