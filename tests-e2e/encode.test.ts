import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitUntil } from './support/admin.js';
import { curlHttps } from './support/https-client.js';
import { type RunningProxyd, startProxyd, startUpstream } from './support/proxyd.js';

// The built daemon with `encode` in front of a real upstream, answered to
// real clients over HTTP/1.1 and over HTTP/2: curl --compressed (gzip, br
// and zstd in this curl build, see `curl -V`) and headless Chromium. The
// analytics script is injected before compression, so it is in every
// decoded page.
const run = promisify(execFile);

const PAGE = `<!doctype html><html><head><meta charset="utf-8"><title>enc</title></head><body>${'<p>compressible paragraph, said again and again</p>\n'.repeat(300)}</body></html>`;
const SCRIPT = /<script src="\/_proxyd\/a\.js\?v=[\w-]+" data-t="[\w.-]+" defer><\/script><\/head>/;

interface CurlReply {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** How a test reaches the daemon: plain HTTP/1.1, or HTTP/2 over its HTTPS port. */
interface Transport {
  name: string;
  /** curl's arguments and URL for a path. */
  curl(urlPath: string): string[];
  /** The page URL Chromium loads. */
  page: string;
  /** What `-D -` prints first: `HTTP/1.1` or `HTTP/2`. */
  version: string;
}

/** curl with `via`; `--compressed` decodes the body. */
async function curl(via: Transport, urlPath: string, args: string[] = []): Promise<CurlReply> {
  const { stdout } = await run('curl', ['-sS', '--max-time', '10', '-D', '-', ...args, ...via.curl(urlPath)], {
    encoding: 'buffer',
    maxBuffer: 16 * 1024 * 1024,
  });
  const text = (stdout as Buffer).toString('utf8');
  const end = text.indexOf('\r\n\r\n');
  const lines = text.slice(0, end).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  expect(lines[0]?.split(' ')[0]).toBe(via.version);
  return { status: Number(lines[0]?.split(' ')[1]), headers, body: text.slice(end + 4) };
}

describe('encode through the built daemon (curl --compressed, Chromium)', () => {
  let proxyd: RunningProxyd;
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  let root: string;

  beforeAll(async () => {
    upstream = await startUpstream((req, res) => {
      if (req.url === '/gz') {
        const gz = zlib.gzipSync(PAGE);
        res.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'gzip', 'content-length': gz.length });
        res.end(gz);
      } else if (req.url === '/etag' && req.headers['if-none-match'] !== undefined) {
        res.writeHead(304, { etag: '"e1"' }).end();
      } else if (req.headers.range !== undefined) {
        res.writeHead(206, { 'content-type': 'text/html', 'content-range': `bytes 0-9/${PAGE.length}` });
        res.end(PAGE.slice(0, 10));
      } else {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', etag: '"e1"', 'content-length': PAGE.length });
        res.end(req.method === 'HEAD' ? undefined : PAGE);
      }
    });
    // Automatic HTTPS without redirects (the harness default): the site
    // answers plain HTTP and HTTPS, its certificate from the local CA.
    proxyd = await startProxyd({
      sites: `enc.localhost {
\tencode zstd br gzip
\treverse_proxy 127.0.0.1:${upstream.port}
}
`,
    });
    root = path.join(proxyd.dir, 'certs', 'ca', 'local', 'root.crt');
    await waitUntil(async () => (await curlHttps('enc.localhost', proxyd.httpsPort, root)).ok, 10_000);
  });

  afterAll(async () => {
    await proxyd?.stop();
    await upstream?.close();
  });

  const transports = (): Transport[] => [
    {
      name: 'HTTP/1.1',
      curl: (urlPath) => ['-H', 'Host: enc.localhost', `http://127.0.0.1:${proxyd.httpPort}${urlPath}`],
      page: `http://enc.localhost:${proxyd.httpPort}/`,
      version: 'HTTP/1.1',
    },
    {
      name: 'HTTP/2',
      curl: (urlPath) => [
        '--http2',
        '--cacert',
        root,
        '--resolve',
        `enc.localhost:${proxyd.httpsPort}:127.0.0.1`,
        `https://enc.localhost:${proxyd.httpsPort}${urlPath}`,
      ],
      page: `https://enc.localhost:${proxyd.httpsPort}/`,
      version: 'HTTP/2',
    },
  ];

