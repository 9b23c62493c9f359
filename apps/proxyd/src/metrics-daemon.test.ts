// Issue 21: every new series, from real requests through a started daemon,
// read on the `metrics` listener (no token) and checked by promtool.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { defaultGlobalOptions } from '@proxyd/model';
import { createLogging } from '@proxyd/telemetry';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Daemon, loadProxyfile, startDaemon } from './daemon.js';

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

function request(
  port: number,
  options: { host?: string; path?: string; method?: string; headers?: http.OutgoingHttpHeaders; body?: string } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        path: options.path ?? '/',
        method: options.method ?? 'GET',
        headers: { ...(options.host ? { host: options.host } : {}), ...options.headers },
        agent: false,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          body += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

/** Leading zero bits of a SHA-256 digest (the under_attack proof of work). */
function leadingZeroBits(digest: Uint8Array): number {
  let bits = 0;
  for (const byte of digest) {
    if (byte !== 0) return bits + Math.clz32(byte) - 24;
    bits += 8;
  }
  return bits;
}

/** The value of one sample line (`name{labels} value`), undefined when absent. */
function sampleValue(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

let dir: string;
let daemon: Daemon;
let upstream: http.Server;
let release: () => void = () => {};
const held = new Set<http.ServerResponse>();

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'proxyd-metrics-daemon-'));
  upstream = http.createServer((req, res) => {
    req.resume();
    if (req.url === '/hold') {
      held.add(res);
      return;
    }
    if (req.url === '/page') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end('<!doctype html><html><head><title>t</title></head><body>hello</body></html>');
      return;
    }
    res.writeHead(200, { 'content-type': 'text/plain', 'cache-control': 'max-age=60' });
    res.end('upstream body\n');
  });
  release = () => {
    for (const res of held) res.end('released');
    held.clear();
  };
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const up = (upstream.address() as AddressInfo).port;
  const proxyfile = path.join(dir, 'Proxyfile');
  await writeFile(
    proxyfile,
    `{
	auto_https off
	metrics :9180
}

app.test {
	reverse_proxy 127.0.0.1:${up}
}

cached.test {
	cache
	reverse_proxy 127.0.0.1:${up}
}

limited.test {
	rate_limit 1/s
	reverse_proxy 127.0.0.1:${up}
}

attack.test {
	under_attack on {
		difficulty 4
	}
	reverse_proxy 127.0.0.1:${up}
}
`,
  );
  const config = await loadProxyfile(proxyfile);
  expect(config.global.metrics).toBe('127.0.0.1:9180');
  // Free ports for this test run; the Proxyfile's `metrics :9180` form is what a user writes.
  config.global = { ...config.global, http_port: 0, admin: '127.0.0.1:0', metrics: '127.0.0.1:0' };
  const sink = new Writable({ write: (_c, _e, done) => done() });
  const logging = createLogging('error', sink);
  daemon = await startDaemon({
    config,
    configPath: proxyfile,
    adminToken: 'metrics-daemon-test-token',
    stateDir: path.join(dir, 'state'),
    docker: false,
    bindHost: '127.0.0.1',
    logger: logging.root,
    logging,
  });
});

afterAll(async () => {
  release();
  await daemon?.close(0);
  await new Promise<void>((resolve) => {
    upstream?.close(() => resolve());
    upstream?.closeAllConnections();
  });
  await rm(dir, { recursive: true, force: true });
});

const proxy = (host: string, options: Parameters<typeof request>[1] = {}) =>
  request(daemon.httpAddress.port, { host, ...options });
const scrape = () => request(daemon.metricsAddress?.port ?? 0, { path: '/metrics' });

