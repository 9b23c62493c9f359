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
 * For each line of `ARGV[2]` (a field) and the number at the same place in
 * `ARGV[3]` (comma-separated deltas), `HINCRBY` of the hash `KEYS[1]`; then
 * its expiry (`ARGV[1]`, ms). Returns the counts after, comma-separated. One
 * command with three arguments per window, whatever the number of clients:
 * ioredis spends microseconds per command and per argument, a sync may carry
 * thousands of clients. Fields (`<limit> <domain> <client key>`) never hold
 * a newline.
 */
const ADD_SCRIPT = `
local deltas = {}
for d in string.gmatch(ARGV[3], '[^,]+') do deltas[#deltas + 1] = d end
local out = {}
local i = 1
for field in string.gmatch(ARGV[2], '[^\\n]+') do
  out[i] = redis.call('HINCRBY', KEYS[1], field, deltas[i])
  i = i + 1
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return table.concat(out, ',')
`;

/**
 * `rate_limit_scope fleet`'s {@link RateWindowExchange} in the Redis of
 * `storage redis`: the window of epoch second `w` is the hash
 * `<prefix>:ratelimit:<w>`, one field per `<limit> <domain> <client key>`
 * holding the fleet's admissions. A sync is one pipeline of one script call
 * per window (at most two: the current second and the one that just ended)
 * adding every client's delta (a delta of 0 reads the count) and setting the
 * hash's expiry: one round trip.
 */
export function redisRateWindows(storage: RedisStorage): RateWindowExchange {
  const { client, keyPrefix } = storage.connection();
  return {
    async add(windows, fields, deltas) {
      const byWindow = new Map<number, { fields: string[]; deltas: number[]; rows: number[] }>();
      for (let i = 0; i < windows.length; i++) {
        const window = windows[i] as number;
        let group = byWindow.get(window);
        if (group === undefined) {
          group = { fields: [], deltas: [], rows: [] };
          byWindow.set(window, group);
        }
        group.fields.push(fields[i] as string);
        group.deltas.push(deltas[i] as number);
        group.rows.push(i);
      }
      const pipeline = client.pipeline();
      for (const [window, group] of byWindow) {
        const key = `${keyPrefix}:ratelimit:${window}`;
        pipeline.eval(ADD_SCRIPT, 1, key, WINDOW_TTL_MS, group.fields.join('\n'), group.deltas.join(','));
      }
      const results = await pipeline.exec();
      if (results === null) throw new Error('the Redis pipeline was aborted');
      const totals: number[] = new Array(windows.length).fill(0);
      let g = 0;
      for (const group of byWindow.values()) {
        const [err, value] = results[g++] as [Error | null, unknown];
        if (err) throw err;
        const counts = String(value).split(',');
        for (let j = 0; j < group.rows.length; j++) totals[group.rows[j] as number] = Number(counts[j]);
      }
      return totals;
    },
  };
}
