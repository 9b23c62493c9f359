import { randomBytes } from 'node:crypto';
import { link, open, readFile, rename, rm, stat, utimes } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import { CertificatesError, CertificatesErrorCode } from '../errors.js';
import { lockFileName } from './key-path.js';
import type { StorageLock } from './storage.js';

/** Timing of {@link FileLocks}; every field in milliseconds. */
export interface FileLockTiming {
  /** The clock, ms since the epoch (default `Date.now`); lock ages and wait deadlines are measured with it. */
  now: () => number;
  /** How often a held lock's file is touched (its mtime set to `now()`), ms (default 5,000). */
  refreshMs: number;
  /** A lock file not touched for longer than this is stale and taken over, ms (default 30,000). */
  staleMs: number;
  /** How often a waiter looks at the lock again, ms (default 1,000). */
  pollMs: number;
}

/** What a lock file holds: who took the lock. Its mtime is the last refresh. */
interface LockOwner {
  pid: number;
  hostname: string;
  token: string;
  /** When the lock was taken, ISO 8601 (by the holder's clock). */
  since: string;
}

/** One name's in-process queue: whether a holder in this process has it, and who waits, first first. */
interface NameQueue {
  held: boolean;
  waiters: Array<() => void>;
}

/**
 * Locks by name, across processes sharing one directory: the lock `name` is
 * the file `<dir>/<percent-encoded name>.lock`, created with O_EXCL and holding the owner's
 * pid, hostname and a random token. The holder touches it every `refreshMs`;
 * a waiter takes it over when it was not touched for `staleMs`, or at once
 * when its owner was on this host and its pid is gone. Waiters in this
 * process queue first in first out; then the holder at the head polls the
 * file every `pollMs`.
 *
 * A stale file is moved aside and checked to be the one judged stale before
 * it is removed, so two waiters that both saw it stale cannot both win.
 */
export class FileLocks {
  readonly #dir: string;
  readonly #timing: FileLockTiming;
  readonly #ensureDir: () => Promise<void>;
  readonly #queues = new Map<string, NameQueue>();

  /**
   * @param dir the lock directory (`<cert dir>/locks`)
   * @param timing the clock and intervals
   * @param ensureDir creates the lock directory (0700) and checks its mode; called before each attempt
   */
  constructor(dir: string, timing: FileLockTiming, ensureDir: () => Promise<void>) {
    this.#dir = dir;
    this.#timing = timing;
    this.#ensureDir = ensureDir;
  }

