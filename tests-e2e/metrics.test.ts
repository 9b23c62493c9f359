import { spawnSync } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, adminCall } from './support/admin.js';
import { freePort, type RunningProxyd, request, startProxyd, startUpstream } from './support/proxyd.js';

// Issue 21: the `metrics` listener of the built daemon (GET /metrics without
// the admin token, outside the admin API's 60-a-minute budget), and the new
// series summed over `--workers 2`, checked by promtool.

/** The value of one sample line (`name{labels} value`), undefined when absent. */
function sampleValue(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** `promtool check metrics`'s complaints (empty when the exposition is clean). */
function promtool(text: string): string {
  const check = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
  return `${check.stdout}${check.stderr}${check.status === 0 ? '' : `exit ${check.status}`}`.trim();
}

/** `n` requests at once, each on its own connection (so spread over the workers by the kernel); their statuses. */
async function burst(port: number, host: string, n: number, path = '/'): Promise<string[]> {
  const sockets = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<net.Socket>((resolve, reject) => {
          const socket = net.connect(port, '127.0.0.1', () => resolve(socket));
          socket.once('error', reject);
        }),
    ),
  );
  const replies = sockets.map(
    (socket) =>
      new Promise<string>((resolve) => {
        let text = '';
        socket.setEncoding('utf8');
        socket.on('data', (chunk: string) => {
          text += chunk;
        });
        socket.on('close', () => resolve(text));
      }),
  );
  for (const socket of sockets) socket.write(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
  return await Promise.all(replies);
}

