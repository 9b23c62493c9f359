import { type StartedRedis, startRedis } from '@proxyd/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, adminCall } from './support/admin.js';
import { type RunningProxyd, request, startProxyd, startUpstream } from './support/proxyd.js';

// Issue 31: with `storage redis`, each node's minute rollups reach every node's history, so either node's
// GET /stats shows the fleet; GET /analytics stays this node's. Two built daemons, one real redis-server.
// Rollups are per UTC minute: the test waits for its minute to end (PROXYD_HISTORY_FLUSH_MS makes the
// flush, and with it the exchange through Redis, follow at once).

const CHROME =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36';
const PAGE = '<!doctype html><html><head><title>p</title></head><body>hello</body></html>';
const MINUTE = 60_000;

interface Totals {
  page_views: number;
  visitors: number;
}

describe('issue 31: fleet-wide history over Redis (two built daemons)', () => {
  let redis: StartedRedis;
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  const nodes: RunningProxyd[] = [];
  let since = 0;

  beforeAll(async () => {
    redis = await startRedis();
    upstream = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE);
    });
    since = Math.floor(Date.now() / MINUTE) * MINUTE;
    nodes.push(
      ...(await Promise.all(
        [0, 1].map(() =>
          startProxyd({
            global: `\tstorage redis ${redis.url} {\n\t\tkey_prefix stats\n\t}\n`,
            sites: `http://site.localhost {\n\treverse_proxy 127.0.0.1:${upstream.port}\n}\n`,
            env: { PROXY_ADMIN_TOKEN: ADMIN_TOKEN, PROXYD_HISTORY_FLUSH_MS: '250' },
          }),
        ),
      )),
    );
  });
  afterAll(async () => {
    await Promise.all(nodes.map((node) => node.stop()));
    await upstream?.close();
    await redis?.stop();
  });

  /** `n` page views of `page` on `node`, by the visitors (one IP, one user agent each) `agents`, in turn. */
  async function views(node: RunningProxyd, page: string, n: number, agents: readonly string[]): Promise<void> {
    for (let i = 0; i < n; i++) {
      const res = await request(node.httpPort, {
        path: page,
        headers: {
          host: 'site.localhost',
          'user-agent': `${CHROME} ${agents[i % agents.length]}`,
          accept: 'text/html',
          connection: 'close',
        },
      });
      expect(res.status).toBe(200);
    }
  }

  const totals = async (node: RunningProxyd): Promise<Totals | null> => {
    const res = await adminCall(
      node.adminPort,
      'GET',
      `/stats/site.localhost/totals?from=${since}&to=${Date.now() + MINUTE}`,
    );
    return res.status === 200 ? (JSON.parse(res.body) as Totals) : null;
  };

  it('views on node A and node B show on both nodes’ /stats, a visitor seen by both counted once', async () => {
    const [a, b] = nodes as [RunningProxyd, RunningProxyd];
    // Visitors v1..v3 on A; v2..v5 on B: five people, seven if each node's were added.
    await views(a, '/', 9, ['v1', 'v2', 'v3']);
    await views(b, '/docs', 8, ['v2', 'v3', 'v4', 'v5']);
    // GET /analytics stays this node's (spec §2.4): A counts A's traffic only.
    const live = JSON.parse((await adminCall(a.adminPort, 'GET', '/analytics/site.localhost')).body);
    expect(live.top_pages).toEqual([{ path: '/', views: 9 }]);
    // Polled every 2.5 s (the admin API allows 60 requests a minute), until the minute ended and was exchanged.
    const until = Date.now() + 90_000;
    let seen: (Totals | null)[] = [];
    for (;;) {
      seen = await Promise.all(nodes.map(totals));
      if (seen.every((t) => t !== null && t.page_views >= 17)) break;
      if (Date.now() > until) throw new Error(`the fleet's views never showed: ${JSON.stringify(seen)}`);
      await new Promise((r) => setTimeout(r, 2_500));
    }
    for (const t of seen) {
      expect(t?.page_views).toBe(17);
      expect(t?.visitors).toBe(5);
    }
    for (const node of nodes) {
      const pages = JSON.parse(
        (await adminCall(node.adminPort, 'GET', `/stats/site.localhost/breakdown/pages?from=${since}`)).body,
      );
      expect(pages.items).toEqual([
        { key: '/', page_views: 9 },
        { key: '/docs', page_views: 8 },
      ]);
    }
  }, 120_000);
});
