import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type RedisStorageConfig, redisStorageDefaults } from '@proxyd/model';
import { type StartedRedis, startRedis } from '@proxyd/test-peers';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { CertificatesError, CertificatesErrorCode } from '../errors.js';
import { openRedisStorage } from './redis-connect.js';
import { RedisStorage, type RedisStorageOptions } from './redis-storage.js';
import { storageContract } from './storage-contract.test-helpers.js';

let redis: StartedRedis;
let dir: string;
const opened: RedisStorage[] = [];
beforeAll(async () => {
  redis = await startRedis();
  dir = await mkdtemp(path.join(tmpdir(), 'proxyd-redis-storage-'));
});
afterAll(async () => {
  await Promise.all(opened.map((storage) => storage.close()));
  await redis?.stop();
  await rm(dir, { recursive: true, force: true });
});

/** A storage on the test's Redis (its own client), under `prefix`. */
function storageAt(prefix: string, options: RedisStorageOptions = {}, port = redis.port): RedisStorage {
  const storage = new RedisStorage(new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 2 }), {
    keyPrefix: prefix,
    ...options,
  });
  opened.push(storage);
  return storage;
}

let lastPrefix = '';
storageContract(
  'RedisStorage',
  async () => {
    lastPrefix = `t${randomBytes(6).toString('hex')}`;
    return storageAt(lastPrefix);
  },
  async (lockPollMs) => storageAt(lastPrefix, { lockPollMs }),
);

const PEM =
  '-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg\n-----END PRIVATE KEY-----\n';

describe('RedisStorage: layout', () => {
  it('keeps values at <prefix>:value:<key> and the index at <prefix>:keys; prefixes do not see each other', async () => {
    const a = storageAt('fleet-a');
    const b = storageAt('fleet-b');
    await a.store('certificates/local/a.test/a.test.crt', 'cert');
    expect(redis.cli('GET', 'fleet-a:value:certificates/local/a.test/a.test.crt')).toBe('cert');
    expect(redis.cli('ZRANGE', 'fleet-a:keys', '0', '-1')).toBe('certificates/local/a.test/a.test.crt');
    expect(await b.list('')).toEqual([]);
    expect(await b.load('certificates/local/a.test/a.test.crt')).toBeNull();
  });
});

describe('RedisStorage: encryption at rest', () => {
  const key = randomBytes(32);

  it('stores a sealed value that is not the PEM, and loads the PEM', async () => {
    const storage = storageAt('enc1', { encryptionKey: key });
    await storage.store('certificates/local/a.test/a.test.key', PEM, { secret: true });
    const raw = redis.cli('GET', 'enc1:value:certificates/local/a.test/a.test.key');
    expect(raw).not.toContain('PRIVATE KEY');
    expect(raw).not.toContain('MIGHAgEA');
    expect((await storage.load('certificates/local/a.test/a.test.key'))?.toString()).toBe(PEM);
    // A random nonce per write: the same value stored twice is sealed differently.
    await storage.store('certificates/local/a.test/a.test.key', PEM, { secret: true });
    expect(redis.cli('GET', 'enc1:value:certificates/local/a.test/a.test.key')).not.toBe(raw);
  });

  it('refuses a tampered value, a value moved under another key, or one read with another key or none', async () => {
    const storage = storageAt('enc2', { encryptionKey: key });
    await storage.store('accounts/acme/key', PEM, { secret: true });
    const client = new Redis({ host: '127.0.0.1', port: redis.port });
    try {
      const sealed = (await client.getBuffer('enc2:value:accounts/acme/key')) as Buffer;
      const tampered = Buffer.from(sealed);
      tampered[tampered.length - 1] = (tampered.at(-1) as number) ^ 1;
      await client.set('enc2:value:accounts/acme/key', tampered);
      await client.set('enc2:value:accounts/other/key', sealed);
      await client.zadd('enc2:keys', 0, 'accounts/other/key');
    } finally {
      client.disconnect();
    }
    const attempts: [RedisStorage, string, string][] = [
      [storage, 'accounts/acme/key', 'it was altered'],
      [storage, 'accounts/other/key', 'it was altered, or sealed with another encryption key or under another key'],
      [
        storageAt('enc2', { encryptionKey: randomBytes(32) }),
        'accounts/other/key',
        'sealed with another encryption key',
      ],
      [storageAt('enc2'), 'accounts/other/key', 'no encryption_key_file is configured'],
    ];
    for (const [reader, storageKey, why] of attempts) {
      const err = await reader.load(storageKey).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(CertificatesError);
      expect((err as CertificatesError).code).toBe(CertificatesErrorCode.STORAGE_DECRYPT_FAILED);
      expect((err as CertificatesError).message).toContain(why);
    }
  });

  it('still reads a value written before encryption was configured', async () => {
    await storageAt('enc3').store('certificates/local/a.test/a.test.crt', 'plain');
    const storage = storageAt('enc3', { encryptionKey: key });
    expect((await storage.load('certificates/local/a.test/a.test.crt'))?.toString()).toBe('plain');
  });

  it('takes the key from encryption_key_file (base64, hex or raw); a wrong length is a clear start error', async () => {
    const config: RedisStorageConfig = {
      ...redisStorageDefaults(),
      url: redis.url,
      key_prefix: 'enc4',
      encryption_key_file: path.join(dir, 'storage.key'),
    };
    for (const content of [`${key.toString('base64')}\n`, key.toString('hex'), key]) {
      await writeFile(path.join(dir, 'storage.key'), content);
      const storage = await openRedisStorage(config);
      opened.push(storage);
      await storage.store('a', PEM);
      expect((await storageAt('enc4', { encryptionKey: key }).load('a'))?.toString()).toBe(PEM);
    }
    await writeFile(path.join(dir, 'storage.key'), 'too short');
    await expect(openRedisStorage(config)).rejects.toMatchObject({
      code: CertificatesErrorCode.STORAGE_CONFIG_INVALID,
      message: expect.stringContaining('holds no 256-bit key'),
    });
    await expect(
      openRedisStorage({ ...config, encryption_key_file: null, password: '{env.PROXYD_TEST_UNSET}' }, { env: {} }),
    ).rejects.toMatchObject({
      code: CertificatesErrorCode.STORAGE_CONFIG_INVALID,
      message: expect.stringContaining('the environment variable PROXYD_TEST_UNSET is not set'),
    });
  });
});

