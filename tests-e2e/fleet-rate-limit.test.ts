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
  admitted: number;
  refused: number;
  seconds: number;
}

/** Requests every `gapMs`, alternating between the nodes, for `ms`; 429s must carry `Retry-After: 1`. */
async function spread(nodes: readonly RunningProxyd[], ms: number, gapMs: number): Promise<Tally> {
  const started = performance.now();
  const tally: Tally = { admitted: 0, refused: 0, seconds: 0 };
  for (let i = 0; performance.now() - started < ms; i++) {
    const node = nodes[i % nodes.length] as RunningProxyd;
    const res = await request(node.httpPort, { path: '/', headers: { host: 'limited.localhost' } });
    if (res.status === 200) tally.admitted++;
    else {
      expect(res.status).toBe(429);
      expect(res.headers['retry-after']).toBe('1');
      tally.refused++;
    }
    await new Promise((r) => setTimeout(r, gapMs));
  }
  tally.seconds = (performance.now() - started) / 1000;
  return tally;
}

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
    fleet.push(...(await Promise.all([0, 1].map(() => start('\t\trate_limit_scope fleet\n', 'fleet')))));
    apart.push(...(await Promise.all([0, 1].map(() => start('', 'apart')))));
  }, 60_000);
  afterAll(async () => {
    await Promise.all([...fleet, ...apart].map((node) => node.stop()));
    await redis?.stop();
  });

  it('rate_limit_scope fleet: a client spread over both nodes gets the limit in all, 429 with Retry-After: 1 past it', async () => {
    // 20 requests a second, 10 to each node, for 3 s.
    const t = await spread(fleet, 3_000, 50);
    expect(t.refused).toBeGreaterThan(0);
    // The fleet's limit: LIMIT a second, plus the sync's staleness (≤ 100 ms of the other node's admissions,
    // about one a second here). Counted per node, the same traffic passes 2 × LIMIT a second (next test).
    expect(t.admitted).toBeLessThanOrEqual(Math.ceil(LIMIT * t.seconds) + Math.ceil(t.seconds) + 2);
    // Every admission passed through Redis: the windows are there.
    expect(redis.cli('KEYS', 'fleet:ratelimit:*')).not.toBe('');
  }, 30_000);

  it('without it each node limits its own count, as before: the same client gets the limit on each node', async () => {
    const t = await spread(apart, 3_000, 50);
    expect(t.refused).toBeGreaterThan(0);
    // Two nodes, each LIMIT a second.
    expect(t.admitted).toBeGreaterThanOrEqual(Math.floor(2 * LIMIT * (t.seconds - 0.5)));
    expect(redis.cli('KEYS', 'apart:ratelimit:*')).toBe('');
  }, 30_000);
});
