import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, adminCall } from './support/admin.js';
import { type RunningProxyd, request, startProxyd, startUpstream } from './support/proxyd.js';

// Issue 22: analytics history in <state dir>/history.db, read through the
// stats API. Real page views through the built daemon; rollups are per UTC
// minute, so each test waits for its minute to end (the flush hook,
// PROXYD_HISTORY_FLUSH_MS, makes the write follow at once). The history
// survives a graceful restart whole (the current minute is written at the
// stop) and a kill -9 less at most the minute in progress, and the database
// opens clean after it.

const CHROME =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36';
const PAGE = '<!doctype html><html><head><title>p</title></head><body>hello</body></html>';
const MINUTE = 60_000;

interface Totals {
  page_views: number;
  visitors: number;
  requests: number;
  status: Record<string, number>;
}

describe('history: the stats API over a restart and a kill -9 (built daemon)', () => {
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  let stateDir: string;
  let proxyd: RunningProxyd | undefined;
  /** The first minute of this file's traffic: every range starts there. */
  let since = 0;

  beforeAll(async () => {
    upstream = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE);
    });
    stateDir = await mkdtemp(path.join(tmpdir(), 'proxyd-history-'));
    since = Math.floor(Date.now() / MINUTE) * MINUTE;
  });
  afterAll(async () => {
    await proxyd?.stop();
    await upstream?.close();
    await rm(stateDir, { recursive: true, force: true });
  });

  const start = async () => {
    proxyd = await startProxyd({
      env: { PROXY_ADMIN_TOKEN: ADMIN_TOKEN, PROXYD_HISTORY_FLUSH_MS: '250' },
      args: ['--state-dir', stateDir],
      sites: `http://site.localhost {\n\treverse_proxy 127.0.0.1:${upstream.port}\n}\n`,
    });
    return proxyd;
  };

  /**
   * `n` page views of `page` by three visitors (one IP, three user agents), each on a new connection: with
   * workers the kernel spreads them, and the visitors add up right only if every worker hashes with the
   * control plane's salt.
   */
  async function views(running: RunningProxyd, page: string, n: number, referer?: string): Promise<void> {
    for (let i = 0; i < n; i++) {
      const res = await request(running.httpPort, {
        path: page,
        headers: {
          host: 'site.localhost',
          'user-agent': `${CHROME} v${i % 3}`,
          accept: 'text/html',
          connection: 'close',
          ...(referer === undefined ? {} : { referer }),
        },
      });
      expect(res.status).toBe(200);
    }
  }

  const stats = async (running: RunningProxyd, url: string) => {
    const res = await adminCall(running.adminPort, 'GET', url);
    return { status: res.status, headers: res.headers, body: res.body, json: () => JSON.parse(res.body) };
  };
  const totals = async (running: RunningProxyd): Promise<Totals> => {
    const res = await stats(running, `/stats/site.localhost/totals?from=${since}&to=${Date.now() + MINUTE}`);
    expect(res.status, res.body).toBe(200);
    return res.json() as Totals;
  };
  /** Polls the totals (every 2.5 s: the admin API allows 60 requests a minute) until `done` or 80 s. */
  async function waitFor(running: RunningProxyd, done: (t: Totals) => boolean): Promise<Totals> {
    const until = Date.now() + 80_000;
    for (;;) {
      const res = await stats(running, `/stats/site.localhost/totals?from=${since}&to=${Date.now() + MINUTE}`);
      if (res.status === 200 && done(res.json())) return res.json();
      if (Date.now() > until) throw new Error(`history never showed it: ${res.status} ${res.body}`);
      await new Promise((r) => setTimeout(r, 2_500));
    }
  }

  it('page views reach the stats API once their minute ends; every endpoint answers, CSV too', async () => {
    const running = await start();
    await views(running, '/', 12, 'https://news.example/story');
    await views(running, '/docs', 5);
    const t = await waitFor(running, (x) => x.page_views >= 17);
    expect(t.page_views).toBe(17);
    expect(t.requests).toBeGreaterThanOrEqual(17);
    expect(t.visitors).toBe(3);
    expect((await stats(running, '/stats')).json()).toEqual({ domains: ['site.localhost'] });
    const pages = (await stats(running, `/stats/site.localhost/breakdown/pages?from=${since}`)).json();
    expect(pages.items).toEqual([
      { key: '/', page_views: 12 },
      { key: '/docs', page_views: 5 },
    ]);
    const referrers = (await stats(running, `/stats/site.localhost/breakdown/referrers?from=${since}`)).json();
    expect(referrers.items).toEqual([{ key: 'news.example', page_views: 12 }]);
    const series = (
      await stats(running, `/stats/site.localhost/timeseries?from=${since}&to=${since + 10 * MINUTE}&interval=minute`)
    ).json();
    expect(series.points).toHaveLength(10);
    expect(series.points.reduce((a: number, p: { page_views: number }) => a + p.page_views, 0)).toBe(17);
    const csv = await stats(running, `/stats/site.localhost/breakdown/pages?from=${since}&format=csv`);
    expect(csv.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(csv.body).toBe('key,page_views\r\n/,12\r\n/docs,5\r\n');
    expect((await stats(running, '/stats/other.localhost/totals')).status).toBe(404);
  });

  it('a graceful restart keeps everything, the minute in progress too', async () => {
    const running = proxyd as RunningProxyd;
    await views(running, '/pricing', 4);
    // SIGTERM: the daemon drains, writes every minute it holds, closes the database.
    running.child.kill('SIGTERM');
    await new Promise((resolve) => running.child.once('exit', resolve));
    const again = await start();
    const t = await totals(again);
    expect(t.page_views).toBe(21);
    const pages = (await stats(again, `/stats/site.localhost/breakdown/pages?from=${since}`)).json();
    expect(pages.items).toContainEqual({ key: '/pricing', page_views: 4 });
  });

  it('kill -9: the database opens clean, the flushed minutes are all there, at most the last minute is lost', async () => {
    const running = proxyd as RunningProxyd;
    const before = (await totals(running)).page_views;
    await views(running, '/blog', 6);
    // The six reach the database once their minute ends.
    await waitFor(running, (x) => x.page_views >= before + 6);
    // Three more, in the minute in progress; then the process is killed without a chance to write.
    await views(running, '/late', 3);
    running.child.kill('SIGKILL');
    await new Promise((resolve) => running.child.once('exit', resolve));
    const again = await start();
    expect(again.output()).not.toMatch(/history database failed its check/);
    expect((await readdir(stateDir)).filter((f) => f.includes('corrupt'))).toEqual([]);
    const t = await totals(again);
    expect(t.page_views).toBeGreaterThanOrEqual(before + 6);
    expect(t.page_views).toBeLessThanOrEqual(before + 9);
    await again.stop();
    proxyd = undefined;
    // The file itself: SQLite's own full check.
    const db = new DatabaseSync(path.join(stateDir, 'history.db'));
    expect(db.prepare('PRAGMA integrity_check').all()).toEqual([{ integrity_check: 'ok' }]);
    db.close();
  });
});

describe('history off', () => {
  it('GET /stats… answers 501 history not enabled, and no database is made', async () => {
    const running = await startProxyd({
      env: { PROXY_ADMIN_TOKEN: ADMIN_TOKEN },
      global: '\thistory off\n',
      sites: '',
    });
    try {
      const res = await adminCall(running.adminPort, 'GET', '/stats/a.localhost/totals');
      expect(res.status).toBe(501);
      expect(JSON.parse(res.body)).toEqual({ error: 'history not enabled' });
      expect(await readdir(path.join(running.dir, 'state'))).not.toContain('history.db');
    } finally {
      await running.stop();
    }
  });
});
