import { type StartedRedis, startRedis } from '@proxyd/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN } from './support/admin.js';
import { type RunningProxyd, request, startProxyd } from './support/proxyd.js';

// Issue 31: `storage redis { rate_limit_scope fleet }` counts a client's requests on every node against one
// `rate_limit`; without it each node counts its own (the spec's per-node limit, unchanged). Two built daemons
// per case, one real redis-server; one client (127.0.0.1) spreads its requests over both nodes.

const LIMIT = 5;
const SITE = `http://limited.localhost {\n\trate_limit ${LIMIT}/s\n\trespond "ok"\n}\n`;

interface Tally {
  /** Per node. */
  admitted: number[];
  refused: number[];
  /** Answers other than 200 and 429 with `Retry-After: 1`, and failed requests. */
  odd: string[];
  seconds: number;
}

/** Requests in flight per node at most (a lane's requests no longer wait for the one before: see {@link spread}). */
const IN_FLIGHT = 8;

/**
 * One lane per node, at once: a request due every `gapMs` to that node, for `ms`; a 429 must carry
 * `Retry-After: 1` (anything else is in `odd`). The client is 127.0.0.1 on both nodes. The lane is open: a
 * request goes out when it is due, not when the one before it has been answered (up to {@link IN_FLIGHT} at
 * once), and a late timer sends what fell due meanwhile. So the client offers 1000 / `gapMs` requests a second
 * however slowly the machine answers: beside a CPU hog, one request after another came to fewer than `LIMIT` a
 * second per node, and the per-node pair refused nothing.
 */
async function spread(nodes: readonly RunningProxyd[], ms: number, gapMs: number): Promise<Tally> {
  const started = performance.now();
  const tally: Tally = { admitted: nodes.map(() => 0), refused: nodes.map(() => 0), odd: [], seconds: 0 };
  await Promise.all(
    nodes.map(async (node, i) => {
      const flying = new Set<Promise<void>>();
      let sent = 0;
      for (;;) {
        const elapsed = performance.now() - started;
        if (elapsed >= ms) break;
        while (sent < Math.floor(elapsed / gapMs) + 1 && flying.size < IN_FLIGHT) {
          sent++;
          const one = request(node.httpPort, { path: '/', headers: { host: 'limited.localhost' } }).then(
            (res) => {
              if (res.status === 200) tally.admitted[i] = (tally.admitted[i] ?? 0) + 1;
              else if (res.status === 429 && res.headers['retry-after'] === '1')
                tally.refused[i] = (tally.refused[i] ?? 0) + 1;
              else tally.odd.push(`${res.status} retry-after ${res.headers['retry-after']}`);
            },
            (err: Error) => {
              tally.odd.push(err.message);
            },
          );
          flying.add(one);
          void one.finally(() => flying.delete(one));
        }
        await new Promise((r) => setTimeout(r, flying.size < IN_FLIGHT ? gapMs : 5));
      }
      await Promise.all(flying);
    }),
  );
  tally.seconds = (performance.now() - started) / 1000;
  return tally;
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

describe('issue 31: rate_limit across two nodes on Redis (built daemons)', () => {
  let redis: StartedRedis;
  const fleet: RunningProxyd[] = [];
  const apart: RunningProxyd[] = [];

  beforeAll(async () => {
    redis = await startRedis();
    const start = (scope: string, prefix: string) =>
      startProxyd({
        global: `\tstorage redis ${redis.url} {\n\t\tkey_prefix ${prefix}\n${scope}\t}\n`,
        sites: SITE,
        env: { PROXY_ADMIN_TOKEN: ADMIN_TOKEN },
      });
    // All four at once, under the config's hook bound: one after the other, a CPU hog's slowness adds up.
    const [f0, f1, a0, a1] = await Promise.all([
      start('\t\trate_limit_scope fleet\n', 'fleet'),
      start('\t\trate_limit_scope fleet\n', 'fleet'),
      start('', 'apart'),
      start('', 'apart'),
    ]);
    fleet.push(f0, f1);
    apart.push(a0, a1);
  });
  afterAll(async () => {
    await Promise.all([...fleet, ...apart].map((node) => node.stop()));
    await redis?.stop();
  });

  it('a client spread over both nodes: the fleet limit with rate_limit_scope fleet, a limit per node without', async () => {
    // Both pairs at once, the same client pattern (about 2 × 25 requests a second each, less on a busy machine):
    // what the machine's load does to one it does to the other.
    const [f, a] = await Promise.all([spread(fleet, 3_000, 40), spread(apart, 3_000, 40)]);
    const told = JSON.stringify({ fleet: f, apart: a });
    expect([...f.odd, ...a.odd]).toEqual([]);
    for (const t of [f, a]) expect(sum(t.refused), told).toBeGreaterThan(0);
    // Fleet: LIMIT a second across both nodes, plus the first second's allowance and the sync's staleness
    // (each node sees the other's admissions up to 100 ms late).
    expect(sum(f.admitted), told).toBeLessThanOrEqual(Math.ceil(LIMIT * (f.seconds + 1)) + LIMIT);
    // Per node, as before: each node holds its own limit, so the same client passes about twice as much.
    for (const n of a.admitted) expect(n, told).toBeLessThanOrEqual(Math.ceil(LIMIT * (a.seconds + 1)));
    expect(sum(f.admitted), told).toBeLessThanOrEqual(0.75 * sum(a.admitted));
    // Every admission of the fleet passed through Redis: the windows are there; none of the other pair's.
    expect(redis.cli('KEYS', 'fleet:ratelimit:*')).not.toBe('');
    expect(redis.cli('KEYS', 'apart:ratelimit:*')).toBe('');
  }, 30_000);
});
