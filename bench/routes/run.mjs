// bench/routes: what a route write costs at 1k, 10k and 100k routes.
//
//   pnpm build && node bench/routes/run.mjs       (or: pnpm bench routes)
//   SIZES=1000,10000 WORKERS=1 WRITES=10 node bench/routes/run.mjs
//   PROXYD_CHECKOUT=../before WORKERS=1 node bench/routes/run.mjs   (another checkout's build)
//   SIZES=100000 WORKERS=1 NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" node bench/routes/run.mjs
//
// For each route count N and each worker mode (`--workers 1`, and the
// daemon's default of one worker per CPU), starts the built daemon on free
// loopback ports with a state file of API routes (`auto_https off`: no
// certificate is ordered for them) such that the table holds N routes after
// the writes (the route store's limit is 100,000), then measures:
//
// - start: spawn → the "proxyd ready" log line, and the RSS of the daemon
//   (its workers included) once ready, plus the peak (VmHWM);
// - admin write latency: WRITES sequential POST /routes (half add a new
//   domain, half replace an existing route), p50 and max;
// - data-plane stall: a sequential keep-alive request loop against a
//   Proxyfile route (`respond`, no upstream) runs the whole time; the
//   slowest request while the writes run, next to the slowest in as long a
//   window without writes (the noise floor of the machine);
// - loop delay: the daemon's own worst event-loop delay over the writes
//   (`nodejs_eventloop_lag_max_seconds` of GET /metrics, read before and
//   after; with workers, the worst process), unaffected by the client's
//   scheduling.
//
// Loopback only; every daemon is stopped and its temp dir removed; each
// phase has a time bound.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import { availableParallelism, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// PROXYD_CHECKOUT runs another checkout's build (a before/after comparison).
const MAIN = process.env.PROXYD_CHECKOUT
  ? path.join(path.resolve(process.env.PROXYD_CHECKOUT), 'apps/proxyd/dist/main.js')
  : fileURLToPath(new URL('../../apps/proxyd/dist/main.js', import.meta.url));
const SIZES = (process.env.SIZES ?? '1000,10000,100000').split(',').map(Number);
// 0: the daemon's default (one worker per CPU).
const WORKERS = (process.env.WORKERS ?? '1,0').split(',').map(Number);
const WRITES = Number(process.env.WRITES ?? 20);
const START_TIMEOUT_MS = Number(process.env.START_TIMEOUT_MS ?? 180_000);
const WRITE_TIMEOUT_MS = 60_000;
// Extra node flags for the daemon (a CPU profile: --cpu-prof --cpu-prof-dir=<dir>).
const NODE_ARGS = (process.env.NODE_ARGS ?? '').split(' ').filter(Boolean);
const TOKEN = 'bench-routes-token';
const PROBE_HOST = 'probe.bench.test';
// Spec §8: 60 authenticated admin requests per minute; the writes stay under it.
if (WRITES > 50) throw new Error('WRITES must stay under the admin rate limit (60 per minute)');

if (!existsSync(MAIN)) {
  console.error('build first: pnpm build');
  process.exit(2);
}

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
    req.setTimeout(WRITE_TIMEOUT_MS, () =>
      req.destroy(new Error(`${method} ${p}: no answer in ${WRITE_TIMEOUT_MS} ms`)),
    );
    req.on('error', reject);
    req.end(payload);
  });
}

const domainOf = (i) => `r${i}.bench.test`;

/** The state file of `n` API routes, as the route store writes it (sorted by domain). */
function stateFile(n) {
  const routes = [];
  for (let i = 0; i < n; i++)
    routes.push({ domain: domainOf(i), upstream: '127.0.0.1:9', tls: false, source: 'bench' });
  routes.sort((a, b) => (a.domain < b.domain ? -1 : a.domain > b.domain ? 1 : 0));
  return `${JSON.stringify({ format: 'proxyd-routes/1', routes })}\n`;
}

/** The daemon's process and its children (workers). */
function processTree(pid) {
  const pids = [pid];
  for (let i = 0; i < pids.length && i < 64; i++) {
    try {
      const children = readFileSync(`/proc/${pids[i]}/task/${pids[i]}/children`, 'utf8').trim();
      if (children) pids.push(...children.split(/\s+/).map(Number));
    } catch {
      // gone
    }
  }
  return pids;
}

