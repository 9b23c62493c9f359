import { chmodSync, existsSync, renameSync, rmSync } from 'node:fs';
import type { DatabaseSync } from 'node:sqlite';
import { HistoryError } from './errors.js';
import { prepareSchema, SCHEMA_VERSION } from './schema.js';
import { DEFAULT_MAX_BYTES, DEFAULT_RETENTION, HistoryStore } from './store.js';
import type { Retention } from './types.js';

/** What {@link openHistory} reports (a pino logger fits). */
export interface HistoryLog {
  error(fields: Record<string, unknown>, message: string): void;
  info?(fields: Record<string, unknown>, message: string): void;
}

/** Options of {@link openHistory}. */
export interface HistoryOptions {
  /** The database file, e.g. `<state dir>/history.db` (created with mode 0600; its directory must exist). */
  file: string;
  /** How long each tier is kept, ms (default {@link DEFAULT_RETENTION}: 48 h, 90 days, days until the bound). */
  retention?: Partial<Retention>;
  /** Size bound of the file, bytes (default {@link DEFAULT_MAX_BYTES}, 256 MB; at least 1 MB). */
  maxBytes?: number;
  /** Clock, ms since the epoch (tests). */
  now?: () => number;
  /** Where a database set aside is reported (default: nowhere). */
  log?: HistoryLog;
}

/** A database that failed its check on open, and where it went. */
export interface SetAside {
  /** The path it was moved to: `<file>.corrupt-<epoch ms>` (its WAL beside it, `-wal` appended). */
  copy: string;
  reason: string;
}

/**
 * Opens (or creates) the history database and checks it: `PRAGMA
 * quick_check` (every page, the b-trees' order and shape), the schema
 * version. A file that fails — not a database, damaged, of another schema
 * version — is moved aside to `<file>.corrupt-<ts>` with an error on `log`,
 * and a new database is started: history never keeps the daemon from
 * starting. Throws `HISTORY_UNREADABLE` only when even a new file cannot be
 * created (the directory is missing or not writable).
 */
export async function openHistory(options: HistoryOptions): Promise<HistoryStore & { setAside: SetAside | null }> {
  const retention: Retention = { ...DEFAULT_RETENTION, ...options.retention };
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
  checkOptions(retention, maxBytes);
  const now = options.now ?? Date.now;
  // node:sqlite loads with the first database: a daemon with `history off` never loads it (issue 32).
  const { DatabaseSync } = await import('node:sqlite');
  let setAside: SetAside | null = null;
  let db: DatabaseSync;
  try {
    db = openChecked(DatabaseSync, options.file);
  } catch (err) {
    const reason = (err as Error).message;
    const copy = `${options.file}.corrupt-${now()}`;
    moveAside(options.file, copy);
    setAside = { copy, reason };
    options.log?.error(
      { file: options.file, copy, reason },
      `history database failed its check (${reason}): moved aside to ${copy}, starting a new one`,
    );
    try {
      db = openChecked(DatabaseSync, options.file);
    } catch (again) {
      throw new HistoryError('HISTORY_UNREADABLE', `${options.file}: ${(again as Error).message}`, { cause: again });
    }
  }
  const store = new HistoryStore(db, options.file, { retention, maxBytes, now }) as HistoryStore & {
    setAside: SetAside | null;
  };
  store.setAside = setAside;
  return store;
}

function openChecked(Database: typeof DatabaseSync, file: string): DatabaseSync {
  const db = new Database(file, { timeout: 5000 });
  try {
    const before = prepareSchema(db);
    if (before !== 0 && before !== SCHEMA_VERSION)
      throw new Error(`schema version ${before}, this proxyd reads ${SCHEMA_VERSION}`);
    const check = db.prepare('PRAGMA quick_check').all() as Array<{ quick_check: string }>;
    const problems = check.map((r) => r.quick_check).filter((line) => line !== 'ok');
    if (problems.length > 0) throw new Error(`quick_check: ${problems.slice(0, 3).join('; ')}`);
    for (const table of ['domains', 'series', 'sketches', 'breakdowns', 'vitals', 'salts', 'meta']) {
      db.prepare(`SELECT 1 FROM ${table} LIMIT 1`).get();
    }
  } catch (err) {
    db.close();
    throw err;
  }
  chmodSync(file, 0o600);
  return db;
}

function moveAside(file: string, copy: string): void {
  for (const suffix of ['', '-wal']) {
    if (existsSync(file + suffix)) renameSync(file + suffix, copy + suffix);
  }
  rmSync(`${file}-shm`, { force: true });
}

function checkOptions(retention: Retention, maxBytes: number): void {
  const bad = (detail: string) => new HistoryError('HISTORY_BAD_OPTION', detail);
  if (!Number.isSafeInteger(maxBytes) || maxBytes < 1_000_000) throw bad(`maxBytes ${maxBytes}: at least 1,000,000`);
  if (!Number.isSafeInteger(retention.minute) || retention.minute < 3_600_000)
    throw bad(`minute retention ${retention.minute} ms: at least 1 h`);
  if (!Number.isSafeInteger(retention.hour) || retention.hour < 86_400_000)
    throw bad(`hour retention ${retention.hour} ms: at least 1 day`);
  if (retention.day !== null && (!Number.isSafeInteger(retention.day) || retention.day < 86_400_000))
    throw bad(`day retention ${retention.day} ms: at least 1 day, or null`);
}
