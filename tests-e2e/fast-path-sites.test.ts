import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningProxyd, startProxyd, startUpstream } from './support/proxyd.js';

const run = promisify(execFile);

// Issue 32: a site written as Caddy users write theirs — `encode gzip
// zstd`, `header_up X-Real-IP {remote_host}`, a `header` op behind a path
// matcher — through the built daemon, with curl: the same bytes (but the
// Date) with the HTTP/1.1 fast path on (the default) and off
// (PROXY_FAST_PATH=0), compressed as negotiated and whole once curl
// decompresses. Which path served a request the daemon does not say; the
// proxy-core loopback tests (src/fast/fast-encode.loopback.test.ts,
// fast-path.loopback.test.ts) pin that with the fast path's counter.
describe('a site with encode and header ops through the built daemon, fast path on and off', () => {
  const daemons: RunningProxyd[] = [];
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  const json = JSON.stringify({ items: Array.from({ length: 300 }, (_, i) => ({ id: i, name: `item ${i}` })) });
  const html = `<!doctype html><title>t</title>${'<p>hello, world</p>\n'.repeat(400)}`;

  beforeAll(async () => {
    upstream = await startUpstream((req, res) => {
      const realIp = String(req.headers['x-real-ip']);
      if (req.url === '/api/items') {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': json.length, etag: '"i1"' });
        res.end(json);
      } else if (req.url === '/static/page.html') {
        // Chunked: encode holds the first 512 bytes before deciding.
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'x-real-ip-seen': realIp });
        res.write(html.slice(0, 100));
        res.end(html.slice(100));
      } else {
        res.writeHead(200, { 'content-type': 'text/plain', 'x-real-ip-seen': realIp }).end('short');
      }
    });
    const sites = `http://app.test {
\tencode gzip zstd
\t@static path /static/*
\theader @static Cache-Control "public, max-age=600"
\treverse_proxy 127.0.0.1:${upstream.port} {
\t\theader_up X-Real-IP {remote_host}
\t}
}
`;
    daemons.push(await startProxyd({ sites }));
    daemons.push(await startProxyd({ sites, env: { PROXY_FAST_PATH: '0' } }));
  });

  afterAll(async () => {
    for (const d of daemons) await d.stop();
    await upstream?.close();
  });

  /** curl's `-i` output for a path and these arguments against a daemon, Date lines blanked. */
  async function curl(d: RunningProxyd, target: string, args: string[]): Promise<string> {
    const { stdout } = await run(
      'curl',
      ['-s', '-i', '--max-time', '20', '-H', 'Host: app.test', ...args, `http://127.0.0.1:${d.httpPort}${target}`],
      { encoding: 'latin1', maxBuffer: 4 * 1024 * 1024 },
    );
    return stdout.replace(/\r\ndate: [^\r]*/gi, '\r\nDate: -');
  }

  const cases: [string, string, string[], RegExp, string][] = [
    ['JSON, gzip, raw', '/api/items', ['-H', 'Accept-Encoding: gzip'], /\r\ncontent-encoding: gzip\r\n/i, ''],
    ['JSON, curl decompresses', '/api/items', ['--compressed'], /\r\ncontent-encoding: (zstd|gzip)\r\n/i, json],
    ['chunked HTML, zstd', '/static/page.html', ['-H', 'Accept-Encoding: zstd'], /\r\ncache-control: public/i, ''],
    ['chunked HTML, curl decompresses', '/static/page.html', ['--compressed'], /\r\nvary: Accept-Encoding\r\n/i, html],
    ['no Accept-Encoding', '/api/items', [], /\r\nvary: Accept-Encoding\r\n/i, json],
    ['under minimum_length', '/short', ['--compressed'], /\r\nx-real-ip-seen: 127\.0\.0\.1\r\n/i, 'short'],
    ['HTTP/1.0', '/api/items', ['--http1.0', '--compressed'], /\r\ncontent-encoding/i, json],
    ['HEAD', '/api/items', ['-I', '-H', 'Accept-Encoding: gzip'], /\r\netag: W\/"i1"\r\n/i, ''],
  ];

  for (const [name, target, args, head, body] of cases) {
    it(`answers ${name} the same either way`, async () => {
      const [fast, slow] = daemons as [RunningProxyd, RunningProxyd];
      const a = await curl(fast, target, args);
      const b = await curl(slow, target, args);
      expect(a).toMatch(/^HTTP\/1\.[01] 200 OK\r\n/);
      expect(a).toMatch(head);
      expect(a).toBe(b);
      if (body !== '') expect(a.slice(a.indexOf('\r\n\r\n') + 4)).toBe(body);
    });
  }
});
