import { existsSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { type StartedRedis, startRedis } from '@proxyd/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN } from './support/admin.js';
import { type RunningProxyd, startProxyd } from './support/proxyd.js';

// Issue 31: `storage redis { rate_limit_scope fleet }` counts a client's requests on every node against one
// `rate_limit`; without it each node counts its own (the spec's per-node limit, unchanged). Two built daemons
// per case, one real redis-server, each round one client address (127.0.0.x, a socket bound to it).
//
// The limit's windows are epoch seconds on every node, and a round (bursts, syncs through Redis) must happen
// inside one. Beside `stress-ng --cpu 2` a round took longer than a second, every time: real windows made the
// test fail 4 runs in 4. So the daemons' wall clock is the test's: libfaketime (LD_PRELOAD) holds it at an
// instant the test writes to a file, one window per round; their timers (the monotonic clock) run as they do.
// Everything else is the real daemons and Redis.

/** libfaketime (Debian's `libfaketime`, in scripts/ensure-test-deps.sh). */
const LIBFAKETIME = `/usr/lib/${process.arch === 'arm64' ? 'aarch64' : 'x86_64'}-linux-gnu/faketime/libfaketime.so.1`;
const dir = mkdtempSync(path.join(os.tmpdir(), 'proxyd-rate-clock-'));
const CLOCK_FILE = path.join(dir, 'clock');
/**
 * Read on each call to the wall clock: absent, the real time (the daemons start on it); else the instant it
 * holds, frozen. `FAKETIME_DONT_FAKE_MONOTONIC`: timers (the 100 ms sync) keep the real pace.
 */
const FAKE_CLOCK_ENV = {
  LD_PRELOAD: LIBFAKETIME,
  FAKETIME_TIMESTAMP_FILE: CLOCK_FILE,
  FAKETIME_NO_CACHE: '1',
  FAKETIME_DONT_FAKE_MONOTONIC: '1',
  TZ: 'UTC',
};

/** Sets every daemon's wall clock to `ms` (epoch), at once (the file is replaced, never half-written). */
function setClock(ms: number): void {
  writeFileSync(`${CLOCK_FILE}.new`, `${new Date(ms).toISOString().replace('T', ' ').replace('Z', '')}\n`);
  renameSync(`${CLOCK_FILE}.new`, CLOCK_FILE);
}

/** A fresh window per round (ten seconds apart: no window before it counts), the clock in its middle. */
let nextWindow = Math.floor(Date.now() / 1000) + 100;
function freshWindow(): number {
  const w = nextWindow;
  nextWindow += 10;
  setClock(w * 1000 + 500);
  return w;
}

/** A bound only a hung daemon or Redis reaches: a sync every 100 ms takes seconds at most, even starved. */
const HANG_MS = 60_000;

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

describe('issue 31: rate_limit across two nodes on Redis (built daemons)', () => {
  let redis: StartedRedis;
  const fleet: RunningProxyd[] = [];
  const apart: RunningProxyd[] = [];

  beforeAll(async () => {
    if (!existsSync(LIBFAKETIME)) throw new Error(`${LIBFAKETIME} missing: run scripts/ensure-test-deps.sh`);
    redis = await startRedis();
    const start = (scope: string, prefix: string) =>
      startProxyd({
        global: `\tstorage redis ${redis.url} {\n\t\tkey_prefix ${prefix}\n${scope}\t}\n`,
        sites: SITE,
        // The fleet pair's windows are epoch seconds: on the test's clock.
        env: { PROXY_ADMIN_TOKEN: ADMIN_TOKEN, ...(scope === '' ? {} : FAKE_CLOCK_ENV) },
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
    rmSync(dir, { recursive: true, force: true });
    await Promise.all([...fleet, ...apart].map((node) => node.stop()));
    await redis?.stop();
  });

  it(
    'per node without rate_limit_scope: each node admits the limit to a client the other just admitted',
    async () => {
      const [a, b] = apart as [RunningProxyd, RunningProxyd];
      // A node's own windows are on its monotonic clock (proxy-core's limiter), which libfaketime leaves alone:
      // only what holds whatever the timing is checked here. A client's first `LIMIT` requests pass on a node
      // however long they take; whether more are refused depends on the second they fall in (workers.test.ts and
      // site-directives.test.ts check refusals on one node).
      const address = '127.0.0.30';
      const statuses = [...(await burst(a, address, LIMIT)), ...(await burst(b, address, LIMIT))];
      expect(statuses).toEqual(Array(2 * LIMIT).fill(200));
      // Nothing of the per-node pair's went through Redis (it would be there after a sync: 100 ms, 3 times over).
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(redis.cli('KEYS', 'apart:ratelimit:*')).toBe('');
    },
    HANG_MS,
  );

  it(
    'rate_limit_scope fleet: the limit holds across both nodes once they synced',
    async () => {
      const [a, b] = fleet as [RunningProxyd, RunningProxyd];
      const w = freshWindow();
      const address = '127.0.0.50';
      /** Waits until the fleet's count of `client` in window `w`, as Redis holds it, is `n`. */
      const counted = async (client: string, n: number) => {
        const field = `${LIMIT} limited.localhost ${client}`;
        const end = Date.now() + HANG_MS;
        for (;;) {
          const count = Number(redis.cli('HGET', `fleet:ratelimit:${w}`, field) || 0);
          if (count === n) return;
          if (count > n || Date.now() > end) throw new Error(`the fleet counted ${count} of ${client}, not ${n}`);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      };
      // Node A admits 3 and syncs them; node B admits 2 (the fleet's 5) and, syncing them, reads the fleet's
      // count: B's next request is over the limit.
      const statuses = await burst(a, address, LIMIT - 2);
      await counted(address, LIMIT - 2);
      statuses.push(...(await burst(b, address, 2)));
      await counted(address, LIMIT);
      // The answer to the sync that put B's two in Redis (the fleet's 5) reaches B's counters after Redis ran it:
      // B syncs one at a time, so once Redis holds a later sync's count (another client's), B has the 5.
      statuses.push(...(await burst(b, '127.0.0.51', 1)));
      await counted('127.0.0.51', 1);
      statuses.push(...(await burst(b, address, 1)));
      expect(statuses).toEqual([...Array(LIMIT).fill(200), 200, 429]);
    },
    3 * HANG_MS,
  );
});
