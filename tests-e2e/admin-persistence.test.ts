import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, adminCall } from './support/admin.js';
import { type RunningProxyd, startProxyd } from './support/proxyd.js';

const ROUNDS = 5;
const WORKERS = 4;
/** Below the admin API's global limit of 60 requests per minute, counting the GET after each restart. */
const POSTS_PER_ROUND = 50;

type SavedRoute = { domain: string; upstream: string; tls: boolean; source: string | null };

/**
 * What the state directory holds, read as the route store documents it: `routes.json` (absent before
 * the first start that folds a journal), then each complete line of `routes.json.journal` in order, up
 * to the zero bytes written ahead of the next line (a last line without its newline is a write that
 * never returned; issue 30). Domain → upstream.
 */
async function savedRoutes(stateDir: string): Promise<Map<string, string>> {
  const saved = new Map<string, string>();
  const read = (name: string) => readFile(path.join(stateDir, name), 'utf8').catch(() => null);
  const text = await read('routes.json');
  if (text !== null) {
    const file = JSON.parse(text) as { format: string; routes: SavedRoute[] };
    expect(file.format).toBe('proxyd-routes/1');
    for (const r of file.routes) saved.set(r.domain, r.upstream);
  }
  const journal = ((await read('routes.json.journal')) ?? '').replace(/\0+$/, '');
  for (const line of journal.split('\n').slice(0, -1)) {
    const batch = JSON.parse(line) as { put: SavedRoute[]; delete: string[] };
    for (const domain of batch.delete) saved.delete(domain);
    for (const r of batch.put) saved.set(r.domain, r.upstream);
  }
  return saved;
}

describe('persistence: kill -9 during a stream of POST /routes loses no acknowledged route', () => {
  let stateDir: string;
  let proxyd: RunningProxyd | undefined;

  beforeAll(async () => {
    stateDir = await mkdtemp(path.join(tmpdir(), 'proxyd-persist-'));
  });
  afterAll(async () => {
    await proxyd?.stop();
    await rm(stateDir, { recursive: true, force: true });
  });

  const start = () =>
    startProxyd({ sites: '', env: { PROXY_ADMIN_TOKEN: ADMIN_TOKEN }, args: ['--state-dir', stateDir] });

  it(`survives ${ROUNDS} kills at random points with ${WORKERS} concurrent writers`, async () => {
    const acknowledged = new Map<string, string>();
    for (let round = 0; round < ROUNDS; round++) {
      const running = await start();
      proxyd = running;
      if (round > 0) {
        const listed = JSON.parse((await adminCall(running.adminPort, 'GET', '/routes')).body) as Array<{
          domain: string;
          upstream: string;
        }>;
        const have = new Map(listed.map((r) => [r.domain, r.upstream]));
        for (const [domain, upstream] of acknowledged) expect(have.get(domain), domain).toBe(upstream);
      }
      const killAfter = 5 + Math.floor(Math.random() * (POSTS_PER_ROUND - 15));
      let acks = 0;
      let next = 0;
      let killed = false;
      const worker = async () => {
        while (!killed && next < POSTS_PER_ROUND - 1) {
          const i = next++;
          const domain = `r${round}-n${i}.persist.test`;
          const upstream = `127.0.0.1:${10_000 + round * 100 + i}`;
          try {
            const res = await adminCall(running.adminPort, 'POST', '/routes', { domain, upstream, tls: false });
            if (res.status === 201) {
              acknowledged.set(domain, upstream);
              if (++acks >= killAfter && !killed) {
                killed = true;
                running.child.kill('SIGKILL');
              }
            } else if (!killed) throw new Error(`unexpected ${res.status}: ${res.body}`);
          } catch (err) {
            if (!killed) throw err;
          }
        }
      };
      await Promise.all(Array.from({ length: WORKERS }, worker));
      if (!killed) running.child.kill('SIGKILL');
      await running.stop();
      proxyd = undefined;

      const saved = await savedRoutes(stateDir);
      for (const [domain, upstream] of acknowledged) expect(saved.get(domain), domain).toBe(upstream);
    }
    // The last restart: every acknowledged route is served, no temp file or corrupt copy is left.
    proxyd = await start();
    const listed = JSON.parse((await adminCall(proxyd.adminPort, 'GET', '/routes')).body) as Array<{ domain: string }>;
    const domains = new Set(listed.map((r) => r.domain));
    for (const domain of acknowledged.keys()) expect(domains.has(domain), domain).toBe(true);
    expect(acknowledged.size).toBeGreaterThanOrEqual(ROUNDS * 5);
    // Only the route store's files are checked: other components keep their own files in the state dir.
    expect((await readdir(stateDir)).filter((name) => name.startsWith('routes.json'))).toEqual(['routes.json']);
  });
});
