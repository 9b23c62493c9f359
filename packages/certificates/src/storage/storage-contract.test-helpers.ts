import { describe, expect, it } from 'vitest';
import { CertificatesError, CertificatesErrorCode } from '../errors.js';
import type { CertificateStorage } from './storage.js';

/**
 * What every {@link CertificateStorage} promises, run against one backend:
 * `make()` gives a storage over an empty store (a fresh cert dir, a fresh
 * Redis key prefix), `other()` a second storage over the same store (another
 * process's view), for the locks.
 */
export function storageContract(
  backend: string,
  make: () => Promise<CertificateStorage>,
  other: (lockPollMs: number) => Promise<CertificateStorage>,
): void {
  describe(`${backend}: the CertificateStorage contract`, () => {
    it('round-trips strings and bytes; a missing key loads as null', async () => {
      const storage = await make();
      expect(await storage.load('certificates/acme/a.test/a.test.crt')).toBeNull();
      await storage.store('certificates/acme/a.test/a.test.crt', '-----BEGIN CERTIFICATE-----\n');
      await storage.store('accounts/acme/key', Buffer.from([0, 1, 255]), { secret: true });
      expect((await storage.load('certificates/acme/a.test/a.test.crt'))?.toString()).toBe(
        '-----BEGIN CERTIFICATE-----\n',
      );
      expect(await storage.load('accounts/acme/key')).toEqual(Buffer.from([0, 1, 255]));
      expect(await storage.load('certificates/acme/a.test/a.test.key')).toBeNull();
    });

    it('replaces a value; deletes a key, and deleting a missing key is not an error', async () => {
      const storage = await make();
      await storage.store('meta/a.test.json', 'old');
      await storage.store('meta/a.test.json', 'new');
      expect((await storage.load('meta/a.test.json'))?.toString()).toBe('new');
      await storage.delete('meta/a.test.json');
      expect(await storage.load('meta/a.test.json')).toBeNull();
      expect(await storage.list('meta')).toEqual([]);
      await storage.delete('meta/a.test.json');
      await storage.delete('missing/dir/key');
    });

    it('a reader racing a writer sees the old or the new value, never a part', async () => {
      const storage = await make();
      const a = Buffer.alloc(1 << 20, 'a');
      const b = Buffer.alloc(1 << 20, 'b');
      await storage.store('big', a);
      let writing = true;
      const writer = (async () => {
        for (let i = 0; i < 20; i++) await storage.store('big', i % 2 === 0 ? b : a);
        writing = false;
      })();
      let reads = 0;
      while (writing) {
        const seen = await storage.load('big');
        expect(seen !== null && (seen.equals(a) || seen.equals(b))).toBe(true);
        reads++;
      }
      await writer;
      expect(reads).toBeGreaterThan(0);
    });

    it('lists every key under a prefix, recursively and sorted, without locks', async () => {
      const storage = await make();
      for (const key of [
        'certificates/z.test/z.test.crt',
        'certificates/a.test/a.test.key',
        'certificates/a.test/a.test.crt',
        'certificates/a.test/meta/a.test.json',
        'certs-other/x',
        'certificates-x/y',
        'accounts/acme/key',
      ]) {
        await storage.store(key, key);
      }
      const held = await storage.lock('a.test');
      expect(await storage.list('certificates')).toEqual([
        'certificates/a.test/a.test.crt',
        'certificates/a.test/a.test.key',
        'certificates/a.test/meta/a.test.json',
        'certificates/z.test/z.test.crt',
      ]);
      expect(await storage.list('certificates/')).toEqual(await storage.list('certificates'));
      expect(await storage.list('')).toEqual([
        'accounts/acme/key',
        'certificates-x/y',
        'certificates/a.test/a.test.crt',
        'certificates/a.test/a.test.key',
        'certificates/a.test/meta/a.test.json',
        'certificates/z.test/z.test.crt',
        'certs-other/x',
      ]);
      expect(await storage.list('certificates/a.test/a.test.crt')).toEqual(['certificates/a.test/a.test.crt']);
      expect(await storage.list('cert')).toEqual([]);
      expect(await storage.list('missing/deeper')).toEqual([]);
      await held.release();
    });

    it.each([
      ['empty', ''],
      ['absolute', '/etc/passwd'],
      ['parent', '../outside'],
      ['empty segment', 'a//b'],
      ['trailing slash', 'a/'],
      ['dot segment', 'a/./b'],
      ['hidden name', 'a/.b.tmp-1'],
      ['NUL', 'a\0b'],
      ['the lock folder', 'locks/a.test.lock'],
    ])('refuses a key that is %s, on every operation, storing nothing', async (_, key) => {
      const storage = await make();
      for (const attempt of [() => storage.load(key), () => storage.store(key, 'x'), () => storage.delete(key)]) {
        const err = await attempt().then(
          () => null,
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(CertificatesError);
        expect((err as CertificatesError).code).toBe(CertificatesErrorCode.STORAGE_INVALID_KEY);
      }
      expect(await storage.list('')).toEqual([]);
    });

    it('a lock excludes a second storage on the same store until released; names are independent', async () => {
      const first = await make();
      const second = await other(5);
      const held = await first.lock('a.test');
      const b = await second.lock('b.test', { timeoutMs: 0 });
      let settled = false;
      const waiting = second.lock('a.test').then((lock) => {
        settled = true;
        return lock;
      });
      await new Promise((resolve) => setTimeout(resolve, 100)); // many polls, all refused
      expect(settled).toBe(false);
      await held.release();
      await held.release(); // twice is fine
      await (await waiting).release();
      await b.release();
    });

    it('rejects with CERT_LOCK_TIMEOUT naming the holder', async () => {
      const first = await make();
      const second = await other(5);
      const held = await first.lock('a.test');
      const err = await second.lock('a.test', { timeoutMs: 50 }).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(CertificatesError);
      expect((err as CertificatesError).code).toBe(CertificatesErrorCode.LOCK_TIMEOUT);
      expect((err as CertificatesError).message).toContain(`held by pid ${process.pid}`);
      await held.release();
    });
  });
}
