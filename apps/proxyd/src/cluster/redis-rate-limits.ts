import type { RedisStorage } from '@proxyd/certificates';
import { FleetRateLimits, type RateWindowExchange } from '@proxyd/cluster';
import { rateLimitKey } from '@proxyd/proxy-core';

/** A failed sync is logged at most this often, ms (Redis away fails one every 100 ms). */
const ERROR_LOG_MS = 60_000;

/**
 * `storage redis { rate_limit_scope fleet }`: this daemon's `rate_limit`
 * windows added up with every other node's in Redis ({@link FleetRateLimits}),
 * syncing every 100 ms from now on. A failed sync is logged (once a minute at
 * most): the limits then count this node's requests alone until Redis answers.
 */
export function fleetRateLimits(
  storage: RedisStorage,
  log: { warn(fields: Record<string, unknown>, message: string): void },
): FleetRateLimits {
  let logged = Number.NEGATIVE_INFINITY;
  const limits = new FleetRateLimits(redisRateWindows(storage), {
    keyOf: rateLimitKey,
    onError: (error) => {
      const now = Date.now();
      if (now - logged < ERROR_LOG_MS) return;
      logged = now;
      log.warn(
        { storage: 'redis', error: error.message },
        `rate_limit_scope fleet: Redis does not answer (${error.message}); each node limits on its own counts until it does`,
      );
    },
  });
  limits.start();
  return limits;
}

/** A window's hash outlives the window by this much, ms: the next window's sliding estimate reads it. */
const WINDOW_TTL_MS = 5_000;

/**
 * `rate_limit_scope fleet`'s {@link RateWindowExchange} in the Redis of
 * `storage redis`: the window of epoch second `w` is the hash
 * `<prefix>:ratelimit:<w>`, one field per `<limit> <domain> <client key>`
 * holding the fleet's admissions; a sync is one pipeline of `HINCRBY`s (a
 * delta of 0 reads the count) and one `PEXPIRE` per window, one round trip.
 */
export function redisRateWindows(storage: RedisStorage): RateWindowExchange {
  const { client, keyPrefix } = storage.connection();
  return {
    async add(windows, fields, deltas) {
      const pipeline = client.pipeline();
      const keys = new Set<number>();
      for (let i = 0; i < windows.length; i++) {
        const window = windows[i] as number;
        keys.add(window);
        pipeline.hincrby(`${keyPrefix}:ratelimit:${window}`, fields[i] as string, deltas[i] as number);
      }
      for (const window of keys) pipeline.pexpire(`${keyPrefix}:ratelimit:${window}`, WINDOW_TTL_MS);
      const results = await pipeline.exec();
      if (results === null) throw new Error('the Redis pipeline was aborted');
      const totals: number[] = new Array(windows.length);
      for (let i = 0; i < windows.length; i++) {
        const [err, value] = results[i] as [Error | null, unknown];
        if (err) throw err;
        totals[i] = Number(value);
      }
      return totals;
    },
  };
}
