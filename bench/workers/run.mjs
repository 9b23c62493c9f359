// bench/workers: proxyd with N data-plane workers against proxyd --workers 1,
// nginx (2 workers), Caddy and a bare Node cluster proxy, in one run, nothing pinned.
//
//   node bench/workers/run.mjs            (or: pnpm bench workers)
//   ROUNDS=3 DURATION=5 node bench/workers/run.mjs
//   WORKERS=2 ONLY="proxyd,proxyd w1" node bench/workers/run.mjs
//
// Needs: the built daemon (pnpm build), wrk, nginx, caddy. Every process
// floats over every core: no taskset, Caddy without GOMAXPROCS, nginx with
// `worker_processes 2`, the Node cluster with availableParallelism() workers,
// `proxyd` with `--workers <availableParallelism()>` (WORKERS overrides it).
// One upstream (a 1-worker nginx serving a 30-byte file) behind every target;
// the client is `wrk -t2 -c50 --latency`. Targets run in alternation, ROUNDS
// times, a 1 s warm-up then DURATION s each; req/s, p50/p99 and CPU/request
// are medians over the rounds. RSS of every process of a target (primary or
// master, and each worker, found by parent pid in /proc) is sampled every
// 200 ms (VmRSS, and VmHWM for the per-process peak); proxyd's pool spare is
// told from its serving workers by their "worker N serving" log lines. Each run
// also splits the machine's CPU: target, upstream, wrk, other, idle, steal.
// Goals missed: exit 0. A target that fails to start or exits, or wrk errors: non-zero.
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { availableParallelism, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../lib/session.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const PROXYD = path.join(root, 'apps/proxyd/dist/main.js');
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const DURATION = Number(process.env.DURATION ?? 5);
const WARMUP = 1;
const CONNECTIONS = Number(process.env.CONNECTIONS ?? 50);
const THREADS = Number(process.env.THREADS ?? 2);
const CORES = availableParallelism();
const WORKERS = Number(process.env.WORKERS ?? CORES);
const HOST = 'bench.local';
const ONLY = process.env.ONLY?.split(',');
/** wrk errors (socket errors + non-2xx), over the whole run, tolerated before the bench fails. */
const HANDFUL = 10;
const SAMPLE_MS = 200;
const TICKS = 100; // USER_HZ: /proc/<pid>/stat and /proc/stat count in 1/100 s

for (const bin of ['wrk', 'nginx', 'caddy']) {
  const found = (process.env.PATH ?? '').split(':').some((d) => d && existsSync(path.join(d, bin)));
  if (!found) {
    console.error(`bench/workers needs ${bin} (apt-get install wrk nginx caddy)`);
    process.exit(2);
  }
}
if (!existsSync(PROXYD)) {
  console.error('build first: pnpm build');
  process.exit(2);
}

const dir = mkdtempSync(path.join(tmpdir(), 'proxyd-bench-workers-'));
// nginx workers may run as nobody: they must read the file served.
chmodSync(dir, 0o755);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// --- processes: ours, their descendants, and getting rid of all of them ------
const children = [];
/** Every pid seen in a target's tree, with its start time (so a reused pid is never signalled). */
const known = new Map();
let stopping = false;
let failure = null;

function procStat(pid) {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    // f[0] is field 3 (state): ppid is field 4, utime/stime 14/15, starttime 22.
    return { state: f[0], ppid: Number(f[1]), cpu: Number(f[11]) + Number(f[12]), start: f[19] };
  } catch {
    return null;
  }
}

/** pid → children pids, from every /proc/<pid>/stat (this kernel has no /proc/<pid>/task/<tid>/children). */
function childMap() {
  const map = new Map();
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    const st = procStat(e);
    if (!st || st.state === 'Z') continue;
    const list = map.get(st.ppid) ?? [];
    list.push(Number(e));
    map.set(st.ppid, list);
  }
  return map;
}

/** The pid and all its live descendants. */
function tree(pid, map = childMap()) {
  const out = [];
  const stack = [pid];
  while (stack.length > 0) {
    const p = stack.pop();
    out.push(p);
    stack.push(...(map.get(p) ?? []));
  }
  for (const p of out) {
    const st = procStat(p);
    if (st && !known.has(p)) known.set(p, st.start);
  }
  return out;
}