describe('RedisStorage: locks', () => {
  it('a lock is SET with an expiry, extended while held, and deleted on release', async () => {
    const storage = storageAt('lk1', { lockTtlMs: 1_000, lockRefreshMs: 100 });
    const held = await storage.lock('a.test');
    const owner = JSON.parse(redis.cli('GET', 'lk1:lock:a.test')) as { pid: number; token: string };
    expect(owner.pid).toBe(process.pid);
    expect(Number(redis.cli('PTTL', 'lk1:lock:a.test'))).toBeLessThanOrEqual(1_000);
    await new Promise((resolve) => setTimeout(resolve, 1_500)); // longer than the TTL: refreshed meanwhile
    expect(JSON.parse(redis.cli('GET', 'lk1:lock:a.test'))).toEqual(owner);
    await held.release();
    expect(redis.cli('EXISTS', 'lk1:lock:a.test')).toBe('0');
  });

  it('a lock whose holder stopped refreshing expires and is taken; the old holder does not remove the new lock', async () => {
    const old = storageAt('lk2', { lockTtlMs: 300, lockRefreshMs: 3_600_000 });
    const stale = await old.lock('a.test');
    const taker = storageAt('lk2', { lockPollMs: 20 });
    const started = Date.now();
    const lock = await taker.lock('a.test', { timeoutMs: 5_000 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(200);
    const now = redis.cli('GET', 'lk2:lock:a.test');
    await stale.release();
    expect(redis.cli('GET', 'lk2:lock:a.test')).toBe(now);
    await lock.release();
  });
});

describe('RedisStorage: Redis unreachable', () => {
  it('fails commands with CERT_STORAGE_IO and says it is unreachable; recovers when Redis is back', async () => {
    const down = await startRedis();
    const storage = storageAt('down', {}, down.port);
    await storage.store('a', 'kept');
    const changes: boolean[] = [];
    storage.onStateChange((state) => changes.push(state.reachable));
    await down.stop();
    await vi.waitFor(() => expect(storage.state().reachable).toBe(false));
    const started = Date.now();
    const err = await storage.load('a').then(
      () => null,
      (e: unknown) => e,
    );
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(err).toBeInstanceOf(CertificatesError);
    expect((err as CertificatesError).code).toBe(CertificatesErrorCode.STORAGE_IO);
    expect((err as CertificatesError).message).toMatch(/^redis: cannot read a: /);
    expect(changes).toContain(false);
    const again = await startRedis({ port: down.port });
    try {
      await vi.waitFor(() => expect(storage.state()).toEqual({ backend: 'redis', reachable: true, error: null }), {
        timeout: 5_000,
      });
      expect(await storage.load('a')).toBeNull(); // nothing persisted (--save ''): a new, empty Redis
      await storage.store('a', 'new');
      expect((await storage.load('a'))?.toString()).toBe('new');
      expect(changes).toEqual([false, true]);
    } finally {
      await again.stop();
    }
  });
});