  /** Takes the lock `name`; rejects with `CERT_LOCK_TIMEOUT` after `timeoutMs` (default 60,000). */
  async lock(name: string, timeoutMs = 60_000): Promise<StorageLock> {
    const file = path.join(this.#dir, lockFileName(name));
    const deadline = this.#timing.now() + timeoutMs;
    await this.#enterQueue(name, deadline, timeoutMs);
    try {
      const owner = await this.#acquireFile(name, file, deadline, timeoutMs);
      return this.#held(name, file, owner);
    } catch (err) {
      this.#leaveQueue(name);
      throw err;
    }
  }

  async #enterQueue(name: string, deadline: number, timeoutMs: number): Promise<void> {
    let queue = this.#queues.get(name);
    if (queue === undefined) {
      queue = { held: false, waiters: [] };
      this.#queues.set(name, queue);
    }
    if (!queue.held) {
      queue.held = true;
      return;
    }
    let granted = false;
    let wake = (): void => {};
    const waiter = (): void => {
      granted = true;
      wake();
    };
    queue.waiters.push(waiter);
    while (!granted) {
      if (this.#timing.now() >= deadline) {
        queue.waiters.splice(queue.waiters.indexOf(waiter), 1);
        throw timeout(name, timeoutMs, 'another holder in this process has it');
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.#timing.pollMs);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }

  #leaveQueue(name: string): void {
    const queue = this.#queues.get(name);
    if (queue === undefined) return;
    const next = queue.waiters.shift();
    if (next !== undefined) next();
    else this.#queues.delete(name);
  }

  async #acquireFile(name: string, file: string, deadline: number, timeoutMs: number): Promise<LockOwner> {
    const owner: LockOwner = {
      pid: process.pid,
      hostname: hostname(),
      token: randomBytes(12).toString('hex'),
      since: new Date(this.#timing.now()).toISOString(),
    };
    for (;;) {
      await this.#ensureDir();
      if (await this.#tryCreate(file, owner)) return owner;
      const seen = await this.#inspect(file);
      if (seen === null) continue; // released between our create and our look: try again at once
      if (seen.stale) {
        await this.#breakStale(file, seen.ino);
        continue;
      }
      if (this.#timing.now() >= deadline) throw timeout(name, timeoutMs, describe(seen.owner));
      await new Promise((resolve) => setTimeout(resolve, this.#timing.pollMs));
    }
  }

  /** Creates the lock file with O_EXCL; false when it exists. */
  async #tryCreate(file: string, owner: LockOwner): Promise<boolean> {
    let handle: Awaited<ReturnType<typeof open>>;
    try {
      handle = await open(file, 'wx', 0o600);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw ioError(`create lock file ${file}`, err);
    }
    try {
      await handle.writeFile(`${JSON.stringify(owner)}\n`, 'utf8');
      const seconds = this.#timing.now() / 1000;
      // Not fsynced: a lock outlives no crash (a dead holder's lock on this host is broken at once, another
      // host's once stale), and an empty or missing file after one is judged by its mtime or not there at all.
      await handle.utimes(seconds, seconds);
    } catch (err) {
      await handle.close().catch(() => {});
      await rm(file, { force: true });
      throw ioError(`write lock file ${file}`, err);
    }
    await handle.close();
    return true;
  }

  /** The lock file's owner, inode and staleness; null when it is gone. */
  async #inspect(file: string): Promise<{ owner: LockOwner | null; ino: number; stale: boolean } | null> {
    let ino: number;
    let mtimeMs: number;
    let text: string;
    try {
      const st = await stat(file);
      ino = st.ino;
      mtimeMs = st.mtimeMs;
      text = await readFile(file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw ioError(`read lock file ${file}`, err);
    }
    // An owner still writing its new file leaves it empty for a moment: then the mtime alone decides.
    const owner = parseOwner(text);
    const deadOnThisHost = owner !== null && owner.hostname === hostname() && !pidAlive(owner.pid);
    const stale = deadOnThisHost || this.#timing.now() - mtimeMs > this.#timing.staleMs;
    return { owner, ino, stale };
  }

  /** Removes the stale lock file `ino`, and only it: a fresh file moved aside by mistake is put back. */
  async #breakStale(file: string, ino: number): Promise<void> {
    const aside = path.join(this.#dir, `.${path.basename(file)}.stale-${randomBytes(6).toString('hex')}`);
    try {
      await rename(file, aside);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return; // another waiter broke it first
      throw ioError(`move stale lock file ${file}`, err);
    }
    try {
      if ((await stat(aside)).ino !== ino) {
        // Another waiter broke the stale file and took the lock between our look and our move:
        // put its file back (link fails if yet another one exists, which then holds the lock).
        await link(aside, file).catch(() => {});
      }
    } finally {
      await rm(aside, { force: true });
    }
  }

  #held(name: string, file: string, owner: LockOwner): StorageLock {
    const refresh = setInterval(() => {
      void this.#refresh(file, owner).then((ours) => {
        if (!ours) clearInterval(refresh);
      });
    }, this.#timing.refreshMs);
    refresh.unref();
    let released: Promise<void> | null = null;
    return {
      release: () => {
        released ??= (async () => {
          clearInterval(refresh);
          try {
            if (await this.#owns(file, owner)) await rm(file, { force: true });
          } finally {
            this.#leaveQueue(name);
          }
        })();
        return released;
      },
    };
  }

  /** Touches the lock file if it is still ours; false when it is not (gone, or taken over). */
  async #refresh(file: string, owner: LockOwner): Promise<boolean> {
    try {
      if (!(await this.#owns(file, owner))) return false;
      const seconds = this.#timing.now() / 1000;
      await utimes(file, seconds, seconds);
      return true;
    } catch {
      return true; // a failed touch is retried at the next tick
    }
  }

  async #owns(file: string, owner: LockOwner): Promise<boolean> {
    try {
      return parseOwner(await readFile(file, 'utf8'))?.token === owner.token;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw ioError(`read lock file ${file}`, err);
    }
  }
}

function parseOwner(text: string): LockOwner | null {
  try {
    const value = JSON.parse(text) as Partial<LockOwner> | null;
    if (
      typeof value?.pid === 'number' &&
      typeof value.hostname === 'string' &&
      typeof value.token === 'string' &&
      typeof value.since === 'string'
    ) {
      return { pid: value.pid, hostname: value.hostname, token: value.token, since: value.since };
    }
  } catch {
    // not (yet) an owner record
  }
  return null;
}

/** Whether a process with `pid` exists on this host (EPERM: it exists, owned by another user). */
function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function describe(owner: LockOwner | null): string {
  return owner === null
    ? 'held by an unknown owner'
    : `held by pid ${owner.pid} on ${owner.hostname} since ${owner.since}`;
}

function timeout(name: string, timeoutMs: number, holder: string): CertificatesError {
  return new CertificatesError(
    CertificatesErrorCode.LOCK_TIMEOUT,
    `lock ${JSON.stringify(name)} not obtained within ${timeoutMs} ms: ${holder}`,
  );
}

function ioError(what: string, err: unknown): CertificatesError {
  return new CertificatesError(CertificatesErrorCode.STORAGE_IO, `cannot ${what}: ${(err as Error).message}`, {
    cause: err,
  });
}