function alive(pid) {
  const st = procStat(pid);
  const start = known.get(pid);
  return st !== null && st.state !== 'Z' && (start === undefined || start === st.start);
}

function start(name, cmd, args, env = {}) {
  const child = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  child.out = '';
  const keep = (d) => {
    child.out = (child.out + d).slice(-20_000);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  child.on('exit', (code, signal) => {
    if (stopping) return;
    failure ??= `${name} exited early (${signal ?? code})`;
    console.error(`! ${name} exited early (${signal ?? code}):\n${child.out.slice(-3000)}`);
  });
  children.push(child);
  if (child.pid) known.set(child.pid, procStat(child.pid)?.start);
  return child;
}

let shutdownPromise = null;
/** SIGTERM to every process started here, then SIGKILL to whatever of their trees is left after 5 s. */
function shutdown() {
  shutdownPromise ??= (async () => {
    stopping = true;
    const map = childMap();
    for (const c of children) if (c.pid) tree(c.pid, map);
    for (const c of children) {
      try {
        c.kill('SIGTERM');
      } catch {}
    }
    const end = Date.now() + 5000;
    while (Date.now() < end && [...known.keys()].some(alive)) await sleep(100);
    const left = [...known.keys()].filter(alive);
    if (left.length > 0) {
      console.error(`! SIGKILL to ${left.join(' ')} (still running 5 s after SIGTERM)`);
      for (const p of left) {
        try {
          process.kill(p, 'SIGKILL');
        } catch {}
      }
      await sleep(500);
    }
    const still = [...known.keys()].filter(alive);
    if (still.length > 0) console.error(`! still running after SIGKILL: ${still.join(' ')}`);
    rmSync(dir, { recursive: true, force: true });
  })();
  return shutdownPromise;
}
// Last resort (an exception, process.exit elsewhere): no waiting possible here.
process.on('exit', () => {
  for (const p of known.keys()) {
    if (alive(p)) {
      try {
        process.kill(p, 'SIGKILL');
      } catch {}
    }
  }
  rmSync(dir, { recursive: true, force: true });
});
for (const [signal, code] of [
  ['SIGINT', 130],
  ['SIGTERM', 143],
]) {
  process.on(signal, () => {
    console.error(`\n${signal}: stopping every target`);
    void shutdown().then(() => process.exit(code));
  });
}
async function fail(message) {
  // Already stopping (Ctrl-C): the signal's handler reports and exits.
  if (stopping) return new Promise(() => {});
  console.error(`! ${message}`);
  await shutdown();
  process.exit(1);
}

// Every step is bounded; this bounds the whole run as well.
const budget = 120 + ROUNDS * 6 * (WARMUP + DURATION + 20);
setTimeout(() => void fail(`the run took more than ${budget} s`), budget * 1000).unref();

/** Resolves once `GET /small` with the bench Host answers 200 on the port (15 s at most). */
async function waitFor(name, port, child) {
  const end = Date.now() + 15_000;
  while (Date.now() < end && !failure) {
    const ok = await new Promise((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => {
        s.write(`GET /small HTTP/1.1\r\nHost: ${HOST}\r\nConnection: close\r\n\r\n`);
      });
      let data = '';
      s.setTimeout(2000, () => s.destroy());
      s.on('data', (d) => {
        data += d;
      });
      s.on('close', () => resolve(data.startsWith('HTTP/1.1 200')));
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    await sleep(100);
  }
  await fail(`${name} does not answer 200 on port ${port}${child ? `:\n${child.out.slice(-3000)}` : ''}`);
}

// --- measuring ----------------------------------------------------------------
function toMs(v) {
  const m = /^([\d.]+)(us|ms|s)$/.exec(v);
  if (!m) return Number.NaN;
  const n = Number(m[1]);
  return m[2] === 'us' ? n / 1000 : m[2] === 's' ? n * 1000 : n;
}

function wrk(port, seconds) {
  const args = [
    `-t${THREADS}`,
    `-c${CONNECTIONS}`,
    `-d${seconds}s`,
    '--latency',
    '-H',
    `Host: ${HOST}`,
    `http://127.0.0.1:${port}/small`,
  ];
  return new Promise((resolve, reject) => {
    const p = spawn('wrk', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(p);
    let out = '';
    p.stdout.on('data', (d) => {
      out += d;
    });
    p.stderr.on('data', (d) => {
      out += d;
    });
    const timer = setTimeout(() => p.kill('SIGKILL'), (seconds + 15) * 1000);
    p.on('close', (code, signal) => {
      clearTimeout(timer);
      children.splice(children.indexOf(p), 1);
      if (code !== 0) return reject(new Error(`wrk exited ${code ?? signal}:\n${out}`));
      const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
      const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
      resolve({
        rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? Number.NaN),
        requests: Number(/(\d+) requests in/.exec(out)?.[1] ?? Number.NaN),
        p50: toMs(/\n\s+50%\s+(\S+)/.exec(out)?.[1] ?? ''),
        p99: toMs(/\n\s+99%\s+(\S+)/.exec(out)?.[1] ?? ''),
        errors: (socket ? socket.slice(1).reduce((a, n) => a + Number(n), 0) : 0) + non2xx,
        errorText: [socket?.[0], non2xx ? `Non-2xx or 3xx responses: ${non2xx}` : null].filter(Boolean).join('; '),
      });
    });
  });
}

function memory(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (key) => Number(new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0);
    return { rss: kb('VmRSS') / 1024, hwm: kb('VmHWM') / 1024, anon: kb('RssAnon') / 1024 };
  } catch {
    return null;
  }
}

/** Whole-machine CPU ticks: busy (not idle/iowait) and steal (taken by other tenants of the VM). */
function machineTicks() {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const total = f.slice(0, 8).reduce((a, b) => a + b, 0);
  return { total, idle: f[3] + f[4], steal: f[7] ?? 0 };
}

/** CPU ticks of this script: its own, and its reaped children's (wrk, once it has exited). */
function selfTicks() {
  const s = readFileSync('/proc/self/stat', 'utf8');
  const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
  return { own: Number(f[11]) + Number(f[12]), reaped: Number(f[13]) + Number(f[14]) };
}

/** CPU ticks used so far by each process of a tree (a process that ends mid-run is missed). */
function treeCpu(pids) {
  const m = new Map();
  for (const p of pids) {
    const st = procStat(p);
    if (st) m.set(p, st.cpu);
  }
  return m;
}
function cpuDelta(before, after) {
  let sum = 0;
  for (const [p, t] of after) sum += t - (before.get(p) ?? t);
  return sum;
}

/** root (primary, master, or the only process), worker, or spare (proxyd: a child that does not serve). */
function roleOf(target, pid) {
  if (pid === target.rootPid) return 'root';
  return !target.serving || target.serving.has(pid) ? 'worker' : 'spare';
}

/** The largest VmRSS of a serving process now (the only process, or a worker). */
function servingRss(target) {
  const pids = tree(target.rootPid);
  const serving = pids.length === 1 ? pids : pids.filter((p) => roleOf(target, p) === 'worker');
  return Math.max(...serving.map((p) => memory(p)?.rss ?? 0));
}

/**
 * Samples the RSS of every process of the target's tree until stopped: per
 * pid the peak (max of sampled VmRSS and VmHWM), and the peak of the sum.
 */
function sampleMemory(target) {
  const take = () => {
    let sum = 0;
    for (const p of tree(target.rootPid)) {
      const m = memory(p);
      if (!m) continue;
      sum += m.rss;
      const role = roleOf(target, p);
      const prev = target.mem.get(p);
      target.mem.set(p, {
        role,
        peak: Math.max(prev?.peak ?? 0, m.rss, m.hwm),
        anon: Math.max(prev?.anon ?? 0, m.anon),
      });
    }
    target.peakTotal = Math.max(target.peakTotal, sum);
  };
  take();
  const timer = setInterval(take, SAMPLE_MS);
  return () => {
    clearInterval(timer);
    take();
  };
}

// --- upstream: one nginx worker serving a 30-byte file ---------------------------
const upPort = await freePort();
writeFileSync(path.join(dir, 'small'), `${'x'.repeat(29)}\n`);
const nginxConf = (name, port, workers, body) => {
  const conf = path.join(dir, `${name}.conf`);
  writeFileSync(
    conf,
    `daemon off;
worker_processes ${workers};
pid ${dir}/${name}.pid;
error_log ${dir}/${name}.err warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/${name}-body;
  proxy_temp_path ${dir}/${name}-proxy;
  fastcgi_temp_path ${dir}/${name}-fcgi;
  uwsgi_temp_path ${dir}/${name}-uwsgi;
  scgi_temp_path ${dir}/${name}-scgi;
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:${port};
    ${body}
  }
  ${name === 'nginx' ? `upstream up { server 127.0.0.1:${upPort}; keepalive 64; }` : ''}
}
`,
  );
  return conf;
};
const upstream = start('upstream', 'nginx', [
  '-c',
  nginxConf('upstream', upPort, 1, `root ${dir}; location / { default_type text/plain; }`),
  '-p',
  dir,
]);
await waitFor('upstream', upPort, upstream);

// --- the targets ------------------------------------------------------------------
const targets = [];
async function addTarget(name, port, child) {
  await waitFor(name, port, child);
  targets.push({ name, port, child, rootPid: child?.pid ?? null, mem: new Map(), peakTotal: 0, runs: [] });
}
targets.push({ name: 'direct', port: upPort, child: null, rootPid: null, mem: new Map(), peakTotal: 0, runs: [] });

const nginxPort = await freePort();
const nginx = start('nginx', 'nginx', [
  '-c',
  nginxConf(
    'nginx',
    nginxPort,
    2,
    `location / {
      proxy_pass http://up;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-For $remote_addr;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_set_header X-Forwarded-Host $host;
      add_header X-Content-Type-Options nosniff always;
      add_header X-Frame-Options SAMEORIGIN always;
    }`,
  ),
  '-p',
  dir,
]);
await addTarget('nginx', nginxPort, nginx);

const caddyPort = await freePort();
writeFileSync(
  path.join(dir, 'Caddyfile'),
  `{
\tadmin off
\tauto_https off
}

http://:${caddyPort} {
\tbind 127.0.0.1
\treverse_proxy 127.0.0.1:${upPort}
\theader {
\t\tX-Content-Type-Options nosniff
\t\tX-Frame-Options SAMEORIGIN
\t}
}
`,
);
// No GOMAXPROCS: Go uses every core.
const caddy = start('caddy', 'caddy', ['run', '--config', path.join(dir, 'Caddyfile'), '--adapter', 'caddyfile'], {
  HOME: dir,
  XDG_DATA_HOME: dir,
  XDG_CONFIG_HOME: dir,
});
await addTarget('caddy', caddyPort, caddy);

// A bare Node cluster proxy: the primary forks one worker per core (Node's
// default round-robin scheduling: the primary accepts, a worker serves the
// connection); each worker is the smallest correct keep-alive node:http proxy.
const clusterPort = await freePort();
const clusterFile = path.join(dir, 'cluster.mjs');
writeFileSync(
  clusterFile,
  `import cluster from 'node:cluster';
import http from 'node:http';
if (cluster.isPrimary) {
  let stopping = false;
  for (let i = 0; i < ${CORES}; i++) cluster.fork();
  cluster.on('exit', (w, code, signal) => {
    if (stopping) {
      if (Object.keys(cluster.workers).length === 0) process.exit(0);
      return;
    }
    console.error('worker ' + w.process.pid + ' died (' + (signal ?? code) + ')');
    process.exit(1);
  });
  process.on('SIGTERM', () => {
    stopping = true;
    for (const w of Object.values(cluster.workers)) w.process.kill('SIGTERM');
    setTimeout(() => process.exit(0), 3000).unref();
  });
} else {
  const agent = new http.Agent({ keepAlive: true, maxFreeSockets: 256 });
  const HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'te', 'trailer', 'proxy-connection']);
  http.createServer((req, res) => {
    const headers = {};
    for (const k in req.headers) if (!HOP.has(k)) headers[k] = req.headers[k];
    headers['x-forwarded-for'] = req.socket.remoteAddress;
    const up = http.request({ host: '127.0.0.1', port: ${upPort}, method: req.method, path: req.url, headers, agent }, (ur) => {
      const out = {};
      for (const k in ur.headers) if (!HOP.has(k)) out[k] = ur.headers[k];
      out['x-content-type-options'] = 'nosniff';
      out['x-frame-options'] = 'SAMEORIGIN';
      res.writeHead(ur.statusCode, out);
      ur.pipe(res);
    });
    up.on('error', () => { if (!res.headersSent) res.writeHead(502); res.end(); });
    res.on('close', () => { if (!res.writableFinished) up.destroy(); });
    req.pipe(up);
  }).listen(${clusterPort}, '127.0.0.1');
  process.on('SIGTERM', () => process.exit(0));
}
`,
);
const nodeCluster = start('node cluster', process.execPath, [clusterFile]);
await addTarget('node cluster', clusterPort, nodeCluster);

/** proxyd from the built daemon, with its own Proxyfile, state and cert dirs in the temp dir. */
async function addProxyd(name, workers) {
  const port = await freePort();
  const adminPort = await freePort();
  const confDir = mkdtempSync(path.join(dir, 'proxyd-'));
  writeFileSync(
    path.join(confDir, 'Proxyfile'),
    `{
\thttp_port ${port}
\tauto_https off
\tadmin 127.0.0.1:${adminPort}
}

http://${HOST} {
\treverse_proxy 127.0.0.1:${upPort}
}
`,
  );
  const child = start(
    name,
    process.execPath,
    [
      PROXYD,
      'run',
      '--config',
      path.join(confDir, 'Proxyfile'),
      '--state-dir',
      path.join(confDir, 'state'),
      '--cert-dir',
      path.join(confDir, 'certs'),
      '--no-docker',
      '--workers',
      String(workers),
    ],
    { PROXY_ADMIN_TOKEN: 'bench' },
  );
  // The pids of the workers that serve, from their "worker N serving" lines: the
  // pool also keeps a started spare (no listener, waiting to replace a crashed worker).
  const serving = new Set();
  let partial = '';
  child.stdout.on('data', (d) => {
    const lines = (partial + d).split('\n');
    partial = lines.pop();
    for (const line of lines) {
      const m = /"pid":(\d+).*"msg":"worker \d+ serving"/.exec(line);
      if (m) serving.add(Number(m[1]));
    }
  });
  // The primary logs "proxyd ready" once every worker listens (info level; the access log stays off).
  const end = Date.now() + 30_000;
  while (!child.out.includes('proxyd ready') && Date.now() < end && !failure) await sleep(100);
  if (failure) await fail(failure);
  if (!child.out.includes('proxyd ready')) await fail(`${name}: no "proxyd ready" in 30 s:\n${child.out.slice(-3000)}`);
  await addTarget(name, port, child);
  if (workers > 1) {
    targets.at(-1).serving = serving;
    if (serving.size !== workers) await fail(`${name}: ${serving.size} workers serving, expected ${workers}`);
  } else if (tree(child.pid).length !== 1) await fail(`${name}: --workers 1 runs more than one process`);
}
await addProxyd('proxyd w1', 1);
await addProxyd('proxyd', WORKERS);
if (failure) await fail(failure);

// --- measure, in alternation ---------------------------------------------------------
const upstreamPids = tree(upstream.pid);
const chosen = ONLY ? targets.filter((t) => ONLY.includes(t.name)) : targets;
// Before any load (one request each from waitFor): what a worker holds at rest.
for (const t of chosen) t.idleWorker = t.rootPid ? servingRss(t) : Number.NaN;
const errorsSeen = [];
console.log(
  `${CORES} cores, nothing pinned; wrk -t${THREADS} -c${CONNECTIONS} -d${DURATION}s --latency (after a ${WARMUP} s warm-up), ` +
    `${ROUNDS} rounds; proxyd --workers ${WORKERS}; upstream: nginx, 1 worker, 30-byte body`,
);
for (let round = 1; round <= ROUNDS; round++) {
  for (const t of chosen) {
    const stopSampling = t.rootPid ? sampleMemory(t) : () => {};
    let warm;
    let r;
    let cpu = Number.NaN;
    let rootCpu = Number.NaN;
    let up = Number.NaN;
    let m0;
    let m1;
    let s0;
    let s1;
    try {
      warm = await wrk(t.port, WARMUP); // JIT, keep-alive pools
      const pids = t.rootPid ? tree(t.rootPid) : [];
      const before = treeCpu([...pids, ...upstreamPids]);
      m0 = machineTicks();
      s0 = selfTicks();
      r = await wrk(t.port, DURATION);
      s1 = selfTicks();
      m1 = machineTicks();
      const after = treeCpu([...pids, ...upstreamPids]);
      const pick = (m, set) => new Map([...m].filter(([p]) => set.includes(p)));
      cpu = cpuDelta(pick(before, pids), pick(after, pids));
      rootCpu = t.rootPid ? cpuDelta(pick(before, [t.rootPid]), pick(after, [t.rootPid])) : Number.NaN;
      up = cpuDelta(pick(before, upstreamPids), pick(after, upstreamPids));
    } catch (err) {
      stopSampling();
      await fail(`${t.name}: ${err.message}`);
    }
    stopSampling();
    if (failure) await fail(failure);
    for (const [label, x] of [
      ['warm-up', warm],
      ['run', r],
    ]) {
      if (x.errors > 0) {
        const line = `round ${round} ${t.name} ${label}: ${x.errorText}`;
        errorsSeen.push({ line, count: x.errors });
        console.error(`  ! ${line}`);
      }
    }
    // Where the machine's CPU went during the run, in cores: this target, the upstream, wrk,
    // other (this script's sampling, kernel threads, other load on the machine), idle.
    const elapsed = (m1.total - m0.total) / CORES; // ticks per core
    const cores = (ticks) => ticks / elapsed;
    const targetTicks = t.rootPid ? cpu : 0;
    r.cpuUs = t.rootPid ? ((cpu / TICKS) * 1e6) / r.requests : Number.NaN;
    r.rootShare = t.rootPid ? rootCpu / cpu : Number.NaN;
    r.split = {
      target: cores(targetTicks),
      upstream: cores(up),
      wrk: cores(s1.reaped - s0.reaped),
      other: cores(m1.total - m1.idle - (m0.total - m0.idle) - targetTicks - up - (s1.reaped - s0.reaped)),
      idle: cores(m1.idle - m0.idle),
      steal: cores(m1.steal - m0.steal),
    };
    t.runs.push(r);
    console.log(
      `  round ${round} ${t.name.padEnd(12)} ${r.rps.toFixed(0).padStart(7)} req/s  p50 ${r.p50.toFixed(2)} ms  p99 ${r.p99.toFixed(2)} ms  ` +
        `cpu ${Number.isNaN(r.cpuUs) ? '-' : r.cpuUs.toFixed(1)} µs/req  cores: target ${r.split.target.toFixed(2)} upstream ${r.split.upstream.toFixed(2)} ` +
        `wrk ${r.split.wrk.toFixed(2)} other ${r.split.other.toFixed(2)} idle ${r.split.idle.toFixed(2)} steal ${r.split.steal.toFixed(2)}`,
    );
  }
}

// --- report ---------------------------------------------------------------------------
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};
const fmt = (x, digits = 1) => (Number.isFinite(x) ? x.toFixed(digits) : '–');
const int = (x) => (Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : '–');
function summary(t) {
  const runs = t.runs;
  const peaks = [...t.mem.values()];
  const workers = peaks.filter((m) => m.role === 'worker');
  const spares = peaks.filter((m) => m.role === 'spare');
  const rootPeak = peaks.find((m) => m.role === 'root')?.peak ?? Number.NaN;
  const single = t.rootPid !== null && workers.length === 0;
  return {
    procs: t.rootPid
      ? `${workers.length > 0 ? `1+${workers.length}` : '1'}${spares.length > 0 ? `+${spares.length}s` : ''}`
      : '–',
    spare: spares.length > 0 ? Math.max(...spares.map((m) => m.peak)) : Number.NaN,
    rps: median(runs.map((r) => r.rps)),
    p50: median(runs.map((r) => r.p50)),
    p99: median(runs.map((r) => r.p99)),
    cpuUs: median(runs.map((r) => r.cpuUs)),
    rootShare: median(runs.map((r) => r.rootShare)),
    // A single process serves itself: it is "the worker"; a tree's root is its primary/master.
    primary: single ? Number.NaN : rootPeak,
    worker: single ? rootPeak : Math.max(...workers.map((m) => m.peak)),
    idleWorker: t.idleWorker,
    workerAnon: single
      ? (peaks.find((m) => m.role === 'root')?.anon ?? Number.NaN)
      : Math.max(...workers.map((m) => m.anon)),
    total: t.rootPid ? t.peakTotal : Number.NaN,
    split: Object.fromEntries(
      ['target', 'upstream', 'wrk', 'other', 'idle', 'steal'].map((k) => [k, median(runs.map((r) => r.split[k]))]),
    ),
  };
}
const s = new Map(chosen.map((t) => [t.name, summary(t)]));
console.log(
  `\nmedians of ${ROUNDS} rounds; RSS in MB: peak over the whole run (VmHWM and 200 ms VmRSS samples), (anon) = its RssAnon (private; VmRSS also counts the node binary's pages, shared), (idle) = VmRSS before any load\n`,
);
console.log(
  '| target       | procs   | req/s   | p50 ms | p99 ms | CPU µs/req | RSS primary | RSS max worker | (anon) | (idle) | RSS spare | RSS total |',
);
console.log(
  '| ------------ | ------- | ------- | ------ | ------ | ---------- | ----------- | -------------- | ------ | ------ | --------- | --------- |',
);
for (const [name, x] of s) {
  console.log(
    `| ${name.padEnd(12)} | ${x.procs.padEnd(7)} | ${int(x.rps).padStart(7)} | ${fmt(x.p50, 2).padStart(6)} | ${fmt(x.p99, 2).padStart(6)} | ${fmt(x.cpuUs).padStart(10)} | ${fmt(x.primary, 0).padStart(11)} | ${fmt(x.worker, 0).padStart(14)} | ${fmt(x.workerAnon, 0).padStart(6)} | ${fmt(x.idleWorker, 0).padStart(6)} | ${fmt(x.spare, 0).padStart(9)} | ${fmt(x.total, 0).padStart(9)} |`,
  );
}
console.log(
  `\nwhere the CPU went during the run, in cores (of ${CORES}; medians; other = kernel threads, this script, other load)\n`,
);
console.log('| target       | target | upstream | wrk  | other | idle | steal | primary share |');
console.log('| ------------ | ------ | -------- | ---- | ----- | ---- | ----- | ------------- |');
for (const [name, x] of s) {
  const share = Number.isFinite(x.rootShare) && x.procs.includes('+') ? `${(x.rootShare * 100).toFixed(1)}%` : '–';
  console.log(
    `| ${name.padEnd(12)} | ${fmt(x.split.target, 2).padStart(6)} | ${fmt(x.split.upstream, 2).padStart(8)} | ${fmt(x.split.wrk, 2).padStart(4)} | ${fmt(x.split.other, 2).padStart(5)} | ${fmt(x.split.idle, 2).padStart(4)} | ${fmt(x.split.steal, 2).padStart(5)} | ${share.padStart(13)} |`,
  );
}

