import { openRedisStorage, type RedisStorage } from '@proxyd/certificates';
import { FleetRateLimits } from '@proxyd/cluster';
import { redisStorageDefaults } from '@proxyd/model';
import { rateLimitKey } from '@proxyd/proxy-core';
import { type StartedRedis, startRedis } from '@proxyd/test-peers';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { redisRateWindows } from './redis-rate-limits.js';

// Issue 31: `rate_limit` counted across two daemons through a real redis-server (the clock is the test's,
// and each sync is called by the test: no timer decides what a node knows).

describe('issue 31: fleet-wide rate_limit windows over Redis', () => {
  let redis: StartedRedis;
  const storages: RedisStorage[] = [];
  /** The nodes' wall clock, ms: the start of an epoch second. */
  let t = 1_790_000_000_000;
  const errors: Error[] = [];

  beforeAll(async () => {
    redis = await startRedis();
  });
  afterEach(async () => {
    await Promise.all(storages.splice(0).map((s) => s.close()));
    redis.cli('FLUSHALL');
    t = Math.ceil(t / 1000) * 1000 + 10_000;
  });
  afterAll(async () => {
    await redis.stop();
  });

  async function node(): Promise<FleetRateLimits> {
    const storage = await openRedisStorage({ ...redisStorageDefaults(), url: redis.url, key_prefix: 'rl' });
    storages.push(storage);
    return new FleetRateLimits(redisRateWindows(storage), {
      keyOf: rateLimitKey,
      now: () => t,
      onError: (err) => errors.push(err),
    });
  }

  it('a client alternating between two nodes gets n a second in all, not n per node', async () => {
    const [a, b] = await Promise.all([node(), node()]);
    let admitted = 0;
    for (let i = 0; i < 40; i++) {
      const limits = i % 2 === 0 ? a : b;
      if (limits.limiter(10).admit('site.test', '192.0.2.7')) admitted++;
      await limits.sync();
      t += 20;
    }
    // 40 requests in 0.8 s of one window: 10 pass, whichever node each reached (a node judges with what it
    // knew at its last sync of that client: at most one more passes here).
    expect(admitted).toBeGreaterThanOrEqual(10);
    expect(admitted).toBeLessThanOrEqual(11);
    // Another client, another domain, another limit: counted apart.
    expect(a.limiter(10).admit('site.test', '192.0.2.8')).toBe(true);
    expect(b.limiter(10).admit('other.test', '192.0.2.7')).toBe(true);
    expect(b.limiter(20).admit('site.test', '192.0.2.7')).toBe(true);
  });

  it('without syncs each node counts alone (what node scope does): 2n pass', async () => {
    const [a, b] = await Promise.all([node(), node()]);
    let admitted = 0;
    for (let i = 0; i < 40; i++) if ((i % 2 === 0 ? a : b).limiter(10).admit('site.test', '192.0.2.7')) admitted++;
    expect(admitted).toBe(20);
  });

  it('the end of a window is synced once more: the next second’s estimate has the fleet’s whole count', async () => {
    const [a, b] = await Promise.all([node(), node()]);
    for (let i = 0; i < 6; i++) expect(a.limiter(10).admit('site.test', '192.0.2.7')).toBe(true);
    await a.sync();
    await b.sync();
    // B's last four of the second, after its last sync of that second.
    for (let i = 0; i < 4; i++) expect(b.limiter(10).admit('site.test', '192.0.2.7')).toBe(true);
    t += 1000;
    await b.sync(); // B's last four go out
    // A's first request of the new second is judged on what A knew (6): it passes, and A syncs.
    expect(a.limiter(10).admit('site.test', '192.0.2.7')).toBe(true);
    await a.sync();
    // Now A knows the fleet's 6 + 4 of the previous second, weighing in whole at its start: nothing more passes.
    expect(a.limiter(10).admit('site.test', '192.0.2.7')).toBe(false);
  });

  it('Redis away: each node limits on its own counts, and says why', async () => {
    const [a, b] = await Promise.all([node(), node()]);
    await redis.stop();
    let admitted = 0;
    for (let i = 0; i < 40; i++) {
      const limits = i % 2 === 0 ? a : b;
      if (limits.limiter(10).admit('site.test', '192.0.2.7')) admitted++;
      if (i === 0) await limits.sync();
    }
    expect(admitted).toBe(20);
    expect(errors.length).toBeGreaterThan(0);
    redis = await startRedis({ port: redis.port });
  });
});
