import { type RedisStorageConfig, redisStorageDefaults } from '@proxyd/model';
import { type StartedRedis, startRedis, startSentinel } from '@proxyd/test-peers';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { openRedisStorage } from './redis-connect.js';
import type { RedisStorage } from './redis-storage.js';

let primary: StartedRedis;
let replica: StartedRedis;
let sentinel: StartedRedis;
let storage: RedisStorage | undefined;
beforeAll(async () => {
  primary = await startRedis();
  replica = await startRedis({ replicaOf: primary.port });
  // Sentinel learns of the replica from the primary's INFO: the link is up before it starts.
  await vi.waitFor(() => expect(replica.cli('INFO', 'replication')).toContain('master_link_status:up'), {
    timeout: 10_000,
  });
  sentinel = await startSentinel({ primaryPort: primary.port, masterName: 'proxyd' });
}, 30_000);
afterAll(async () => {
  await storage?.close();
  await Promise.all([sentinel?.stop(), replica?.stop(), primary?.stop()]);
});

const config = (sentinelPort: number): RedisStorageConfig => ({
  ...redisStorageDefaults(),
  sentinels: [`127.0.0.1:${sentinelPort}`],
  master_name: 'proxyd',
});

/** The primary's port as Sentinel names it now. */
const primaryPort = () => Number(sentinel.cli('SENTINEL', 'get-master-addr-by-name', 'proxyd').split('\n')[1]);

describe('RedisStorage over Sentinel', () => {
  it('finds the primary through Sentinel and follows it through SENTINEL FAILOVER', async () => {
    storage = await openRedisStorage(config(sentinel.port));
    await storage.store('certificates/local/a.test/a.test.crt', 'before');
    expect(primary.cli('GET', 'proxyd:value:certificates/local/a.test/a.test.crt')).toBe('before');
    await vi.waitFor(() => expect(sentinel.cli('SENTINEL', 'replicas', 'proxyd')).toContain(String(replica.port)), {
      timeout: 15_000,
    });
    // The replica has the write before the failover is asked for, so no acknowledged write is lost.
    await vi.waitFor(() =>
      expect(replica.cli('GET', 'proxyd:value:certificates/local/a.test/a.test.crt')).toBe('before'),
    );
    // Sentinel answers NOGOODSLAVE until its own view of the replica is fresh (its INFO polls, slower
    // under load); asked again until it starts one.
    await vi.waitFor(() => expect(sentinel.cli('SENTINEL', 'FAILOVER', 'proxyd')).toBe('OK'), {
      timeout: 30_000,
      interval: 500,
    });
    await vi.waitFor(() => expect(primaryPort()).toBe(replica.port), { timeout: 20_000 });
    await vi.waitFor(() => expect(replica.cli('ROLE').split('\n')[0]).toBe('master'), { timeout: 20_000 });
    // Writes go to the new primary: retried until the client has moved (a command during the move may fail).
    await vi.waitFor(
      async () => {
        await storage?.store('certificates/local/a.test/a.test.crt', 'after');
        expect(replica.cli('GET', 'proxyd:value:certificates/local/a.test/a.test.crt')).toBe('after');
      },
      { timeout: 20_000, interval: 200 },
    );
    expect((await storage.load('certificates/local/a.test/a.test.crt'))?.toString()).toBe('after');
    expect(await storage.list('certificates')).toEqual(['certificates/local/a.test/a.test.crt']);
    const lock = await storage.lock('a.test', { timeoutMs: 5_000 });
    expect(replica.cli('EXISTS', 'proxyd:lock:a.test')).toBe('1');
    await lock.release();
    expect(storage.state().reachable).toBe(true);
  }, 90_000);
});
