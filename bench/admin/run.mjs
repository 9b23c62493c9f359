// Admin API against the built daemon: POST /routes writes/s and the time from
// POST /routes → 201 to the first data-plane request routed by the new table.
//
// Starts apps/proxyd/dist/main.js as a child process on free loopback ports
// (a temp Proxyfile and state dir; the state file is fsynced on every write)
// and talks to it over TCP with a bearer token, as a controller would.
//
// The daemon allows 60 authenticated admin requests per 60-second window, and
// the Unix socket is not exempt (its requests count in the same window), so
// every round uses a fresh daemon process, which opens a fresh window, and
// stays under 60 admin requests: a burst of WRITES POSTs with IN_FLIGHT in
// flight, then PROPAGATION trials of POST → first routed request. GET /health
// (readiness) is exempt from the limit.
//
// Run: pnpm build && node bench/admin/run.mjs   (env ROUNDS, default 6)
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROUNDS = Number(process.env.ROUNDS ?? 6);
const WRITES = 40;
const IN_FLIGHT = 8;
const PROPAGATION = 15;
const LIMIT = 60;
if (WRITES + PROPAGATION >= LIMIT) throw new Error('a round must stay under the admin rate limit');

const MAIN = fileURLToPath(new URL('../../apps/proxyd/dist/main.js', import.meta.url));
const TOKEN = 'bench-admin-token';

function freePort() {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

function call(agent, port, method, p, { body, headers = {} } = {}) {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method,
        path: p,
        agent,
        headers: { ...(payload ? { 'content-type': 'application/json' } : {}), ...headers },
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

async function startDaemon(upstreamPort) {
  const dir = await mkdtemp(path.join(tmpdir(), 'proxyd-bench-admin-'));
  const [httpPort, httpsPort, adminPort] = [await freePort(), await freePort(), await freePort()];
  const config = path.join(dir, 'Proxyfile');
  await writeFile(
    config,
    `{\n\thttp_port ${httpPort}\n\thttps_port ${httpsPort}\n\tadmin 127.0.0.1:${adminPort}\n}\n\nhttp://file.bench.test {\n\treverse_proxy 127.0.0.1:${upstreamPort}\n}\n`,
  );
  const child = spawn(process.execPath, [MAIN, 'run', '--config', config, '--state-dir', path.join(dir, 'state')], {
    env: { ...process.env, PROXY_ADMIN_TOKEN: TOKEN, PROXY_LOG: 'warn' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const started = performance.now();
  for (;;) {
    if (child.exitCode !== null) throw new Error('proxyd exited during start');
    const up = await call(agent, adminPort, 'GET', '/health').catch(() => null);
    if (up?.status === 200) break;
    if (performance.now() - started > 15_000) throw new Error('proxyd not ready within 15 s');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return {
    httpPort,
    adminPort,
    agent,
    admin: (method, p, body) =>
      call(agent, adminPort, method, p, { body, headers: { authorization: `Bearer ${TOKEN}` } }),
    async stop() {
      agent.destroy();
      child.kill('SIGTERM');
      await exited;
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** WRITES POST /routes with IN_FLIGHT in flight; writes/s over the burst and per-request latencies. */
async function burst(daemon, upstreamPort, round) {
  let next = 0;
  const latencies = [];
  const t0 = performance.now();
  const worker = async () => {
    while (next < WRITES) {
      const i = next++;
      const s = performance.now();
      const res = await daemon.admin('POST', '/routes', {
        domain: `w${round}-${i}.bench.test`,
        upstream: `127.0.0.1:${upstreamPort}`,
        tls: false,
      });
      if (res.status !== 201) throw new Error(`POST /routes: ${res.status} ${res.body}`);
      latencies.push(performance.now() - s);
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  return { rate: WRITES / ((performance.now() - t0) / 1000), latencies };
}

/** POST /routes → 201, then GET with that Host until the data plane routes it (200 from the upstream). */
async function propagation(daemon, upstreamPort, round) {
  const samples = [];
  let firstTry = 0;
  for (let i = 0; i < PROPAGATION; i++) {
    const domain = `p${round}-${i}.bench.test`;
    const res = await daemon.admin('POST', '/routes', { domain, upstream: `127.0.0.1:${upstreamPort}`, tls: false });
    if (res.status !== 201) throw new Error(`POST /routes: ${res.status} ${res.body}`);
    const t0 = performance.now();
    for (let attempt = 0; ; attempt++) {
      const routed = await call(daemon.agent, daemon.httpPort, 'GET', '/', { headers: { host: domain } });
      if (routed.status === 200) {
        if (attempt === 0) firstTry++;
        break;
      }
      if (performance.now() - t0 > 5_000) throw new Error(`${domain} not routed within 5 s`);
    }
    samples.push(performance.now() - t0);
  }
  return { samples, firstTry };
}

const sorted = (xs) => [...xs].sort((a, b) => a - b);
const pct = (xs, p) => xs[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];
const fmt = (ms) => (ms < 1 ? `${(ms * 1000).toFixed(0)} µs` : `${ms.toFixed(2)} ms`);

const upstream = http.createServer((_req, res) => res.end('ok'));
await new Promise((resolve) => upstream.listen(0, '127.0.0.1', resolve));
const upstreamPort = upstream.address().port;

const rates = [];
const writeLatencies = [];
const propagationSamples = [];
let firstTry = 0;
try {
  for (let round = 0; round < ROUNDS; round++) {
    const daemon = await startDaemon(upstreamPort);
    try {
      const w = await burst(daemon, upstreamPort, round);
      rates.push(w.rate);
      writeLatencies.push(...w.latencies);
      const p = await propagation(daemon, upstreamPort, round);
      propagationSamples.push(...p.samples);
      firstTry += p.firstTry;
    } finally {
      await daemon.stop();
    }
  }
} finally {
  upstream.closeAllConnections();
  upstream.close();
}

const r = sorted(rates);
const wl = sorted(writeLatencies);
const ps = sorted(propagationSamples);
console.log(`built proxyd, ${ROUNDS} rounds (a fresh daemon each), admin over loopback TCP, state file fsynced`);
console.log(
  `POST /routes, bursts of ${WRITES} with ${IN_FLIGHT} in flight: median ${r[Math.floor(r.length / 2)].toFixed(0)} writes/s ` +
    `(min ${r[0].toFixed(0)}, max ${r.at(-1).toFixed(0)}); per request p50 ${fmt(pct(wl, 50))}, p99 ${fmt(pct(wl, 99))} (n=${wl.length})`,
);
console.log(
  `POST → 201, then the first request routed by the new table: p50 ${fmt(pct(ps, 50))}, p99 ${fmt(pct(ps, 99))}, ` +
    `max ${fmt(ps.at(-1))} (n=${ps.length}); routed at the first try in ${firstTry}/${ps.length}`,
);