function statusKb(pid, field) {
  try {
    const line = readFileSync(`/proc/${pid}/status`, 'utf8')
      .split('\n')
      .find((l) => l.startsWith(`${field}:`));
    return Number(line?.split(/\s+/)[1] ?? 0);
  } catch {
    return 0;
  }
}

const mb = (kb) => kb / 1024;

async function startDaemon(n, workers) {
  const dir = await mkdtemp(path.join(tmpdir(), 'proxyd-bench-routes-'));
  const [httpPort, httpsPort, adminPort] = [await freePort(), await freePort(), await freePort()];
  const config = path.join(dir, 'Proxyfile');
  await writeFile(
    config,
    `{\n\thttp_port ${httpPort}\n\thttps_port ${httpsPort}\n\tadmin 127.0.0.1:${adminPort}\n\tauto_https off\n}\n\n` +
      `http://${PROBE_HOST} {\n\trespond "ok" 200\n}\n`,
  );
  await mkdir(path.join(dir, 'state'));
  // The probe route and the writes that add a domain count too: the table ends at n routes (the limit is 100,000).
  await writeFile(path.join(dir, 'state', 'routes.json'), stateFile(n - 1 - Math.ceil(WRITES / 2)));
  const args = [...NODE_ARGS, MAIN, 'run', '--config', config, '--state-dir', path.join(dir, 'state')];
  args.push('--cert-dir', path.join(dir, 'certs'), '--no-docker');
  if (workers > 0) args.push('--workers', String(workers));
  const t0 = performance.now();
  const child = spawn(process.execPath, args, {
    env: { ...process.env, PROXY_ADMIN_TOKEN: TOKEN, PROXY_LOG: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  let out = '';
  const ready = new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`no "proxyd ready" within ${START_TIMEOUT_MS} ms`)),
      START_TIMEOUT_MS,
    );
    const onData = (d) => {
      out += d;
      if (out.includes('"proxyd ready"')) {
        clearTimeout(timer);
        resolve(performance.now() - t0);
      }
      if (out.length > 1_000_000) out = out.slice(-100_000);
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`proxyd exited during start (${code}):\n${out.slice(-2000)}`));
    });
  });
  const stop = async () => {
    if (child.exitCode === null) child.kill('SIGTERM');
    const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(killer);
    await rm(dir, { recursive: true, force: true });
  };
  let startMs;
  try {
    startMs = await ready;
  } catch (err) {
    await stop();
    throw err;
  }
  const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  return {
    startMs,
    pid: child.pid,
    httpPort,
    admin: (method, p, body) =>
      call(agent, adminPort, method, p, { body, headers: { authorization: `Bearer ${TOKEN}` } }),
    async stop() {
      agent.destroy();
      await stop();
    },
  };
}

/** The worst event-loop delay (ms) since the previous scrape, of the daemon's worst process. */
async function loopDelayMs(daemon) {
  const res = await daemon.admin('GET', '/metrics');
  if (res.status !== 200) throw new Error(`GET /metrics: ${res.status}`);
  const line = res.body.split('\n').find((l) => l.startsWith('nodejs_eventloop_lag_max_seconds'));
  return line === undefined ? Number.NaN : Number(line.split(' ').at(-1)) * 1000;
}

/** A sequential keep-alive request loop to the probe route; `window(fn)` gives the slowest request while fn runs. */
function probeLoop(port) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  let running = true;
  let worst = 0;
  let count = 0;
  let failures = 0;
  const loop = (async () => {
    while (running) {
      const s = performance.now();
      try {
        const res = await call(agent, port, 'GET', '/', { headers: { host: PROBE_HOST } });
        if (res.status !== 200) failures++;
      } catch {
        failures++;
      }
      worst = Math.max(worst, performance.now() - s);
      count++;
    }
  })();
  return {
    async window(fn) {
      worst = 0;
      count = 0;
      failures = 0;
      const value = await fn();
      return { value, worst, count, failures };
    },
    async stop() {
      running = false;
      await loop;
      agent.destroy();
    },
  };
}

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const fmt = (ms) => (ms < 10 ? ms.toFixed(2) : ms < 100 ? ms.toFixed(1) : ms.toFixed(0));