describe('the metrics listener', () => {
  let proxyd: RunningProxyd;
  let metricsPort: number;
  let upstream: Awaited<ReturnType<typeof startUpstream>>;

  beforeAll(async () => {
    upstream = await startUpstream((_req, res) => res.end('ok'));
    metricsPort = await freePort();
    proxyd = await startProxyd({
      // `:port`: loopback.
      global: `\tmetrics :${metricsPort}\n`,
      env: { PROXY_ADMIN_TOKEN: ADMIN_TOKEN },
      sites: `http://app.localhost {\n\treverse_proxy 127.0.0.1:${upstream.port}\n}\n`,
    });
  });

  afterAll(async () => {
    await proxyd?.stop();
    await upstream?.close();
  });

  it('binds 127.0.0.1 for `metrics :port`, and says where in the ready line', () => {
    const ready = proxyd
      .output()
      .split('\n')
      .find((line) => line.includes('"msg":"proxyd ready"'));
    expect(JSON.parse(ready ?? '{}').metrics).toBe(`127.0.0.1:${metricsPort}`);
  });

  it('answers GET /metrics without a token, 80 times in a row, where the admin API stops at 60', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 80; i++) statuses.push((await request(metricsPort, { path: '/metrics' })).status);
    expect(statuses).toEqual(Array(80).fill(200));
    const admin: number[] = [];
    for (let i = 0; i < 61; i++) admin.push((await adminCall(proxyd.adminPort, 'GET', '/metrics')).status);
    expect(admin.slice(0, 60)).toEqual(Array(60).fill(200));
    expect(admin[60]).toBe(429);
    // The listener is not the admin API: it still answers, and a token buys nothing else there.
    expect((await request(metricsPort, { path: '/metrics' })).status).toBe(200);
    const routes = await request(metricsPort, { path: '/routes', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(routes.status).toBe(404);
    const post = await request(metricsPort, { path: '/metrics', method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.allow).toBe('GET, HEAD');
  });

  it('shows the traffic served, and passes promtool check metrics', async () => {
    for (const method of ['GET', 'POST', 'PUT']) {
      await request(proxyd.httpPort, {
        method,
        headers: { host: 'app.localhost' },
        body: method === 'GET' ? '' : 'data',
      });
    }
    const res = await request(metricsPort, { path: '/metrics' });
    expect(res.headers['content-type']).toBe('text/plain; version=0.0.4');
    expect(sampleValue(res.body, 'proxyd_requests_total{domain="app.localhost",status_class="2xx"}')).toBe(3);
    expect(
      sampleValue(
        res.body,
        'proxyd_http_requests_total{domain="app.localhost",method="PUT",protocol="h1",status_class="2xx"}',
      ),
    ).toBe(1);
    expect(sampleValue(res.body, 'proxyd_request_size_bytes_sum')).toBe(8);
    expect(sampleValue(res.body, 'proxyd_config_last_reload_successful')).toBe(1);
    expect(res.body).not.toContain('_other');
    expect(promtool(res.body)).toBe('');
  });
});

describe('the new series with two workers', () => {
  let proxyd: RunningProxyd;
  let metricsPort: number;
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  let cacheable: Awaited<ReturnType<typeof startUpstream>>;

  beforeAll(async () => {
    upstream = await startUpstream((_req, res) => res.end('ok'));
    cacheable = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain', 'cache-control': 'public, max-age=600' }).end('cacheable');
    });
    metricsPort = await freePort();
    proxyd = await startProxyd({
      args: ['--workers', '2'],
      global: `\tmetrics 127.0.0.1:${metricsPort}\n`,
      env: { PROXY_ADMIN_TOKEN: ADMIN_TOKEN, PROXY_LOG: 'info,proxy::access=info' },
      sites: `http://limited.localhost {
\trate_limit 5/s
\treverse_proxy 127.0.0.1:${upstream.port}
}

http://cached.localhost {
\tcache
\treverse_proxy 127.0.0.1:${cacheable.port}
}
`,
    });
  });

  afterAll(async () => {
    await proxyd?.stop();
    await upstream?.close();
    await cacheable?.close();
  });

  it('sums requests by method, rate-limit refusals and cache results over the workers', async () => {
    const limited = await burst(proxyd.httpPort, 'limited.localhost', 30);
    const refused = limited.filter((reply) => reply.startsWith('HTTP/1.1 429')).length;
    expect(refused).toBeGreaterThan(0);
    const cached = await burst(proxyd.httpPort, 'cached.localhost', 20, '/page');
    // Fills finish after the last byte: a second round is answered from each worker's cache.
    await new Promise((r) => setTimeout(r, 100));
    cached.push(...(await burst(proxyd.httpPort, 'cached.localhost', 20, '/page')));
    const hits = cached.filter((reply) => /\r\nx-cache: HIT\r\n/i.test(reply)).length;
    const misses = cached.filter((reply) => /\r\nx-cache: MISS\r\n/i.test(reply)).length;
    expect(hits + misses).toBe(40);
    expect(hits).toBeGreaterThan(0);
    // Every worker took part (as workers.test.ts checks, by the access log's worker index).
    const workers = new Set(
      proxyd
        .output()
        .split('\n')
        .filter((l) => l.includes('"target":"proxy::access"') && l.includes('limited.localhost'))
        .map((l) => (JSON.parse(l) as { worker: number }).worker),
    );
    expect(workers).toEqual(new Set([0, 1]));
    const { body } = await request(metricsPort, { path: '/metrics' });
    // Every GET the clients sent, whatever its domain and status, summed over the workers' series.
    const gets = body
      .split('\n')
      .filter((l) => l.startsWith('proxyd_http_requests_total{') && l.includes('method="GET"'))
      .reduce((n, l) => n + Number(l.split(' ').pop()), 0);
    expect(gets).toBe(70);
    expect(sampleValue(body, 'proxyd_rate_limited_total{domain="limited.localhost"}')).toBe(refused);
    expect(sampleValue(body, 'proxyd_cache_requests_total{result="hit"}')).toBe(hits);
    expect(sampleValue(body, 'proxyd_cache_requests_total{result="miss"}')).toBe(misses);
    expect(sampleValue(body, 'proxyd_request_duration_seconds_count{status_class="2xx"}')).toBe(70 - refused);
    expect(sampleValue(body, 'proxyd_response_size_bytes_count')).toBe(70);
    expect(sampleValue(body, 'proxyd_requests_in_flight')).toBe(0);
    // The control plane's series once, not once per process.
    expect(body.match(/^proxyd_config_last_reload_successful /gm)).toHaveLength(1);
    expect(body.match(/^# TYPE proxyd_open_connections gauge$/gm)).toHaveLength(1);
    expect(body).not.toContain('_other');
    expect(promtool(body)).toBe('');
  });

  it('counts the open connections of every worker', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 6 });
    try {
      await Promise.all(
        Array.from(
          { length: 6 },
          () =>
            new Promise<void>((resolve, reject) => {
              http
                .get(
                  { host: '127.0.0.1', port: proxyd.httpPort, headers: { host: 'cached.localhost' }, agent },
                  (res) => {
                    res.resume();
                    res.on('end', () => resolve());
                  },
                )
                .on('error', reject);
            }),
        ),
      );
      const { body } = await request(metricsPort, { path: '/metrics' });
      expect(sampleValue(body, 'proxyd_open_connections')).toBeGreaterThanOrEqual(1);
      expect(sampleValue(body, 'proxyd_open_connections')).toBeLessThanOrEqual(6);
    } finally {
      agent.destroy();
    }
  });
});
