// Admin write throughput and route propagation latency.
//
// Composes proxyd's control plane in-process exactly as the daemon does
// (RouteStore with its durable state file → ProxyServer.setRoutes; the
// Fastify admin app on a real TCP listener) from the built packages, with the
// admin rate limit lifted (the daemon's 60 requests/minute would make a
// throughput number meaningless). Every request goes over loopback TCP.
//
// Measures:
//   1. POST /routes per second, sequential and with 16 / 64 in flight,
//      with the state file (fsync per group commit) and in memory only;
//   2. the time from a POST /routes → 201 to the first request the data
//      plane routes with the new table (p50/p99 over many trials).
//
// The built daemon cannot sustain more than its admin rate limit (60 requests
// per minute), so this in-process assembly is what measures sustained write
// throughput; bench/admin/run.mjs measures the built daemon.
//
// Run: pnpm build && node bench/admin/in-process.mjs   (env BENCH_SECONDS, default 5)
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createAdminApp } from '@proxyd/admin-api';
import { ProxyServer } from '@proxyd/proxy-core';
import { RouteStore } from '@proxyd/route-store';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const TOKEN = 'bench';
const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

function call(port, method, p, body, headers = {}) {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method,
        path: p,
        agent,
        headers: {
          authorization: `Bearer ${TOKEN}`,
          ...(payload ? { 'content-type': 'application/json' } : {}),
          ...headers,
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => {
          text += c;
        });
        res.on('end', () => resolve({ status: res.statusCode, body: text }));
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
const fmt = (ms) => (ms < 1 ? `${(ms * 1000).toFixed(0)} µs` : `${ms.toFixed(2)} ms`);

async function setup(persist) {
  const dir = await mkdtemp(path.join(tmpdir(), 'proxyd-bench-admin-'));
  const { store } = await RouteStore.open({ stateFile: persist ? path.join(dir, 'routes.json') : null });
  const proxy = new ProxyServer({ routes: store.routes, version: store.version });
  store.subscribe((snapshot) => proxy.setRoutes(snapshot));
  const data = await proxy.listen(0, '127.0.0.1');
  const app = createAdminApp({ routes: store, token: TOKEN, rateLimit: { max: 1e12, windowMs: 60_000 } });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const adminPort = app.server.address().port;
  const upstream = http.createServer((_req, res) => res.end('ok'));
  await new Promise((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  return {
    adminPort,
    dataPort: data.port,
    upstreamPort: upstream.address().port,
    async close() {
      await app.close();
      await proxy.close();
      await store.close();
      upstream.closeAllConnections();
      await new Promise((resolve) => upstream.close(resolve));
      await rm(dir, { recursive: true, force: true });
    },
  };
}

async function writes(env, concurrency, label) {
  let n = 0;
  let seq = 0;
  const latencies = [];
  const deadline = Date.now() + SECONDS * 1000;
  const started = performance.now();
  const worker = async () => {
    while (Date.now() < deadline) {
      const i = seq++;
      const t0 = performance.now();
      const res = await call(env.adminPort, 'POST', '/routes', {
        domain: `${label}-${i}.bench.test`,
        upstream: `127.0.0.1:${env.upstreamPort}`,
        tls: false,
      });
      if (res.status !== 201) throw new Error(`POST /routes: ${res.status} ${res.body}`);
      latencies.push(performance.now() - t0);
      n++;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const secs = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return { rate: n / secs, n, p50: pct(latencies, 50), p99: pct(latencies, 99) };
}

async function propagation(env, trials) {
  const samples = [];
  let retried = 0;
  for (let i = 0; i < trials; i++) {
    const domain = `prop-${i}.bench.test`;
    const res = await call(env.adminPort, 'POST', '/routes', {
      domain,
      upstream: `127.0.0.1:${env.upstreamPort}`,
      tls: false,
    });
    if (res.status !== 201) throw new Error(`POST /routes: ${res.status}`);
    const t0 = performance.now();
    for (let attempt = 0; ; attempt++) {
      const routed = await call(env.dataPort, 'GET', '/', undefined, { host: domain });
      if (routed.status === 200) break;
      if (attempt === 0) retried++;
      if (performance.now() - t0 > 5000) throw new Error(`${domain} not routed within 5 s`);
    }
    samples.push(performance.now() - t0);
  }
  samples.sort((a, b) => a - b);
  return { p50: pct(samples, 50), p99: pct(samples, 99), max: samples.at(-1), retried, trials };
}

console.log(`admin writes, ${SECONDS} s per row (POST /routes over loopback TCP, keep-alive)`);
console.log('state file   in flight   writes/s   p50        p99');
for (const persist of [true, false]) {
  for (const concurrency of [1, 16, 64]) {
    const env = await setup(persist);
    try {
      const r = await writes(env, concurrency, `w${concurrency}`);
      console.log(
        `${(persist ? 'fsync' : 'memory').padEnd(12)} ${String(concurrency).padEnd(11)} ${r.rate.toFixed(0).padStart(8)}   ${fmt(r.p50).padEnd(10)} ${fmt(r.p99)}`,
      );
    } finally {
      await env.close();
    }
  }
}

const env = await setup(true);
try {
  const trials = 1000;
  const r = await propagation(env, trials);
  console.log(
    `\nPOST /routes → 201, then the first request routed by the new table (${trials} trials, state file on):\n` +
      `  p50 ${fmt(r.p50)}   p99 ${fmt(r.p99)}   max ${fmt(r.max)}   first request already routed in ${trials - r.retried}/${trials} trials`,
  );
} finally {
  await env.close();
  agent.destroy();
}
