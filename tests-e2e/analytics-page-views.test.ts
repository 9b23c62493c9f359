import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, adminCall } from './support/admin.js';
import { type RunningProxyd, startProxyd, startUpstream } from './support/proxyd.js';

// Issue 22: the rollups count page views by a stricter rule (GET, 2xx, HTML,
// not a bot); the spec's §2.4 snapshot must keep its meaning. Real curl
// through the built daemon: assets, a bot, a HEAD, a 404 and the beacons
// (with and without the page path) all go through, and GET /analytics/{domain}
// counts them as it always did.
const run = promisify(execFile);

const CHROME =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36';
const GOOGLEBOT = 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)';
const PAGE = '<!doctype html><html><head><title>p</title></head><body>hello</body></html>';

interface Snapshot {
  page_views_1m: number;
  page_views_60m: number;
  unique_visitors: number;
  top_pages: Array<{ path: string; views: number }>;
  status_codes: Record<string, number>;
}

describe('the /analytics snapshot keeps its meaning beside the rollups (built daemon, curl)', () => {
  let proxyd: RunningProxyd;
  let upstream: Awaited<ReturnType<typeof startUpstream>>;

  /** curl to the daemon as site.localhost; resolves the status code. */
  async function curl(path: string, args: string[] = []): Promise<number> {
    const { stdout } = await run('curl', [
      '-s',
      '-o',
      '/dev/null',
      '-w',
      '%{http_code}',
      '-H',
      'Host: site.localhost',
      ...args,
      `http://127.0.0.1:${proxyd.httpPort}${path}`,
    ]);
    return Number(stdout);
  }

  beforeAll(async () => {
    upstream = await startUpstream((req, res) => {
      const url = req.url ?? '/';
      if (url.startsWith('/app.css')) res.writeHead(200, { 'content-type': 'text/css' }).end('body{}');
      else if (url.startsWith('/logo.png')) res.writeHead(200, { 'content-type': 'image/png' }).end('png');
      else if (url.startsWith('/missing')) res.writeHead(404, { 'content-type': 'text/html' }).end('<p>no</p>');
      else res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE);
    });
    proxyd = await startProxyd({
      env: { PROXY_ADMIN_TOKEN: ADMIN_TOKEN },
      sites: `http://site.localhost {
\treverse_proxy 127.0.0.1:${upstream.port}
}
`,
    });
  });

  afterAll(async () => {
    await proxyd?.stop();
    await upstream?.close();
  });

  it('counts every request in page_views_1m/60m and top_pages: assets, bots, HEAD and errors, never /_proxyd/', async () => {
    expect(await curl('/', ['-A', CHROME])).toBe(200);
    expect(await curl('/landing?utm_source=newsletter&utm_medium=email', ['-A', CHROME])).toBe(200);
    expect(await curl('/app.css', ['-A', CHROME])).toBe(200);
    expect(await curl('/logo.png', ['-A', CHROME])).toBe(200);
    expect(await curl('/', ['-A', GOOGLEBOT])).toBe(200);
    expect(await curl('/')).toBe(200); // curl's own User-Agent: a bot
    expect(await curl('/', ['-I', '-A', CHROME])).toBe(200);
    expect(await curl('/missing', ['-A', CHROME])).toBe(404);
    // The script and two beacons: one with the page path (issue 22), one as older scripts send it.
    const { stdout: html } = await run('curl', [
      '-s',
      '-H',
      'Host: site.localhost',
      `http://127.0.0.1:${proxyd.httpPort}/`,
    ]);
    const token = /data-t="([^"]+)"/.exec(html)?.[1];
    expect(token).toBeDefined();
    const beacon = (body: object, referer: string) =>
      curl('/_proxyd/collect', ['-A', CHROME, '-e', referer, '--data', JSON.stringify({ t: token, ...body })]);
    expect(await beacon({ m: [{ n: 'LCP', v: 1200 }], p: '/landing' }, 'http://site.localhost/landing')).toBe(204);
    expect(await beacon({ m: [{ n: 'CLS', v: 0.05 }] }, 'http://site.localhost/')).toBe(204);
    expect(await beacon({ m: [{ n: 'INP', v: 80 }], p: 'no-slash' }, 'http://site.localhost/')).toBe(400);
    expect(await curl('/_proxyd/a.js', ['-A', CHROME])).toBe(200);

    // A record goes out when its response closes, which may be just after curl has read it.
    let s: Snapshot | undefined;
    for (let i = 0; i < 40; i++) {
      const res = await adminCall(proxyd.adminPort, 'GET', '/analytics/site.localhost');
      expect(res.status).toBe(200);
      s = JSON.parse(res.body) as Snapshot;
      if (s.page_views_1m >= 9) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    if (s === undefined) throw new Error('no snapshot');
    // 9 requests outside /_proxyd/ (8 above and the page the token came from): "Requests in the last minute".
    expect(s.page_views_1m).toBe(9);
    expect(s.page_views_60m).toBe(9);
    expect(s.unique_visitors).toBe(1);
    expect(Object.fromEntries(s.top_pages.map((p) => [p.path, p.views]))).toEqual({
      '/': 5,
      '/landing': 1,
      '/app.css': 1,
      '/logo.png': 1,
      '/missing': 1,
    });
    expect(s.status_codes).toEqual({ s1xx: 0, s2xx: 8, s3xx: 0, s4xx: 1, s5xx: 0, other: 0 });
  });
});
