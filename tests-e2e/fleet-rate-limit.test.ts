import http from 'node:http';
import { type StartedRedis, startRedis } from '@proxyd/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN } from './support/admin.js';
import { type RunningProxyd, startProxyd } from './support/proxyd.js';

// Issue 31: `storage redis { rate_limit_scope fleet }` counts a client's requests on every node against one
// `rate_limit`; without it each node counts its own (the spec's per-node limit, unchanged). Two built daemons
// per case, one real redis-server. Each round is one client address (127.0.0.x, a socket bound to it) inside
// one 1-second window (epoch seconds, the limit's window on every node): a round a busy machine stretched past
// its window tells nothing and runs again with the next address, so no earlier window weighs on it. Counting
// requests a client managed over a few seconds failed beside a CPU hog: a starved node saw bursts and empty
// windows, and the two pairs' totals stopped telling the scopes apart.

const LIMIT = 5;
const SITE = `http://limited.localhost {\n\trate_limit ${LIMIT}/s\n\trespond "ok"\n}\n`;

/** `n` requests at once to `node` from `address`; their statuses in order (a 429 must say `Retry-After: 1`). */
async function burst(node: RunningProxyd, address: string, n: number): Promise<number[]> {
  const one = () =>
    new Promise<number>((resolve, reject) => {
      const req = http.request(
        {
          host: '127.0.0.1',
          port: node.httpPort,
          localAddress: address,
          agent: false,
          headers: { host: 'limited.localhost' },
        },
        (res) => {
          res.resume();
          res.on('end', () => {
            if (res.statusCode === 429 && res.headers['retry-after'] !== '1')
              reject(new Error(`429 with Retry-After ${res.headers['retry-after']}`));
            else resolve(res.statusCode ?? 0);
          });
        },
      );
      req.on('error', reject);
      req.end();
    });
  return Promise.all(Array.from({ length: n }, one));
}

/** Waits for the start of the next 1-second window; returns it (epoch seconds). */
async function nextWindow(): Promise<number> {
  await new Promise((resolve) => setTimeout(resolve, 1000 - (Date.now() % 1000)));
  return Math.floor(Date.now() / 1000);
}

const within = (w: number) => Math.floor(Date.now() / 1000) === w;

/**
 * Runs `round` (given a fresh client address and its window) until one fits its window, up to 8 times;
 * returns that round's statuses. A round that did not fit must still not have refused below the limit.
 */
async function fitting(first: number, round: (address: string, w: number) => Promise<number[] | null>) {
  const outcomes: string[] = [];
  for (let i = 0; i < 8; i++) {
    const address = `127.0.0.${first + i}`;
    const w = await nextWindow();
    const statuses = await round(address, w);
    const fit = statuses !== null && within(w);
    outcomes.push(`${address}: ${statuses?.join(' ') ?? 'sync past its window'}${fit ? '' : ' (past its window)'}`);
    if (fit && statuses !== null) return { statuses, told: outcomes.join('; ') };
  }
  throw new Error(`no round fit one second: ${outcomes.join('; ')}`);
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

  it('per node without rate_limit_scope: each node admits the limit to the same client in one window', async () => {
    const [a, b] = apart as [RunningProxyd, RunningProxyd];
    const { statuses, told } = await fitting(30, async (address) => [
      ...(await burst(a, address, LIMIT)),
      ...(await burst(b, address, LIMIT)),
      ...(await burst(b, address, 1)),
      ...(await burst(a, address, 1)),
    ]);
    expect(statuses, told).toEqual([...Array(2 * LIMIT).fill(200), 429, 429]);
    // Nothing of the per-node pair's went through Redis.
    expect(redis.cli('KEYS', 'apart:ratelimit:*')).toBe('');
  }, 60_000);

  it('rate_limit_scope fleet: the limit holds across both nodes once they synced', async () => {
    const [a, b] = fleet as [RunningProxyd, RunningProxyd];
    const { statuses, told } = await fitting(50, async (address, w) => {
      const field = `${LIMIT} limited.localhost ${address}`;
      // Whether the fleet's count of this client in window `w`, as Redis holds it, reached `n` while `w` lasted.
      const counted = async (n: number) => {
        while (Number(redis.cli('HGET', `fleet:ratelimit:${w}`, field) || 0) < n) {
          if (!within(w)) return false;
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
        return true;
      };
      // Node A admits 3 and syncs them; node B admits 2 (the fleet's 5) and, syncing them, reads the fleet's
      // count: B's next request is over the limit. (A node learns the others' admissions at its next sync, up
      // to 100 ms late: the documented staleness.)
      const out = await burst(a, address, LIMIT - 2);
      if (!(await counted(LIMIT - 2))) return null;
      out.push(...(await burst(b, address, 2)));
      if (!(await counted(LIMIT))) return null;
      // The script that put B's two in Redis answered B with the fleet's 5; that answer reaching B's counters is
      // not visible from here: two sync periods for it (the round still has to fit its window).
      await new Promise((resolve) => setTimeout(resolve, 200));
      out.push(...(await burst(b, address, 1)));
      return out;
    });
    expect(statuses, told).toEqual([...Array(LIMIT).fill(200), 429]);
  }, 60_000);
});