describe('metrics of a daemon that served traffic', () => {
  it('serves GET /metrics on the metrics listener without a token, and nothing else', async () => {
    expect(daemon.metricsAddress?.host).toBe('127.0.0.1');
    const res = await scrape();
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/plain; version=0.0.4');
    expect(res.body).toMatch(/^# TYPE proxyd_requests_total counter$/m);
    const head = await request(daemon.metricsAddress?.port ?? 0, { path: '/metrics', method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.body).toBe('');
    const other = await request(daemon.metricsAddress?.port ?? 0, { path: '/routes' });
    expect(other.status).toBe(404);
    expect(JSON.parse(other.body)).toEqual({ error: 'not found' });
    const post = await request(daemon.metricsAddress?.port ?? 0, { path: '/metrics', method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.allow).toBe('GET, HEAD');
    // The admin API's /metrics still wants its token.
    expect((await request(daemon.adminAddress.port, { path: '/metrics' })).status).toBe(401);
  });

  it('counts requests by method, their sizes and sub-millisecond durations', async () => {
    await proxy('app.test', { path: '/', method: 'POST', body: 'x'.repeat(2000) });
    await proxy('app.test', { path: '/', method: 'DELETE' });
    await proxy('app.test', { path: '/' });
    const { body } = await scrape();
    // Whatever the site answered them: the series of app.test's POSTs and DELETEs over HTTP/1.1.
    const count = (method: string) =>
      body
        .split('\n')
        .filter((l) => l.startsWith(`proxyd_http_requests_total{domain="app.test",method="${method}",protocol="h1",`))
        .reduce((n, l) => n + Number(l.split(' ').pop()), 0);
    expect(count('POST')).toBeGreaterThanOrEqual(1);
    expect(count('DELETE')).toBeGreaterThanOrEqual(1);
    expect(sampleValue(body, 'proxyd_request_size_bytes_sum')).toBeGreaterThanOrEqual(2000);
    expect(sampleValue(body, 'proxyd_request_size_bytes_bucket{le="1024"}')).toBeLessThan(
      sampleValue(body, 'proxyd_request_size_bytes_bucket{le="4096"}') ?? 0,
    );
    expect(sampleValue(body, 'proxyd_response_size_bytes_sum')).toBeGreaterThanOrEqual(3 * 'upstream body\n'.length);
    expect(body).toMatch(/^proxyd_request_duration_seconds_bucket\{le="0\.0001",status_class="2xx"\} \d+$/m);
    const sum = sampleValue(body, 'proxyd_request_duration_seconds_sum{status_class="2xx"}') ?? 0;
    expect(sum).toBeGreaterThan(0);
    expect(sum).toBeLessThan(10);
  });

  it('counts requests in flight and open connections while an upstream holds an answer', async () => {
    const pending = proxy('app.test', { path: '/hold' });
    const deadline = Date.now() + 3000;
    while (held.size === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    let { body } = await scrape();
    expect(sampleValue(body, 'proxyd_requests_in_flight')).toBe(1);
    expect(sampleValue(body, 'proxyd_open_connections')).toBeGreaterThanOrEqual(1);
    release();
    expect((await pending).body).toBe('released');
    ({ body } = await scrape());
    expect(sampleValue(body, 'proxyd_requests_in_flight')).toBe(0);
  });

  it('counts cache hits and misses', async () => {
    expect((await proxy('cached.test', { path: '/c' })).headers['x-cache']).toBe('MISS');
    await new Promise((r) => setTimeout(r, 30));
    expect((await proxy('cached.test', { path: '/c' })).headers['x-cache']).toBe('HIT');
    const { body } = await scrape();
    expect(sampleValue(body, 'proxyd_cache_requests_total{result="miss"}')).toBe(1);
    expect(sampleValue(body, 'proxyd_cache_requests_total{result="hit"}')).toBe(1);
  });

  it('counts rate-limit refusals per domain', async () => {
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await proxy('limited.test')).status);
    expect(statuses).toEqual([200, 429, 429]);
    const { body } = await scrape();
    expect(sampleValue(body, 'proxyd_rate_limited_total{domain="limited.test"}')).toBe(2);
    expect(body).not.toContain('proxyd_rate_limited_total{domain="app.test"}');
  });

  it('counts under_attack challenges issued, failed and passed', async () => {
    const page = await proxy('attack.test');
    expect(page.status).toBe(503);
    const token = /var T="([^"]+)"/.exec(page.body)?.[1] as string;
    const solves = (n: number) => leadingZeroBits(createHash('sha256').update(`${token}:${n}`).digest()) >= 4;
    let good = 0;
    while (!solves(good)) good++;
    let bad = 0;
    while (solves(bad)) bad++;
    const post = (n: number) =>
      proxy('attack.test', {
        path: '/_proxyd/challenge',
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: `token=${token}&counter=${n}`,
      });
    expect((await post(bad)).status).toBe(403);
    expect((await post(good)).status).toBe(204);
    const { body } = await scrape();
    expect(sampleValue(body, 'proxyd_under_attack_challenges_total{result="issued"}')).toBe(1);
    expect(sampleValue(body, 'proxyd_under_attack_challenges_total{result="failed"}')).toBe(1);
    expect(sampleValue(body, 'proxyd_under_attack_challenges_total{result="passed"}')).toBe(1);
  });

  it('counts analytics beacons accepted and rejected', async () => {
    const page = await proxy('app.test', { path: '/page' });
    const token = /data-t="([^"]+)"/.exec(page.body)?.[1] as string;
    expect(token).toBeTruthy();
    const beacon = (t: string) =>
      proxy('app.test', {
        path: '/_proxyd/collect',
        method: 'POST',
        headers: { 'content-type': 'text/plain;charset=UTF-8' },
        body: JSON.stringify({ t, m: [{ n: 'LCP', v: 1200 }] }),
      });
    expect((await beacon(token)).status).toBe(204);
    expect((await beacon('not-a-token')).status).toBe(403);
    expect((await proxy('app.test', { path: '/_proxyd/collect' })).status).toBe(405);
    const { body } = await scrape();
    expect(sampleValue(body, 'proxyd_analytics_beacons_total{result="accepted"}')).toBe(1);
    expect(sampleValue(body, 'proxyd_analytics_beacons_total{result="rejected"}')).toBe(2);
  });

  it('counts reloads and whether the last one succeeded', async () => {
    let { body } = await scrape();
    expect(sampleValue(body, 'proxyd_config_last_reload_successful')).toBe(1);
    expect(sampleValue(body, 'proxyd_config_reloads_total{result="success"}')).toBe(0);
    const started = sampleValue(body, 'proxyd_config_last_reload_success_timestamp_seconds') ?? 0;
    expect(Math.abs(started - Date.now() / 1000)).toBeLessThan(120);
    const proxyfile = path.join(dir, 'Proxyfile');
    const { readFile } = await import('node:fs/promises');
    const good = await readFile(proxyfile, 'utf8');
    await writeFile(proxyfile, `${good}\nbroken.test {\n\treverse_proxy\n`);
    expect((await daemon.reload?.())?.ok).toBe(false);
    ({ body } = await scrape());
    expect(sampleValue(body, 'proxyd_config_reloads_total{result="failure"}')).toBe(1);
    expect(sampleValue(body, 'proxyd_config_last_reload_successful')).toBe(0);
    await writeFile(proxyfile, good);
    expect((await daemon.reload?.())?.ok).toBe(true);
    ({ body } = await scrape());
    expect(sampleValue(body, 'proxyd_config_reloads_total{result="success"}')).toBe(1);
    expect(sampleValue(body, 'proxyd_config_last_reload_successful')).toBe(1);
  });

  it('passes promtool check metrics, with no _other series', async () => {
    const { body } = await scrape();
    expect(body).not.toContain('_other');
    const check = spawnSync('promtool', ['check', 'metrics'], { input: body, encoding: 'utf8' });
    expect(`${check.stdout}${check.stderr}`.trim()).toBe('');
    expect(check.status).toBe(0);
  });
});

