import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningProxyd, startProxyd, startUpstream } from './support/proxyd.js';

// The built daemon with `encode` in front of a real upstream, answered to
// real clients: curl --compressed (gzip, br and zstd in this curl build, see
// `curl -V`) and headless Chromium. The analytics script is injected before
// compression, so it is in every decoded page.
const run = promisify(execFile);

const PAGE = `<!doctype html><html><head><meta charset="utf-8"><title>enc</title></head><body>${'<p>compressible paragraph, said again and again</p>\n'.repeat(300)}</body></html>`;
const SCRIPT = /<script src="\/_proxyd\/a\.js\?v=[\w-]+" data-t="[\w.-]+" defer><\/script><\/head>/;

interface CurlReply {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** curl against the daemon's HTTP port with Host `host`; `--compressed` decodes the body. */
async function curl(port: number, host: string, urlPath: string, args: string[] = []): Promise<CurlReply> {
  const { stdout } = await run(
    'curl',
    ['-sS', '--max-time', '10', '-D', '-', '-H', `Host: ${host}`, ...args, `http://127.0.0.1:${port}${urlPath}`],
    { encoding: 'buffer', maxBuffer: 16 * 1024 * 1024 },
  );
  const text = (stdout as Buffer).toString('utf8');
  const end = text.indexOf('\r\n\r\n');
  const lines = text.slice(0, end).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(lines[0]?.split(' ')[1]), headers, body: text.slice(end + 4) };
}

describe('encode through the built daemon (curl --compressed, Chromium)', () => {
  let proxyd: RunningProxyd;
  let upstream: Awaited<ReturnType<typeof startUpstream>>;

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
    proxyd = await startProxyd({
      sites: `http://enc.localhost {
\tencode zstd br gzip
\treverse_proxy 127.0.0.1:${upstream.port}
}
`,
    });
  });

  afterAll(async () => {
    await proxyd?.stop();
    await upstream?.close();
  });

  it.each(['gzip', 'br', 'zstd'])('%s: curl decodes the page, with the analytics script in it', async (coding) => {
    const r = await curl(proxyd.httpPort, 'enc.localhost', '/', ['--compressed', '-H', `Accept-Encoding: ${coding}`]);
    expect(r.status).toBe(200);
    expect(r.headers['content-encoding']).toBe(coding);
    expect(r.headers.vary).toBe('Accept-Encoding');
    expect(r.headers['content-length']).toBeUndefined();
    expect(r.headers.etag).toBe('W/"e1"');
    expect(r.body).toMatch(SCRIPT);
    expect(r.body.replace(SCRIPT, '</head>')).toBe(PAGE);
  });

  it("curl's own Accept-Encoding gets the server's first choice, zstd", async () => {
    const r = await curl(proxyd.httpPort, 'enc.localhost', '/', ['--compressed']);
    expect(r.headers['content-encoding']).toBe('zstd');
    expect(r.body).toMatch(SCRIPT);
  });

  it('HEAD gets the head GET would, and no body', async () => {
    const head = await curl(proxyd.httpPort, 'enc.localhost', '/', ['-I', '-H', 'Accept-Encoding: br']);
    expect(head.status).toBe(200);
    expect(head.headers['content-encoding']).toBe('br');
    expect(head.headers.vary).toBe('Accept-Encoding');
    expect(head.headers.etag).toBe('W/"e1"');
    // curl -I prints the head once more where a body would be: no page bytes.
    expect(head.body).not.toContain('<p>');
  });

  it('304 revalidating the encoded page: no body, the weak ETag and Vary', async () => {
    const r = await curl(proxyd.httpPort, 'enc.localhost', '/etag', [
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
    const r = await curl(proxyd.httpPort, 'enc.localhost', '/', ['--compressed', '-r', '0-9']);
    expect(r.status).toBe(206);
    expect(r.headers['content-encoding']).toBeUndefined();
    expect(r.body).toBe(PAGE.slice(0, 10));
  });

  it('an upstream gzip body is not encoded again (the script still injected)', async () => {
    const r = await curl(proxyd.httpPort, 'enc.localhost', '/gz', [
      '--compressed',
      '-H',
      'Accept-Encoding: zstd, gzip',
    ]);
    expect(r.headers['content-encoding']).toBe('gzip');
    expect(r.body).toMatch(SCRIPT);
  });

  it('identity for a client without Accept-Encoding', async () => {
    const r = await curl(proxyd.httpPort, 'enc.localhost', '/');
    expect(r.headers['content-encoding']).toBeUndefined();
    expect(r.body).toMatch(SCRIPT);
  });

  it('Chromium loads the compressed page and runs the injected script', async () => {
    const userDataDir = await mkdtemp(path.join(tmpdir(), 'proxyd-enc-chromium-'));
    const context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: '/usr/bin/chromium',
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
    });
    try {
      const page = await context.newPage();
      const response = await page.goto(`http://enc.localhost:${proxyd.httpPort}/`);
      const headers = (await response?.allHeaders()) ?? {};
      expect(['br', 'gzip', 'zstd']).toContain(headers['content-encoding']);
      expect(await page.locator('script[data-t]').count()).toBe(1);
      expect(await page.locator('p').count()).toBe(300);
    } finally {
      await context.close();
      await rm(userDataDir, { recursive: true, force: true });
    }
  });
});
