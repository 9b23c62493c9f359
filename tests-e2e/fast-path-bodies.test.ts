import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningProxyd, startProxyd, startUpstream } from './support/proxyd.js';

const run = promisify(execFile);

// Issue 32: curl's uploads through the built daemon — JSON and form POSTs,
// PUT, an empty POST, a chunked upload, Expect: 100-continue, HTTP/1.0,
// Connection: close — get the same answers, and the upstream the same
// requests, with the HTTP/1.1 fast path on (the default) and off
// (PROXY_FAST_PATH=0). Which path served a request the daemon does not
// say; the proxy-core loopback test (src/fast/fast-bodies.loopback.test.ts)
// pins that with the fast path's request counter.
describe('request bodies through the built daemon, fast path on and off', () => {
  const daemons: RunningProxyd[] = [];
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  /** What the upstream received, per request: method, target and raw header lines, body size and digest. */
  const seen: string[] = [];
  let dir = '';

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'proxyd-bodies-'));
    const json = JSON.stringify({ items: Array.from({ length: 30 }, (_, i) => ({ id: i, name: `item ${i}` })) });
    await writeFile(path.join(dir, 'small.json'), json);
    const big = Buffer.alloc(300_000);
    for (let i = 0; i < big.length; i++) big[i] = (i * 31) & 255;
    await writeFile(path.join(dir, 'big.bin'), big);
    upstream = await startUpstream((req, res) => {
      const hash = createHash('sha256');
      let size = 0;
      req.on('data', (c: Buffer) => {
        size += c.length;
        hash.update(c);
      });
      req.on('end', () => {
        const summary = `${req.method} ${req.url} ${size} ${hash.digest('hex').slice(0, 16)}`;
        // The upstream's view without what differs between two daemons (their ports, the pooled connection).
        seen.push(`${summary} ${JSON.stringify(req.rawHeaders)}`);
        res.writeHead(200, { 'content-type': 'text/plain', 'x-up': 'yes' });
        res.end(summary);
      });
    });
    const sites = `http://app.test {\n\treverse_proxy 127.0.0.1:${upstream.port}\n}\n`;
    daemons.push(await startProxyd({ sites }));
    daemons.push(await startProxyd({ sites, env: { PROXY_FAST_PATH: '0' } }));
  });

  afterAll(async () => {
    for (const d of daemons) await d.stop();
    await upstream?.close();
    if (dir !== '') await rm(dir, { recursive: true, force: true });
  });

  /** curl's `-i` output for these arguments against a daemon, Date lines blanked. */
  async function curl(d: RunningProxyd, args: string[]): Promise<string> {
    const { stdout } = await run(
      'curl',
      ['-s', '-i', '--max-time', '20', '-H', 'Host: app.test', ...args, `http://127.0.0.1:${d.httpPort}/up`],
      { cwd: dir, encoding: 'latin1', maxBuffer: 4 * 1024 * 1024 },
    );
    return stdout.replace(/\r\ndate: [^\r]*/gi, '\r\nDate: -');
  }

  const cases: [string, string[]][] = [
    ['a JSON POST', ['-H', 'Content-Type: application/json', '--data-binary', '@small.json']],
    ['a form PUT', ['-X', 'PUT', '--data', 'a=1&b=two&c=%C3%A9']],
    ['an empty POST (Content-Length: 0)', ['--data', '']],
    ['a POST without a body', ['-X', 'POST']],
    ['a chunked upload', ['-H', 'Transfer-Encoding: chunked', '--data-binary', '@big.bin']],
    ['Expect: 100-continue', ['-H', 'Expect: 100-continue', '--data-binary', '@big.bin']],
    ['HTTP/1.0 GET', ['--http1.0']],
    ['HTTP/1.0 POST', ['--http1.0', '--data-binary', '@small.json']],
    ['Connection: close', ['-H', 'Connection: close', '--data-binary', '@small.json']],
  ];

  for (const [name, args] of cases) {
    it(`answers ${name} the same either way`, async () => {
      const [fast, slow] = daemons as [RunningProxyd, RunningProxyd];
      const before = seen.length;
      const a = await curl(fast, args);
      const b = await curl(slow, args);
      expect(a).toMatch(/HTTP\/1\.1 200 OK\r\n/);
      expect(a).toBe(b);
      // One request each, the same to the upstream.
      expect(seen.length).toBe(before + 2);
      expect(seen[before]).toBe(seen[before + 1]);
    });
  }
});