async function measure(n, workers) {
  const daemon = await startDaemon(n, workers);
  try {
    // Let the workers settle (and the first GC run) before reading memory.
    await new Promise((r) => setTimeout(r, 1000));
    const pids = processTree(daemon.pid);
    const rss = pids.reduce((sum, pid) => sum + statusKb(pid, 'VmRSS'), 0);
    const peak = pids.reduce((sum, pid) => sum + statusKb(pid, 'VmHWM'), 0);
    const probe = probeLoop(daemon.httpPort);
    try {
      await probe.window(() => new Promise((r) => setTimeout(r, 300)));
      const latencies = [];
      await loopDelayMs(daemon);
      const writes = await probe.window(async () => {
        for (let i = 0; i < WRITES; i++) {
          // Even: a new domain; odd: replace an existing route (its compiled site is dropped).
          const domain = i % 2 === 0 ? `new${i}.bench.test` : domainOf(Math.floor((i * (n / 2)) / WRITES));
          const s = performance.now();
          const res = await daemon.admin('POST', '/routes', { domain, upstream: '127.0.0.1:10', tls: false });
          if (res.status !== 201) throw new Error(`POST /routes ${domain}: ${res.status} ${res.body}`);
          latencies.push(performance.now() - s);
        }
        return await loopDelayMs(daemon);
      });
      const elapsed = latencies.reduce((a, b) => a + b, 0);
      const idle = await probe.window(async () => {
        await new Promise((r) => setTimeout(r, Math.max(500, elapsed)));
        return await loopDelayMs(daemon);
      });
      return {
        n,
        workers: workers === 0 ? `default (${availableParallelism()})` : String(workers),
        startMs: daemon.startMs,
        rssMb: mb(rss),
        peakMb: mb(peak),
        p50: pct(latencies, 50),
        max: Math.max(...latencies),
        stall: writes.worst,
        idle: idle.worst,
        loop: writes.value,
        loopIdle: idle.value,
        failures: writes.failures + idle.failures,
        probes: writes.count,
      };
    } finally {
      await probe.stop();
    }
  } finally {
    await daemon.stop();
  }
}

const rows = [];
for (const workers of WORKERS) {
  for (const n of SIZES) {
    try {
      const row = await measure(n, workers);
      rows.push(row);
      console.error(`measured ${n} routes, workers ${row.workers}`);
    } catch (err) {
      console.error(`${n} routes, workers ${workers || 'default'}: ${err.message}`);
      process.exitCode = 1;
    }
  }
}

console.log(
  `built proxyd, state file of N API routes, auto_https off; ${WRITES} sequential POST /routes (half new, half replacing)`,
);
console.log('stall: slowest request of a sequential keep-alive loop during the writes; idle: the same, no writes');
console.log(
  "loop delay: the daemon's worst event-loop delay (nodejs_eventloop_lag_max_seconds) during the writes / idle\n",
);
const header = [
  ['routes', 7],
  ['workers', 11],
  ['start (ms)', 10],
  ['RSS (MB)', 8],
  ['peak RSS (MB)', 13],
  ['write p50 (ms)', 14],
  ['write max (ms)', 14],
  ['stall (ms)', 10],
  ['idle (ms)', 9],
  ['loop delay (ms)', 15],
  ['idle loop delay (ms)', 20],
];
console.log(`| ${header.map(([h, w]) => h.padEnd(w)).join(' | ')} |`);
console.log(`| ${header.map(([, w], i) => (i === 1 ? '-'.repeat(w) : `${'-'.repeat(w - 1)}:`)).join(' | ')} |`);
for (const r of rows) {
  const cells = [
    String(r.n),
    r.workers,
    fmt(r.startMs),
    r.rssMb.toFixed(0),
    r.peakMb.toFixed(0),
    fmt(r.p50),
    fmt(r.max),
    fmt(r.stall),
    fmt(r.idle),
    fmt(r.loop),
    fmt(r.loopIdle),
  ];
  const line = `| ${cells.map((c, i) => (i === 1 ? c.padEnd(header[i][1]) : c.padStart(header[i][1]))).join(' | ')} |`;
  console.log(r.failures > 0 ? `${line} (${r.failures} probe failures)` : line);
}
