import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { CertificatesError, CertificatesErrorCode } from '../errors.js';
import { FileStorage } from './file-storage.js';

let root: string;
beforeEach(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'proxyd-locks-'));
});
afterEach(() => rm(root, { recursive: true, force: true }));

/** A fake clock that also counts how often it was read (each lock attempt reads it). */
function fakeClock(start = Date.now()) {
  const clock = {
    t: start,
    reads: 0,
    now: () => {
      clock.reads++;
      return clock.t;
    },
  };
  return clock;
}

/** Resolves to whether `promise` settled; `promise` keeps running. */
function tracked<T>(promise: Promise<T>) {
  const state = { settled: false, promise };
  promise.then(
    () => (state.settled = true),
    () => (state.settled = true),
  );
  return state;
}

const lockFile = (name: string) => path.join(root, 'locks', `${name}.lock`);

describe('FileStorage.lock', () => {
  it('holds the lock in <root>/locks/<name>.lock (0600: pid, hostname) and removes it on release, twice is fine', async () => {
    const storage = new FileStorage(root);
    const lock = await storage.lock('a.test');
    expect((await stat(lockFile('a.test'))).mode & 0o777).toBe(0o600);
    expect((await stat(path.join(root, 'locks'))).mode & 0o777).toBe(0o700);
    const owner = JSON.parse(await readFile(lockFile('a.test'), 'utf8')) as { pid: number; hostname: string };
    expect(owner).toMatchObject({ pid: process.pid, hostname: hostname() });
    await lock.release();
    await lock.release();
    expect(await readdir(path.join(root, 'locks'))).toEqual([]);
  });

  it('excludes a second FileStorage on the same dir until the first releases', async () => {
    const first = new FileStorage(root);
    const clock = fakeClock();
    const second = new FileStorage(root, { now: clock.now, lockPollMs: 5 });
    const held = await first.lock('a.test');
    const waiting = tracked(second.lock('a.test'));
    await vi.waitFor(() => expect(clock.reads).toBeGreaterThan(5)); // several polls, all refused
    expect(waiting.settled).toBe(false);
    await held.release();
    const next = await waiting.promise;
    expect(JSON.parse(await readFile(lockFile('a.test'), 'utf8'))).toMatchObject({ pid: process.pid });
    await next.release();
  });

  it('different names do not exclude each other', async () => {
    const storage = new FileStorage(root);
    const a = await storage.lock('a.test');
    const b = await storage.lock('b.test');
    await Promise.all([a.release(), b.release()]);
  });

  it('rejects with CERT_LOCK_TIMEOUT naming the holder once timeoutMs passed on the clock', async () => {
    const first = new FileStorage(root);
    const clock = fakeClock();
    const second = new FileStorage(root, { now: clock.now, lockPollMs: 5 });
    const held = await first.lock('a.test');
    const waiting = tracked(second.lock('a.test', { timeoutMs: 10_000 }));
    await vi.waitFor(() => expect(clock.reads).toBeGreaterThan(3));
    expect(waiting.settled).toBe(false);
    clock.t += 10_000;
    const err = await waiting.promise.then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(CertificatesError);
    expect((err as CertificatesError).code).toBe(CertificatesErrorCode.LOCK_TIMEOUT);
    expect((err as CertificatesError).message).toContain(`held by pid ${process.pid} on ${hostname()}`);
    await held.release();
  });

  it('queues waiters in this process first in, first out; a waiter that timed out leaves the queue', async () => {
    const clock = fakeClock();
    const storage = new FileStorage(root, { now: clock.now, lockPollMs: 5 });
    const order: string[] = [];
    const first = await storage.lock('a.test');
    const impatient = tracked(storage.lock('a.test', { timeoutMs: 1_000 }));
    const second = storage.lock('a.test').then((l) => {
      order.push('second');
      return l;
    });
    const third = storage.lock('a.test').then((l) => {
      order.push('third');
      return l;
    });
    clock.t += 1_000;
    await expect(impatient.promise).rejects.toMatchObject({ code: CertificatesErrorCode.LOCK_TIMEOUT });
    expect(order).toEqual([]);
    await first.release();
    const secondLock = await second;
    expect(order).toEqual(['second']);
    await secondLock.release();
    await (await third).release();
    expect(order).toEqual(['second', 'third']);
  });

  it('takes over a lock not refreshed for lockStaleMs, and the old holder does not remove the new lock', async () => {
    const clock = fakeClock();
    const old = new FileStorage(root, { now: clock.now, lockRefreshMs: 3_600_000 });
    const stale = await old.lock('a.test');
    clock.t += 30_001;
    const taker = new FileStorage(root, { now: clock.now, lockPollMs: 5 });
    const lock = await taker.lock('a.test', { timeoutMs: 0 });
    const owner = await readFile(lockFile('a.test'), 'utf8');
    await stale.release();
    expect(await readFile(lockFile('a.test'), 'utf8')).toBe(owner);
    await lock.release();
    expect(await readdir(path.join(root, 'locks'))).toEqual([]);
  });

  it('a held lock is refreshed, so it does not go stale while its holder lives', async () => {
    const clock = fakeClock();
    const holder = new FileStorage(root, { now: clock.now, lockRefreshMs: 10 });
    const held = await holder.lock('a.test');
    const created = (await stat(lockFile('a.test'))).mtimeMs;
    clock.t += 25_000;
    await vi.waitFor(async () => expect((await stat(lockFile('a.test'))).mtimeMs).toBeGreaterThan(created + 20_000));
    clock.t += 25_000; // 50 s after it was taken, 25 s after the last refresh
    const other = new FileStorage(root, { now: clock.now });
    await expect(other.lock('a.test', { timeoutMs: 0 })).rejects.toMatchObject({
      code: CertificatesErrorCode.LOCK_TIMEOUT,
    });
    await held.release();
  });

  it('takes over at once a lock whose owner on this host is gone', async () => {
    const deadPid = Number(execFileSync(process.execPath, ['-p', 'process.pid'], { encoding: 'utf8' }));
    await mkdir(path.join(root, 'locks'), { mode: 0o700 });
    const since = new Date().toISOString();
    await writeFile(lockFile('a.test'), JSON.stringify({ pid: deadPid, hostname: hostname(), token: 'x', since }), {
      mode: 0o600,
    });
    const lock = await new FileStorage(root).lock('a.test', { timeoutMs: 0 });
    expect(JSON.parse(await readFile(lockFile('a.test'), 'utf8'))).toMatchObject({ pid: process.pid });
    await lock.release();
  });

  it('keeps any lock name in one file of the lock folder; refuses an empty or overlong one', async () => {
    const storage = new FileStorage(root);
    const locks = await Promise.all(['ca/local', '../a', '..'].map((name) => storage.lock(name, { timeoutMs: 0 })));
    expect((await readdir(path.join(root, 'locks'))).sort()).toEqual(['..%2Fa.lock', '...lock', 'ca%2Flocal.lock']);
    expect(await readdir(root)).toEqual(['locks']);
    await Promise.all(locks.map((lock) => lock.release()));
    for (const name of ['', 'x'.repeat(201), '/'.repeat(70)]) {
      await expect(storage.lock(name)).rejects.toMatchObject({ code: CertificatesErrorCode.STORAGE_INVALID_KEY });
    }
  });
});

