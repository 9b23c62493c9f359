import http from 'node:http';
import { describe, expect, it } from 'vitest';
import { ADMIN_TOKEN } from './support/admin.js';
import { startProxyd, startUpstream } from './support/proxyd.js';

// Issue 20, defect 1: a stop finishes what is in flight, as nginx and Caddy
// do. SIGTERM: the listeners stop accepting, requests, downloads and admin
// writes in flight are answered within the grace period, and the daemon
// exits within grace + 1 s; a second signal exits at once. Runs with the
// default workers, and again with PROXY_WORKERS=1 (`pnpm test`).

const BIG = 20 * 1024 * 1024;

interface Outcome {
  status: number | string;
  bytes: number;
}

/** One request on its own connection; resolves what arrived, or the error code. */
function fetchAll(port: number, path: string, host: string, options: http.RequestOptions = {}): Promise<Outcome> {
  return new Promise((resolve) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        path,
        agent: false,
        headers: { host, ...options.headers },
        method: options.method ?? 'GET',
      },
      (res) => {
        let bytes = 0;
        res.on('data', (c: Buffer) => {
          bytes += c.length;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes }));
        res.on('error', (err: NodeJS.ErrnoException) => resolve({ status: err.code ?? 'error', bytes }));
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ status: err.code ?? 'error', bytes: 0 }));
    req.end(options.method === 'POST' ? (options as { body?: string }).body : undefined);
  });
}

describe('stopping with work in flight', () => {
  it('SIGTERM: in-flight requests, a 20 MB download and admin writes all finish; exit within grace + 1 s', async () => {
    const big = Buffer.alloc(BIG, 'x');
    const upstream = await startUpstream((req, res) => {
      if (req.url === '/big') {
        res.writeHead(200, { 'content-length': BIG });
        // Slowly: the download is still running when the signal comes.
        let sent = 0;
        const step = () => {
          if (sent >= BIG) return void res.end();
          const chunk = big.subarray(sent, sent + 1024 * 1024);
          sent += chunk.length;
          res.write(chunk);
          setTimeout(step, 60);
        };
        step();
      } else setTimeout(() => res.end('slow ok'), 800);
    });
    const proxyd = await startProxyd({
      env: { PROXY_ADMIN_TOKEN: ADMIN_TOKEN },
      global: '\tgrace_period 10s\n',
      sites: `http://app.localhost {\n\treverse_proxy 127.0.0.1:${upstream.port}\n}\n`,
    });
    try {
      const download = fetchAll(proxyd.httpPort, '/big', 'app.localhost');
      const slow = Array.from({ length: 50 }, () => fetchAll(proxyd.httpPort, '/slow', 'app.localhost'));
      const writes = Array.from({ length: 20 }, (_, i) =>
        fetchAll(proxyd.adminPort, '/routes', '127.0.0.1', {
          method: 'POST',
          headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
          body: JSON.stringify({ domain: `w${i}.localhost`, upstream: `127.0.0.1:${upstream.port}`, tls: false }),
        } as http.RequestOptions),
      );
      await new Promise((r) => setTimeout(r, 200));
      const signalled = Date.now();
      const exited = new Promise<number | null>((r) => proxyd.child.once('exit', (code) => r(code)));
      proxyd.child.kill('SIGTERM');
      const [big1, slows, posts] = await Promise.all([download, Promise.all(slow), Promise.all(writes)]);
      const code = await exited;
      const took = Date.now() - signalled;
      console.info(`SIGTERM: exit ${code} after ${took} ms; download ${big1.bytes} bytes`);
      expect(big1).toEqual({ status: 200, bytes: BIG });
      expect(slows.map((s) => s.status)).toEqual(Array(50).fill(200));
      expect(posts.map((p) => p.status)).toEqual(Array(20).fill(201));
      expect(code).toBe(0);
      expect(took).toBeLessThan(10_000 + 1000);
      // New connections are refused once it stopped accepting.
      expect((await fetchAll(proxyd.httpPort, '/', 'app.localhost')).status).toBe('ECONNREFUSED');
    } finally {
      await proxyd.stop();
      await upstream.close();
    }
  });

  it('a request longer than the grace period is cut when it ends; a second signal exits at once', async () => {
    const upstream = await startUpstream(() => {
      // Never answers.
    });
    const proxyd = await startProxyd({
      global: '\tgrace_period 1s\n',
      sites: `http://app.localhost {\n\treverse_proxy 127.0.0.1:${upstream.port}\n}\n`,
    });
    try {
      const hung = fetchAll(proxyd.httpPort, '/hang', 'app.localhost');
      await new Promise((r) => setTimeout(r, 200));
      let signalled = Date.now();
      let exited = new Promise<number | null>((r) => proxyd.child.once('exit', (code) => r(code)));
      proxyd.child.kill('SIGTERM');
      expect((await hung).status).toBe('ECONNRESET');
      expect(await exited).toBe(0);
      const took = Date.now() - signalled;
      expect(took).toBeGreaterThanOrEqual(900);
      expect(took).toBeLessThan(2000);
      expect(proxyd.output()).toContain('shutting down: finishing requests in flight');

      // Again, and a second signal before the grace period ends.
      const again = await startProxyd({
        global: '\tgrace_period 30s\n',
        sites: `http://app.localhost {\n\treverse_proxy 127.0.0.1:${upstream.port}\n}\n`,
      });
      try {
        const hung2 = fetchAll(again.httpPort, '/hang', 'app.localhost');
        await new Promise((r) => setTimeout(r, 200));
        exited = new Promise<number | null>((r) => again.child.once('exit', (code) => r(code)));
        again.child.kill('SIGTERM');
        await new Promise((r) => setTimeout(r, 300));
        signalled = Date.now();
        again.child.kill('SIGTERM');
        expect(await exited).toBe(1);
        expect(Date.now() - signalled).toBeLessThan(1000);
        expect((await hung2).status).toBe('ECONNRESET');
      } finally {
        await again.stop();
      }
    } finally {
      await proxyd.stop();
      await upstream.close();
    }
  });
});
