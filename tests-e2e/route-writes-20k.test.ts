import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, adminCall } from './support/admin.js';
import { type RunningProxyd, startProxyd, startUpstream } from './support/proxyd.js';

// Issue 30: 20,000 API routes on one node with automatic HTTPS on (the
// `.test` names certified by the local CA in the background), default
// workers. A route write costs what it changes: ~30 POST /routes answer
// 201, 9 in 10 within 300 ms (the p99 of 100 ms, ×3; of 30
// samples the "p99" is the slowest one, which one scheduler or fsync
// hiccup decides beside a CPU hog) and none over 1 s (main took seconds
// at this size, then answered 500), a site keeps answering
// meanwhile (stall ≤ 60 ms, its 20 ms ×3), no write answers 5xx and the
// daemon never runs out of file descriptors (no EMFILE in its log). The
// routes are in the state file before the start, as `PUT /routes/snapshot`
// leaves them (and as bench/names loads them).

const ROUTES = 20_000;
const WRITES = 30;
const PROBE = 'probe.names.test';

/** The state file as the route store writes it: one route per line, sorted by domain. */
function stateFile(names: string[], upstream: string): string {
  const lines = [...names].sort().map((domain) => JSON.stringify({ domain, upstream, tls: false, source: null }));
  return `{"format":"proxyd-routes/1","routes":[\n${lines.join(',\n')}\n]}\n`;
}

/** One GET of `host` over a keep-alive agent; its time in ms (a failure counts with its time). */
function timedGet(port: number, host: string, agent: http.Agent): Promise<{ ms: number; status: number }> {
  const started = performance.now();
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/', headers: { host }, agent }, (res) => {
      res.resume();
      res.on('end', () => resolve({ ms: performance.now() - started, status: res.statusCode ?? 0 }));
    });
    req.setTimeout(5000, () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve({ ms: performance.now() - started, status: 0 }));
  });
}

const quantile = (values: number[], q: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? 0;
};

describe('20,000 API routes with automatic HTTPS on (issue 30)', () => {
  let proxyd: RunningProxyd;
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  let stateDir: string;
  let startedInMs = 0;

  beforeAll(async () => {
    upstream = await startUpstream((_req, res) => res.end('ok'));
    stateDir = await mkdtemp(path.join(tmpdir(), 'proxyd-20k-'));
    await chmod(stateDir, 0o700);
    await mkdir(stateDir, { recursive: true });
    const names = Array.from({ length: ROUTES }, (_, i) => `s${i}.names.test`);
    await writeFile(path.join(stateDir, 'routes.json'), stateFile(names, `127.0.0.1:${upstream.port}`));
    const started = performance.now();
    proxyd = await startProxyd({
      autoHttps: 'on',
      // The probe site is plain HTTP (no wait for its certificate); the 20,000 API routes are HTTPS sites.
      sites: `http://${PROBE} {\n\treverse_proxy 127.0.0.1:${upstream.port}\n}\n`,
      args: ['--state-dir', stateDir, '--no-docker'],
      env: { PROXY_ADMIN_TOKEN: ADMIN_TOKEN, PROXY_LOG: 'warn' },
      ready: 'health',
    });
    startedInMs = performance.now() - started;
  }, 120_000);

  afterAll(async () => {
    await proxyd?.stop();
    await upstream?.close();
    await rm(stateDir, { recursive: true, force: true });
  });

  it('answers every write 201, 9 in 10 within 300 ms and none over 1 s, while a site keeps answering (stall ≤ 60 ms), no EMFILE', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      // The site answers through the data plane before anything is measured.
      expect((await timedGet(proxyd.httpPort, PROBE, agent)).status).toBe(200);
      // Quiet: the probe's median, the machine's noise floor.
      const idle: number[] = [];
      const quietUntil = performance.now() + 3000;
      while (performance.now() < quietUntil) idle.push((await timedGet(proxyd.httpPort, PROBE, agent)).ms);

      const during: number[] = [];
      const probeStatuses = new Set<number>();
      let writing = true;
      const probe = (async () => {
        while (writing) {
          const r = await timedGet(proxyd.httpPort, PROBE, agent);
          during.push(r.ms);
          probeStatuses.add(r.status);
        }
      })();
      const writes: Array<{ ms: number; status: number; body: string }> = [];
      // Bounded for CI: a daemon that takes seconds per write fails on the times below, not on the test's timeout.
      const writesUntil = performance.now() + 45_000;
      for (let i = 0; i < WRITES && performance.now() < writesUntil; i++) {
        // Even writes add a name (a new certificate to get), odd ones replace a preloaded route.
        const domain = i % 2 === 0 ? `w${i}.names.test` : `s${i * 613}.names.test`;
        const started = performance.now();
        // A write with no answer within 10 s counts as failed (status 0), so the test ends in its time.
        const res = await Promise.race([
          adminCall(proxyd.adminPort, 'POST', '/routes', {
            domain,
            upstream: `127.0.0.1:${upstream.port}`,
            tls: false,
          }),
          new Promise<{ status: number; body: string }>((resolve) =>
            setTimeout(() => resolve({ status: 0, body: 'no answer within 10 s' }), 10_000),
          ),
        ]);
        writes.push({ ms: performance.now() - started, status: res.status, body: res.body });
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      writing = false;
      await probe;

      const times = writes.map((w) => Math.round(w.ms));
      const detail = () =>
        `start ${Math.round(startedInMs)} ms; writes ${times.join(' ')}; idle p50 ${quantile(idle, 0.5).toFixed(1)} ms, worst ${Math.max(...idle).toFixed(1)} ms; worst during ${Math.max(...during).toFixed(1)} ms`;
      expect(writes.length, detail()).toBe(WRITES);
      const failed = writes.filter((w) => w.status !== 201);
      expect(failed, JSON.stringify(failed.slice(0, 3))).toEqual([]);
      const stall = Math.max(...during) - quantile(idle, 0.5);
      expect(quantile(times, 0.9), detail()).toBeLessThanOrEqual(300);
      expect(Math.max(...times), detail()).toBeLessThanOrEqual(1000);
      expect(stall, detail()).toBeLessThanOrEqual(60);
      expect([...probeStatuses]).toEqual([200]);

      const list = await adminCall(proxyd.adminPort, 'GET', '/routes');
      expect(list.status).toBe(200);
      const routes = JSON.parse(list.body) as Array<{ domain: string }>;
      // 20,000 preloaded, 15 added by the writes, and the Proxyfile's probe site.
      expect(routes).toHaveLength(ROUTES + WRITES / 2 + 1);
      expect(routes.map((r) => r.domain)).toEqual(routes.map((r) => r.domain).sort());
      const output = proxyd.output();
      expect(output).not.toMatch(/EMFILE/);
    } finally {
      agent.destroy();
    }
  }, 120_000);
});
