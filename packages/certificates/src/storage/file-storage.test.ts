import { readlinkSync } from 'node:fs';
import { chmod, type FileHandle, mkdir, mkdtemp, open, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { CertificatesError, CertificatesErrorCode } from '../errors.js';
import { storeCertificate } from '../manager/stored-certificate.js';
import { FileStorage } from './file-storage.js';
import { storageContract } from './storage-contract.test-helpers.js';

let tmp: string;
let root: string;
beforeEach(async () => {
  tmp = await mkdtemp(path.join(tmpdir(), 'proxyd-certs-'));
  root = path.join(tmp, 'etc', 'certs');
});
afterEach(() => rm(tmp, { recursive: true, force: true }));

storageContract(
  'FileStorage',
  async () => new FileStorage(root),
  async (lockPollMs) => new FileStorage(root, { lockPollMs }),
);

const mode = async (p: string) => (await stat(p)).mode & 0o777;

/** The CertificatesError that `attempt` rejects with (started only here, so no rejection goes unhandled). */
async function rejection(attempt: () => Promise<unknown>): Promise<CertificatesError> {
  const err = await attempt().then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(CertificatesError);
  return err as CertificatesError;
}

describe('FileStorage: load and store', () => {
  it('creates the root and every directory 0700, and writes every file 0600, secret or not', async () => {
    const storage = new FileStorage(root);
    await storage.store('certificates/acme/a.test/a.test.crt', 'cert');
    await storage.store('certificates/acme/a.test/a.test.key', 'key', { secret: true });
    for (const dir of [
      path.join(tmp, 'etc'),
      root,
      `${root}/certificates`,
      `${root}/certificates/acme`,
      `${root}/certificates/acme/a.test`,
    ]) {
      expect([dir, await mode(dir)]).toEqual([dir, 0o700]);
    }
    expect(await mode(`${root}/certificates/acme/a.test/a.test.crt`)).toBe(0o600);
    expect(await mode(`${root}/certificates/acme/a.test/a.test.key`)).toBe(0o600);
  });

  it('replaces a value and leaves no temp file beside it', async () => {
    const storage = new FileStorage(root);
    await storage.store('meta/a.test.json', 'old');
    await storage.store('meta/a.test.json', 'new');
    expect((await storage.load('meta/a.test.json'))?.toString()).toBe('new');
    expect(await readdir(`${root}/meta`)).toEqual(['a.test.json']);
  });

  it('leaves no temp file behind after a burst of replacing writes (the race itself: the shared contract)', async () => {
    const storage = new FileStorage(root);
    await Promise.all(Array.from({ length: 20 }, (_, i) => storage.store('big', Buffer.alloc(1 << 16, i))));
    expect(await readdir(root)).toEqual(['big']);
  });

  it('does not list a temp file left by a crash, and stores over it', async () => {
    const storage = new FileStorage(root);
    await storage.store('meta/a.json', 'one');
    await writeFile(`${root}/meta/.a.json.tmp-999-0-dead`, 'partial', { mode: 0o600 });
    expect(await storage.list('')).toEqual(['meta/a.json']);
    await storage.store('meta/a.json', 'two');
    expect((await storage.load('meta/a.json'))?.toString()).toBe('two');
  });

  it('refuses to store over a directory, leaving it and writing no temp file', async () => {
    const storage = new FileStorage(root);
    await storage.store('meta/a.json', 'old');
    await mkdir(`${root}/meta/b.json/inner`, { recursive: true, mode: 0o700 });
    const err = await rejection(() => storage.store('meta/b.json', 'new'));
    expect(err.code).toBe(CertificatesErrorCode.STORAGE_IO);
    expect(err.message).toContain(`${root}/meta/b.json is not a regular file`);
    expect((await readdir(`${root}/meta`)).sort()).toEqual(['a.json', 'b.json']);
    expect(await readdir(`${root}/meta/b.json`)).toEqual(['inner']);
  });
});

describe('FileStorage: fsyncs (issue 30)', () => {
  /** The path of every handle fsynced while `fn` runs (Linux: /proc/self/fd), temp files by their own names. */
  async function fsyncedDuring(fn: () => Promise<unknown>): Promise<string[]> {
    const probe = await open(tmp, 'r');
    const proto = Object.getPrototypeOf(probe) as FileHandle;
    await probe.close();
    const original = proto.sync;
    const synced: string[] = [];
    const spy = vi.spyOn(proto, 'sync').mockImplementation(function (this: FileHandle) {
      synced.push(readlinkSync(`/proc/self/fd/${this.fd}`));
      return original.call(this);
    });
    try {
      await fn();
    } finally {
      spy.mockRestore();
    }
    return synced;
  }

  it('fsyncs a stored file and then its directory', async () => {
    const storage = new FileStorage(root);
    await storage.store('certificates/local/a.test/a.test.crt', 'old');
    const synced = await fsyncedDuring(() => storage.store('certificates/local/a.test/a.test.crt', 'new'));
    expect(synced).toHaveLength(2);
    expect(path.basename(synced[0] ?? '')).toMatch(/^\.a\.test\.crt\.tmp-/);
    expect(synced[1]).toBe(`${root}/certificates/local/a.test`);
  });

  it("fsyncs a certificate's three files, then their directory once", async () => {
    const storage = new FileStorage(root);
    const metadata = {
      name: 'a.test',
      issuer: 'local',
      notBefore: 0,
      notAfter: 1,
      ari: null,
      lastError: null,
      nextAttemptAt: null,
      backoff: null,
      validationFailures: [],
    };
    const synced = await fsyncedDuring(() =>
      storeCertificate(storage, 'local', { certPem: 'cert', keyPem: 'key' }, metadata, {
        certificate: true,
        metadata: true,
      }),
    );
    const dir = `${root}/certificates/local/a.test`;
    expect(synced.filter((p) => p === dir)).toHaveLength(1);
    expect(synced.at(-1)).toBe(dir);
    expect(synced.filter((p) => p !== dir).map((p) => path.basename(p).replace(/\.tmp-.*/, ''))).toEqual([
      '.a.test.key',
      '.a.test.crt',
      '.a.test.json',
    ]);
    expect((await readdir(dir)).sort()).toEqual(['a.test.crt', 'a.test.json', 'a.test.key']);
  });

  it('does not fsync a lock file', async () => {
    const storage = new FileStorage(root);
    await storage.store('x', 'y');
    const synced = await fsyncedDuring(async () => {
      const lock = await storage.lock('a.test');
      await lock.release();
    });
    expect(synced).toEqual([]);
  });
});

describe('FileStorage: wider modes', () => {
  it('refuses a file open to others on load and on store, names path and mode, and leaves it as it is', async () => {
    const storage = new FileStorage(root);
    await storage.store('certificates/a.test.key', 'secret', { secret: true });
    const file = `${root}/certificates/a.test.key`;
    await chmod(file, 0o644);
    for (const attempt of [
      () => storage.load('certificates/a.test.key'),
      () => storage.store('certificates/a.test.key', 'x'),
    ]) {
      const err = await rejection(attempt);
      expect(err.code).toBe(CertificatesErrorCode.STORAGE_UNSAFE_MODE);
      expect(err.message).toContain(file);
      expect(err.message).toContain('0644');
    }
    expect(await readFile(file, 'utf8')).toBe('secret');
    expect(await mode(file)).toBe(0o644);
  });

  it('refuses a root or a folder open to others, naming it, and never chmods it', async () => {
    const storage = new FileStorage(root);
    await storage.store('certificates/a.test.crt', 'cert');
    await chmod(root, 0o777);
    for (const attempt of [
      () => storage.load('certificates/a.test.crt'),
      () => storage.store('other', 'x'),
      () => storage.list(''),
      () => storage.lock('a.test'),
    ]) {
      const err = await rejection(attempt);
      expect(err.code).toBe(CertificatesErrorCode.STORAGE_UNSAFE_MODE);
      expect(err.message).toContain(`${root} has mode 0777`);
    }
    expect(await mode(root)).toBe(0o777);
    await chmod(root, 0o700);
    await chmod(`${root}/certificates`, 0o755);
    const err = await rejection(() => storage.list(''));
    expect(err.message).toContain(`${root}/certificates has mode 0755`);
    await expect(storage.load('certificates/a.test.crt')).rejects.toThrow(/0755/);
  });

  it('deletes a file whatever its mode; deleting a missing key is not an error', async () => {
    const storage = new FileStorage(root);
    await storage.store('a/b', 'x');
    await chmod(`${root}/a/b`, 0o666);
    await storage.delete('a/b');
    expect(await storage.load('a/b')).toBeNull();
    await storage.delete('a/b');
    await storage.delete('missing/dir/key');
  });
});

describe('FileStorage: keys', () => {
  it.each([
    ['empty', ''],
    ['absolute', '/etc/passwd'],
    ['parent', '../outside'],
    ['parent inside', 'a/../../outside'],
    ['empty segment', 'a//b'],
    ['trailing slash', 'a/'],
    ['dot segment', 'a/./b'],
    ['hidden name (temp files)', 'a/.b.tmp-1'],
    ['backslash', 'a\\..\\b'],
    ['NUL', 'a\0b'],
    ['the lock folder', 'locks/a.test.lock'],
  ])('refuses a key that is %s, on every operation, creating nothing', async (_, key) => {
    const storage = new FileStorage(root);
    for (const attempt of [() => storage.load(key), () => storage.store(key, 'x'), () => storage.delete(key)]) {
      expect((await rejection(attempt)).code).toBe(CertificatesErrorCode.STORAGE_INVALID_KEY);
    }
    expect(await readdir(tmp)).toEqual([]);
  });

  it('refuses a list prefix that escapes the root', async () => {
    const storage = new FileStorage(root);
    expect((await rejection(() => storage.list('../'))).code).toBe(CertificatesErrorCode.STORAGE_INVALID_KEY);
    expect((await rejection(() => storage.list('/'))).code).toBe(CertificatesErrorCode.STORAGE_INVALID_KEY);
  });
});

describe('FileStorage: list', () => {
  it('lists nothing in a cert dir that does not exist yet, and does not create it', async () => {
    expect(await new FileStorage(root).list('')).toEqual([]);
    expect(await readdir(tmp)).toEqual([]);
  });
});