const p = s.get('proxyd');
const w1 = s.get('proxyd w1');
const ng = s.get('nginx');
const cd = s.get('caddy');
const verdict = (ok) => (ok ? 'met' : 'missed');
console.log('\ngoals');
if (p && ng)
  console.log(`  proxyd ÷ nginx      ${fmt(p.rps / ng.rps, 2)} (≥ 0.5)    ${verdict(p.rps / ng.rps >= 0.5)}`);
if (p && w1) {
  const pt = targets.find((t) => t.name === 'proxyd');
  const wt = targets.find((t) => t.name === 'proxyd w1');
  const perRound = pt.runs.map((r, i) => (r.rps / wt.runs[i].rps).toFixed(2)).join(' ');
  console.log(
    `  proxyd ÷ proxyd w1  ${fmt(p.rps / w1.rps, 2)} (≥ 1.4)    ${verdict(p.rps / w1.rps >= 1.4)}   (rounds: ${perRound})`,
  );
}
if (p && cd)
  console.log(`  proxyd p99 ≤ caddy  ${fmt(p.p99, 2)} vs ${fmt(cd.p99, 2)} ms    ${verdict(p.p99 <= cd.p99)}`);
if (p) console.log(`  proxyd worker RSS   ${fmt(p.worker, 0)} MB (≤ 100)    ${verdict(p.worker <= 100)}`);

const errorCount = errorsSeen.reduce((a, e) => a + e.count, 0);
await shutdown();
if (errorCount > HANDFUL) {
  console.error(`\n! wrk reported ${errorCount} errors (more than ${HANDFUL}):`);
  for (const e of errorsSeen) console.error(`  ${e.line}`);
  process.exit(1);
}
process.exit(0);
