import { randomBytes } from 'node:crypto';
import type { Dirent, Stats } from 'node:fs';
import { mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { CertificatesError, CertificatesErrorCode } from '../errors.js';
import { FileLocks } from './file-lock.js';
import { keySegments, LOCKS_FOLDER, prefixSegments } from './key-path.js';
import type { CertificateStorage, LockOptions, StorageLock, StoreOptions } from './storage.js';

/** The cert dir when neither `--cert-dir` nor `PROXY_CERT_DIR` names one. */
export const DEFAULT_CERT_DIR = '/etc/proxy/certs';

/** The mode of every directory the file storage creates: owner only. */
export const DIR_MODE = 0o700;
/** The mode of every file the file storage writes, secret or not: owner read and write only. */
export const FILE_MODE = 0o600;

/** Options of {@link FileStorage}. */
export interface FileStorageOptions {
  /** The clock, ms since the epoch (default `Date.now`): lock ages and lock wait deadlines. */
  now?: () => number;
  /** How often a held lock's file is touched, ms (default 5,000). */
  lockRefreshMs?: number;
  /** A lock file not touched for this long is stale and taken over, ms (default 30,000). */
  lockStaleMs?: number;
  /** How often a waiter looks at a held lock again, ms (default 1,000). */
  lockPollMs?: number;
}

/**
 * {@link CertificateStorage} in a directory (the cert dir: `--cert-dir`,
 * `PROXY_CERT_DIR`, default {@link DEFAULT_CERT_DIR}). The key
 * `a/b/c.crt` is the file `<root>/a/b/c.crt`; keys that would leave the
 * root are refused (`CERT_STORAGE_INVALID_KEY`, see `keySegments`).
 *
 * - Modes: directories are created 0700 and every file is written 0600,
 *   secret or not (`StoreOptions.secret` changes nothing here): one rule
 *   lets `load` refuse any file open to others without knowing which keys
 *   are secret, and certificates are public anyway, so nothing is lost.
 * - Wider modes: a directory on a key's path (the root included) or a file
 *   with any group or other permission bit (`mode & 0o077`) is refused with
 *   `CERT_STORAGE_UNSAFE_MODE`, naming the path, its mode and the `chmod`
 *   that fixes it: `load` does not read it, `store` does not overwrite it,
 *   `list` does not descend into such a directory. `delete` removes a file
 *   whatever its mode (its directories are still checked). Nothing is ever
 *   chmod-ed silently.
 * - Writes are atomic and durable: a temp file `.<name>.tmp-…` beside the
 *   target is written and fsynced, renamed over it, and the directory
 *   fsynced (with `syncDirectory: false`, by the next store in it that
 *   syncs); a reader sees the old or the new content, and a failed write
 *   leaves the old content and no temp file. Names starting with `.` are
 *   never keys, so `list` skips temp files left by a crash.
 * - Locks are files under `<root>/locks/` (see `FileLocks`).
 */
export class FileStorage implements CertificateStorage {
  /** The absolute cert dir. */
  readonly root: string;
  readonly #locks: FileLocks;
  #seq = 0;

  /**
   * @param root the cert dir; created (0700, with missing parents) at the first use, resolved against the working directory
   * @param options the clock and lock timing
   */
  constructor(root: string, options: FileStorageOptions = {}) {
    this.root = path.resolve(root);
    this.#locks = new FileLocks(
      path.join(this.root, LOCKS_FOLDER),
      {
        now: options.now ?? Date.now,
        refreshMs: options.lockRefreshMs ?? 5_000,
        staleMs: options.lockStaleMs ?? 30_000,
        pollMs: options.lockPollMs ?? 1_000,
      },
      async () => {
        await this.#directory([LOCKS_FOLDER], true);
      },
    );
  }

  /**
   * The bytes stored under `key`, or null when there is none (a missing
   * file or a missing directory on its path). A file or directory open to
   * group or others throws `CERT_STORAGE_UNSAFE_MODE`; a path that is not a
   * regular file, or a failed read, throws `CERT_STORAGE_IO`.
   */
  async load(key: string): Promise<Buffer | null> {
    const segments = keySegments(key);
    const dir = await this.#directory(segments.slice(0, -1), false);
    if (dir === null) return null;
    const file = path.join(dir, segments.at(-1) as string);
    let handle: Awaited<ReturnType<typeof open>>;
    try {
      handle = await open(file, 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw ioError(`read ${file}`, err);
    }
    try {
      // Checked on the open handle: the mode belongs to the very file read.
      checkFile(file, await handle.stat());
      return await handle.readFile();
    } catch (err) {
      if (err instanceof CertificatesError) throw err;
      throw ioError(`read ${file}`, err);
    } finally {
      await handle.close();
    }
  }

  /**
   * Stores `value` (a string as UTF-8) under `key`, atomically and durably,
   * as a 0600 file, creating missing directories 0700. An existing file or
   * directory open to group or others throws `CERT_STORAGE_UNSAFE_MODE` and
   * is left as it is; a failed write throws `CERT_STORAGE_IO` and leaves the
   * old content.
   */
  async store(key: string, value: Buffer | string, options?: StoreOptions): Promise<void> {
    const segments = keySegments(key);
    const name = segments.at(-1) as string;
    const dir = (await this.#directory(segments.slice(0, -1), true)) as string;
    const file = path.join(dir, name);
    const existing = await statOrNull(file);
    if (existing !== null) checkFile(file, existing);
    const tmp = path.join(dir, `.${name}.tmp-${process.pid}-${this.#seq++}-${randomBytes(4).toString('hex')}`);
    try {
      const handle = await open(tmp, 'wx', FILE_MODE);
      try {
        await handle.writeFile(value);
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(tmp, file);
      if (options?.syncDirectory !== false) await syncDirectory(dir);
    } catch (err) {
      await rm(tmp, { force: true });
      throw ioError(`write ${file}`, err);
    }
  }

  /**
   * Removes `key`; a missing key is not an error. Its directories are kept
   * (empty ones hold no keys). A directory on its path open to group or
   * others throws `CERT_STORAGE_UNSAFE_MODE`; a key naming a directory, or a
   * failed removal, `CERT_STORAGE_IO`.
   */
  async delete(key: string): Promise<void> {
    const segments = keySegments(key);
    const dir = await this.#directory(segments.slice(0, -1), false);
    if (dir === null) return;
    const file = path.join(dir, segments.at(-1) as string);
    const existing = await statOrNull(file);
    if (existing === null) return;
    try {
      if (!existing.isFile()) throw new Error('not a regular file');
      await rm(file, { force: true });
      await syncDirectory(dir);
    } catch (err) {
      throw ioError(`delete ${file}`, err);
    }
  }

  /**
   * Every key under `prefix` (`''`: the whole storage; otherwise a key
   * path, a trailing `/` allowed), recursively, sorted by UTF-16 code
   * units; a prefix naming a file lists that key alone, a missing one
   * nothing. Temp files and the lock folder are not listed. A directory
   * open to group or others throws `CERT_STORAGE_UNSAFE_MODE`.
   */
  async list(prefix: string): Promise<string[]> {
    const segments = prefixSegments(prefix);
    const parent = await this.#directory(segments.slice(0, -1), false);
    if (parent === null) return [];
    const last = segments.at(-1);
    const target = last === undefined ? parent : path.join(parent, last);
    const st = await statOrNull(target);
    if (st === null) return [];
    const key = segments.join('/');
    if (st.isFile()) return [key];
    if (!st.isDirectory()) return [];
    checkDirectory(target, st);
    const keys: string[] = [];
    await this.#walk(target, key, keys);
    return keys.sort();
  }

  /**
   * Takes the lock `name` (any non-empty string, e.g. `ca/local`): the file
   * `<root>/locks/<percent-encoded name>.lock`, exclusive across processes sharing the cert
   * dir, refreshed every `lockRefreshMs` while held and taken over when
   * stale. Rejects with `CERT_LOCK_TIMEOUT` after `timeoutMs` (default 60 s).
   */
  lock(name: string, options?: LockOptions): Promise<StorageLock> {
    return this.#locks.lock(name, options?.timeoutMs);
  }

  async #walk(dir: string, key: string, out: string[]): Promise<void> {
    let entries: Dirent[];
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (err) {
      throw ioError(`list ${dir}`, err);
    }
    for (const entry of entries) {
      if (entry.name.startsWith('.')) continue; // temp files, never keys
      if (key === '' && entry.name === LOCKS_FOLDER) continue;
      const child = path.join(dir, entry.name);
      const childKey = key === '' ? entry.name : `${key}/${entry.name}`;
      if (entry.isFile()) out.push(childKey);
      else if (entry.isDirectory()) {
        const st = await statOrNull(child);
        if (st === null) continue;
        checkDirectory(child, st);
        await this.#walk(child, childKey, out);
      }
    }
  }

  /**
   * The directory `<root>/<segments…>`, every level checked to be a
   * directory with no group or other bits; missing levels are created 0700
   * when `create`, else the answer is null.
   */
  async #directory(segments: readonly string[], create: boolean): Promise<string | null> {
    let dir = this.root;
    for (let i = 0; ; i++) {
      let st = await statOrNull(dir);
      if (st === null && create) {
        try {
          // The root with its missing parents (the first store); below it, one level at a time.
          await mkdir(dir, { recursive: i === 0, mode: DIR_MODE });
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw ioError(`create ${dir}`, err);
        }
        st = await statOrNull(dir);
      }
      if (st === null) return null;
      checkDirectory(dir, st);
      const next = segments[i];
      if (next === undefined) return dir;
      dir = path.join(dir, next);
    }
  }
}

function checkDirectory(dir: string, st: Stats): void {
  if (!st.isDirectory()) {
    throw new CertificatesError(CertificatesErrorCode.STORAGE_IO, `${dir} is not a directory`);
  }
  if ((st.mode & 0o077) !== 0) throw unsafe(dir, st.mode, 'directory', DIR_MODE);
}

function checkFile(file: string, st: Stats): void {
  if (!st.isFile()) throw new CertificatesError(CertificatesErrorCode.STORAGE_IO, `${file} is not a regular file`);
  if ((st.mode & 0o077) !== 0) throw unsafe(file, st.mode, 'file', FILE_MODE);
}

function unsafe(p: string, mode: number, what: string, wanted: number): CertificatesError {
  const octal = (m: number) => `0${(m & 0o777).toString(8)}`;
  return new CertificatesError(
    CertificatesErrorCode.STORAGE_UNSAFE_MODE,
    `${p} has mode ${octal(mode)}: a ${what} in the cert dir must be open to its owner only (${octal(wanted)}); ` +
      `it is neither used nor overwritten until fixed (chmod ${octal(wanted).slice(1)} ${p})`,
  );
}

async function statOrNull(p: string): Promise<Stats | null> {
  try {
    return await stat(p);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    throw ioError(`stat ${p}`, err);
  }
}

async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

function ioError(what: string, err: unknown): CertificatesError {
  return new CertificatesError(CertificatesErrorCode.STORAGE_IO, `cannot ${what}: ${(err as Error).message}`, {
    cause: err,
  });
}
