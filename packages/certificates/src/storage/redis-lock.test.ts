import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { redisStorageDefaults } from '@proxyd/model';
import { type StartedRedis, startRedis } from '@proxyd/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let redis: StartedRedis;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(() => redis?.stop());

const TTL_MS = 1_500;
const REFRESH_MS = 300;

/**
 * A Node process that opens the Redis storage as the daemon does
 * (`openRedisStorage`; sources loaded with Node's type stripping, `.js`
 * specifiers resolved to the `.ts` files), takes the lock `name`, and
 * prints `locked <pid>`; it holds the lock until it is killed.
 */
function lockInChild(name: string): ChildProcess {
  const config = {
    ...redisStorageDefaults(),
    url: redis.url,
    key_prefix: 'race',
  };
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
    const { openRedisStorage } = await import(${JSON.stringify(new URL('./redis-connect.ts', import.meta.url).href)});
    const storage = await openRedisStorage(${JSON.stringify(config)}, { lockTtlMs: ${TTL_MS}, lockRefreshMs: ${REFRESH_MS}, lockPollMs: 50 });
    await storage.lock(${JSON.stringify(name)});
    process.stdout.write('locked ' + process.pid + '\\n');
    setInterval(() => {}, 1000);
  `;
  return spawn(process.execPath, ['--input-type=module', '-e', script], {
    env: { ...process.env, NODE_OPTIONS: '' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
}

/** Resolves with the child when it prints `locked`. */
async function locked(child: ChildProcess): Promise<ChildProcess> {
  const [chunk] = (await once(child.stdout as NodeJS.ReadableStream, 'data')) as [Buffer];
  expect(chunk.toString()).toBe(`locked ${child.pid}\n`);
  return child;
}

describe('RedisStorage.lock across processes', () => {
  it('two processes race for one lock: one holds, the other waits; kill -9 the holder and the other gets it after the TTL', async () => {
    const children = [lockInChild('a.test'), lockInChild('a.test')];
    try {
      const holder = await Promise.race(children.map(locked));
      const waiter = children.find((child) => child !== holder) as ChildProcess;
      let waiterLockedAt: number | null = null;
      const waiterLocked = locked(waiter).then(() => {
        waiterLockedAt = Date.now();
      });
      // Longer than the TTL: the holder's refreshes keep the lock, and the waiter keeps waiting.
      await new Promise((resolve) => setTimeout(resolve, 3 * TTL_MS));
      expect(waiterLockedAt).toBeNull();
      expect(JSON.parse(redis.cli('GET', 'race:lock:a.test'))).toMatchObject({ pid: holder.pid });
      const killedAt = Date.now();
      holder.kill('SIGKILL');
      await once(holder, 'exit');
      await waiterLocked;
      // The dead holder's lock lasted until its TTL (at least TTL - REFRESH left when it died), not longer.
      const waited = (waiterLockedAt ?? 0) - killedAt;
      expect(waited).toBeGreaterThanOrEqual(TTL_MS - REFRESH_MS - 100);
      expect(waited).toBeLessThan(TTL_MS + 1_000);
      expect(JSON.parse(redis.cli('GET', 'race:lock:a.test'))).toMatchObject({ pid: waiter.pid });
    } finally {
      for (const child of children) child.kill('SIGKILL');
    }
  });
});