/**
 * A second Node process that takes the lock with the same FileStorage
 * (sources loaded with Node's type stripping; `.js` specifiers resolved to
 * the `.ts` files), prints `locked`, and releases when told on stdin.
 */
function lockInChild(name: string): ChildProcess {
  const script = `
    import { registerHooks } from 'node:module';
    registerHooks({
      resolve(specifier, context, next) {
        try { return next(specifier, context); } catch (err) {
          if (!specifier.startsWith('.') || !specifier.endsWith('.js')) throw err;
          return next(specifier.slice(0, -3) + '.ts', context);
        }
      },
    });
    const { FileStorage } = await import(${JSON.stringify(new URL('./file-storage.ts', import.meta.url).href)});
    const lock = await new FileStorage(${JSON.stringify(root)}).lock(${JSON.stringify(name)});
    process.stdout.write('locked\\n');
    process.stdin.once('data', async () => { await lock.release(); process.stdout.write('released\\n'); process.exit(0); });
  `;
  return spawn(process.execPath, ['--input-type=module', '-e', script], {
    env: { ...process.env, NODE_OPTIONS: '' },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
}

async function line(child: ChildProcess): Promise<string> {
  const [chunk] = (await once(child.stdout as NodeJS.ReadableStream, 'data')) as [Buffer];
  return chunk.toString().trim();
}

describe('FileStorage.lock across processes', () => {
  it('waits while another process holds the lock, and gets it once that process releases', async () => {
    const child = lockInChild('a.test');
    try {
      expect(await line(child)).toBe('locked');
      const clock = fakeClock();
      const waiting = tracked(new FileStorage(root, { now: clock.now, lockPollMs: 5 }).lock('a.test'));
      await vi.waitFor(() => expect(clock.reads).toBeGreaterThan(5));
      expect(waiting.settled).toBe(false);
      child.stdin?.write('release\n');
      expect(await line(child)).toBe('released');
      await (await waiting.promise).release();
    } finally {
      child.kill();
    }
  });

  it('takes over at once the lock of a process that was killed while holding it', async () => {
    const child = lockInChild('a.test');
    expect(await line(child)).toBe('locked');
    child.kill('SIGKILL');
    await once(child, 'exit');
    const lock = await new FileStorage(root).lock('a.test', { timeoutMs: 0 });
    await lock.release();
  });
});