  describe.each(['HTTP/1.1', 'HTTP/2'])('over %s', (protocol) => {
    let via: Transport;
    beforeAll(() => {
      via = transports().find((t) => t.name === protocol) as Transport;
    });

    it.each(['gzip', 'br', 'zstd'])('%s: curl decodes the page, with the analytics script in it', async (coding) => {
      const r = await curl(via, '/', ['--compressed', '-H', `Accept-Encoding: ${coding}`]);
      expect(r.status).toBe(200);
      expect(r.headers['content-encoding']).toBe(coding);
      expect(r.headers.vary).toBe('Accept-Encoding');
      // A small page (declared length under 64 KiB) is compressed whole: the length of its encoded bytes.
      expect(Number(r.headers['content-length'])).toBeGreaterThan(0);
      expect(Number(r.headers['content-length'])).toBeLessThan(PAGE.length);
      expect(r.headers.etag).toBe('W/"e1"');
      expect(r.body).toMatch(SCRIPT);
      expect(r.body.replace(SCRIPT, '</head>')).toBe(PAGE);
    });

    it("curl's own Accept-Encoding gets the server's first choice, zstd", async () => {
      const r = await curl(via, '/', ['--compressed']);
      expect(r.headers['content-encoding']).toBe('zstd');
      expect(r.body).toMatch(SCRIPT);
    });

    it('HEAD gets the head GET would, and no body', async () => {
      const head = await curl(via, '/', ['-I', '-H', 'Accept-Encoding: br']);
      expect(head.status).toBe(200);
      expect(head.headers['content-encoding']).toBe('br');
      expect(head.headers.vary).toBe('Accept-Encoding');
      expect(head.headers.etag).toBe('W/"e1"');
      // curl -I prints the head once more where a body would be: no page bytes.
      expect(head.body).not.toContain('<p>');
    });

    it('304 revalidating the encoded page: no body, the weak ETag and Vary', async () => {
      const r = await curl(via, '/etag', [
        '--compressed',
        '-H',
        'Accept-Encoding: gzip',
        '-H',
        'If-None-Match: W/"e1"',
      ]);
      expect(r.status).toBe(304);
      expect(r.headers['content-encoding']).toBeUndefined();
      expect(r.headers.etag).toBe('W/"e1"');
      expect(r.body).toBe('');
    });

    it('a range request is never encoded', async () => {
      const r = await curl(via, '/', ['--compressed', '-r', '0-9']);
      expect(r.status).toBe(206);
      expect(r.headers['content-encoding']).toBeUndefined();
      expect(r.body).toBe(PAGE.slice(0, 10));
    });

    it('an upstream gzip body is not encoded again (the script still injected)', async () => {
      const r = await curl(via, '/gz', ['--compressed', '-H', 'Accept-Encoding: zstd, gzip']);
      expect(r.headers['content-encoding']).toBe('gzip');
      expect(r.body).toMatch(SCRIPT);
    });

    it('identity for a client without Accept-Encoding', async () => {
      const r = await curl(via, '/');
      expect(r.headers['content-encoding']).toBeUndefined();
      expect(r.body).toMatch(SCRIPT);
    });

    it('Chromium loads the compressed page and runs the injected script', async () => {
      const userDataDir = await mkdtemp(path.join(tmpdir(), 'proxyd-enc-chromium-'));
      const context = await chromium.launchPersistentContext(userDataDir, {
        executablePath: '/usr/bin/chromium',
        headless: true,
        ignoreHTTPSErrors: true,
        args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking'],
      });
      try {
        const page = await context.newPage();
        const response = await page.goto(via.page);
        const headers = (await response?.allHeaders()) ?? {};
        expect(['br', 'gzip', 'zstd']).toContain(headers['content-encoding']);
        expect(
          await page.evaluate(
            // Runs in the page (DOM types are not in this project's lib).
            () =>
              (performance.getEntries() as unknown as Array<{ entryType: string; nextHopProtocol?: string }>).find(
                (e) => e.entryType === 'navigation',
              )?.nextHopProtocol,
          ),
        ).toBe(via.name === 'HTTP/2' ? 'h2' : 'http/1.1');
        expect(await page.locator('script[data-t]').count()).toBe(1);
        expect(await page.locator('p').count()).toBe(300);
      } finally {
        await context.close();
        await rm(userDataDir, { recursive: true, force: true });
      }
    });
  });
});