describe('the metrics option at start', () => {
  const config = () => ({
    global: { ...defaultGlobalOptions(), auto_https: 'off' as const, http_port: 0, admin: '127.0.0.1:0' },
    sites: [],
  });
  const logged = () => {
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const line of chunk.toString().split('\n')) if (line) lines.push(JSON.parse(line));
        done();
      },
    });
    return { lines, logging: createLogging('info', sink) };
  };

  it('opens no listener with --no-metrics, and says so', async () => {
    const { lines, logging } = logged();
    const stateDir = await mkdtemp(path.join(tmpdir(), 'proxyd-no-metrics-'));
    const d = await startDaemon({
      config: { ...config(), global: { ...config().global, metrics: '127.0.0.1:0' } },
      metrics: false,
      docker: false,
      stateDir,
      logger: logging.root,
      logging,
    });
    try {
      expect(d.metricsAddress).toBeNull();
      expect(lines).toContainEqual(
        expect.objectContaining({ level: 'warn', msg: 'metrics listener not opened: metrics are off (--no-metrics)' }),
      );
    } finally {
      await d.close(0);
      await rm(stateDir, { recursive: true, force: true });
    }
  });

  it('fails to start when its address is taken, and leaves no listener behind', async () => {
    const taken = http.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as AddressInfo).port;
    const { logging } = logged();
    const stateDir = await mkdtemp(path.join(tmpdir(), 'proxyd-metrics-taken-'));
    const free = await new Promise<number>((resolve) => {
      const probe = http.createServer().listen(0, '127.0.0.1', () => {
        const p = (probe.address() as AddressInfo).port;
        probe.close(() => resolve(p));
      });
    });
    try {
      await expect(
        startDaemon({
          config: {
            ...config(),
            global: { ...config().global, admin: `127.0.0.1:${free}`, metrics: `127.0.0.1:${port}` },
          },
          docker: false,
          stateDir,
          logger: logging.root,
          logging,
        }),
      ).rejects.toThrow(/EADDRINUSE/);
      // The admin listener it had opened is closed again: its port can be bound.
      const again = http.createServer();
      await new Promise<void>((resolve, reject) => {
        again.once('error', reject);
        again.listen(free, '127.0.0.1', resolve);
      });
      await new Promise<void>((resolve) => again.close(() => resolve()));
    } finally {
      await new Promise<void>((resolve) => taken.close(() => resolve()));
      await rm(stateDir, { recursive: true, force: true });
    }
  });
});
