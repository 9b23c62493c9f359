// bench/names: many names on one node with automatic HTTPS on (issue 30),
// proxyd against Caddy in the same run, on the same names.
//
//   pnpm build && node bench/names/run.mjs          (or: pnpm bench names)
//   node bench/names/run.mjs --quick                1,000 names only
//   node bench/names/run.mjs --sizes 1000,10000     chosen sizes
//   node bench/names/run.mjs --only proxyd          or --only caddy
//   node bench/names/run.mjs --workers 1            proxyd's --workers (default: its own, one per CPU)
//   PROXYD_CHECKOUT=../before node bench/names/run.mjs   (another checkout's build)
//
// For each size N: N API routes on `.test` names (certified by the local
// CA), each to one shared loopback upstream. proxyd starts with them in its
// state file (the file the route store persists, as it writes it) and an
// empty cert dir, default workers; measured: start (spawn → GET /health,
// spawn → a sampled name answering over HTTPS with a verified chain),
// certificate coverage of a random sample, POST /routes latency and the
// data plane's worst stall during the writes, PSS/RSS of the process tree
// and open fds, and a restart on the populated cert dir. Caddy gets the
// same names as one route each in a JSON config (`tls internal` through a
// catch-all automation policy, on-demand off), changed through its admin
// API. Every phase has a time bound; what is not done within it is
// reported as such. Loopback only. The table goes to stdout, the whole
// record to bench/results/names-<time>.json.
import { execFileSync, fork } from 'node:child_process';
import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { availableParallelism, loadavg } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchSession, CLK_TCK } from '../lib/session.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const PROXYD = path.join(path.resolve(process.env.PROXYD_CHECKOUT ?? root), 'apps/proxyd/dist/main.js');

// --- options ------------------------------------------------------------------
const argv = process.argv.slice(2);
const flag = (name) => {
  const at = argv.indexOf(name);
  return at === -1 ? undefined : argv[at + 1];
};
const SIZES = argv.includes('--quick')
  ? [1000]
  : (flag('--sizes') ?? process.env.SIZES ?? '1000,10000,100000').split(',').map(Number);
const ONLY = flag('--only') ?? process.env.ONLY ?? 'proxyd,caddy';
/** proxyd's `--workers`; unset: its default (one per CPU), what the issue's goals are set for. */
const WORKERS = flag('--workers') ?? process.env.WORKERS;
const env = (name, fallback) => Number(process.env[name] ?? fallback);
/** Node options for proxyd alone (its primary passes them on to its workers), e.g. `--cpu-prof --cpu-prof-dir=/tmp/p`. */
const NODE_ARGS = (process.env.PROXYD_NODE_ARGS ?? '').split(' ').filter(Boolean);
/** POST /routes in the run: half TCP (token), half the admin socket; each transport allows 60 a minute (spec §8). */
const WRITES = env('WRITES', 100);
/** Writes per second at most (a write starts when the one before ended and its slot came). */
const WRITE_RATE = env('WRITE_RATE', 2);
/** Names sampled for certificate coverage. */
const SAMPLE = env('SAMPLE', 50);
/** Changes made through Caddy's admin API. */
const CADDY_CHANGES = env('CADDY_CHANGES', 20);
// Time bounds (ms) of each phase.
const START_MS = env('START_MS', 180_000);
/** PSS of one proxy's process tree (MB) over which it is killed: the machine is shared. */
const MEM_CAP_MB = env('MEM_CAP_MB', 6000);
const COVER_MS = env('COVER_MS', 300_000);
const WRITES_MS = env('WRITES_MS', 240_000);
const CHANGES_MS = env('CHANGES_MS', 300_000);
/** Caddy's whole row, from its spawn to the last change: each phase ends by then too (Caddy at 100k would take ~15 min). */
const CADDY_MS = env('CADDY_MS', 480_000);
const REQUEST_MS = env('REQUEST_MS', 60_000);
/** The probe's quiet window before the writes: its baseline. */
const IDLE_MS = env('IDLE_MS', 5_000);
/**
 * The probe's pause between the end of a request and the next, ms; 0 (the
 * default): a closed loop, a request always in flight (~1,300 a second,
 * ~0.7 of a core between the bench, the worker and the upstream).
 */
const PROBE_GAP_MS = env('PROBE_GAP_MS', 0);
/** How long the disk's fsync times are sampled before any proxy runs, ms (the floor of a write). */
const FSYNC_PROBE_MS = env('FSYNC_PROBE_MS', 20_000);
// 32 characters: a shorter token is warned about at start.
const TOKEN = 'bench-names-token-0123456789abcdef';
const GOALS = { startS: 10, startAtN: 100_000, postP99Ms: 100, stallMs: 20, pssMb: 600, pssAtN: 100_000 };

if (WRITES > 110) throw new Error('WRITES: at most 110 (55 per transport stay under the admin rate limit)');
if (ONLY.includes('caddy')) {
  try {
    execFileSync('sh', ['-c', 'command -v caddy'], { stdio: 'ignore' });
  } catch {
    console.error('bench/names needs caddy (scripts/ensure-bench-deps.sh, or apt-get install caddy)');
    process.exit(2);
  }
}
if (ONLY.includes('proxyd') && !existsSync(PROXYD)) {
  console.error('build first: pnpm build');
  process.exit(2);
}

const session = benchSession('names');
const { dir, freePort, start } = session;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const log = (msg) => console.error(`[${new Date().toISOString().slice(11, 19)}] ${msg}`);
const load = () =>
  loadavg()
    .map((x) => x.toFixed(1))
    .join(' ');

// --- names and the upstream -----------------------------------------------------
const nameOf = (i) => `s${i}.names.test`;
/** `count` distinct random integers below `n` (deterministic for a given n). */
function sampleOf(n, count, seed = n) {
  let x = seed >>> 0 || 1;
  const rand = () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
  const picked = new Set();
  while (picked.size < Math.min(count, n)) picked.add(Math.floor(rand() * n));
  return [...picked];
}

// One tiny upstream for every name, in its own process (the client's timings never wait on it).
const upstreamPort = await freePort();
const upstream = start('upstream', process.execPath, [
  '-e',
  `require('node:http').createServer((q, s) => s.end('ok ' + q.headers.host)).listen(${upstreamPort}, '127.0.0.1')`,
]);
const UPSTREAM = `127.0.0.1:${upstreamPort}`;

// --- HTTP helpers ---------------------------------------------------------------
function call(options, body) {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const mod = options.protocol === 'https:' ? https : http;
    const req = mod.request(
      {
        ...options,
        headers: { ...(payload ? { 'content-type': 'application/json' } : {}), ...options.headers },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => {
          text += c;
        });
        res.on('end', () => resolve({ status: res.statusCode, body: text }));
        res.on('error', reject);
      },
    );
    const timeout = options.timeoutMs ?? REQUEST_MS;
    req.setTimeout(timeout, () =>
      req.destroy(new Error(`${options.method ?? 'GET'} ${options.path}: no answer within ${timeout} ms`)),
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** GET / of `name` over HTTPS on loopback, the chain verified against `ca` and the name checked. */
function httpsGet(port, name, ca, agent = false, timeoutMs = 5000) {
  return call({
    protocol: 'https:',
    host: '127.0.0.1',
    port,
    servername: name,
    ca,
    agent,
    path: '/',
    timeoutMs,
    headers: { host: name },
  });
}

/** Polls `fn` every `everyMs` until it returns true (true), `deadline` passes or `over()` says so (false). */
async function until(deadline, fn, everyMs = 100, over = () => false) {
  for (;;) {
    if (over()) return false;
    try {
      if (await fn()) return true;
    } catch {
      // not yet
    }
    if (performance.now() >= deadline) return false;
    await sleep(everyMs);
  }
}

// --- /proc readings ---------------------------------------------------------------
/** `pid` and all its descendants (every thread's children). */
function processTree(pid) {
  const pids = [pid];
  for (let i = 0; i < pids.length && i < 256; i++) {
    let tasks = [];
    try {
      tasks = readdirSync(`/proc/${pids[i]}/task`);
    } catch {
      continue;
    }
    for (const task of tasks) {
      try {
        const children = readFileSync(`/proc/${pids[i]}/task/${task}/children`, 'utf8').trim();
        if (children) for (const c of children.split(/\s+/)) if (!pids.includes(Number(c))) pids.push(Number(c));
      } catch {
        // gone
      }
    }
  }
  return pids;
}

function kbField(file, field) {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(file, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

function fdCount(pid) {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return 0;
  }
}

/**
 * Samples PSS, RSS and open fds of the tree under `pid` every second; keeps
 * the peaks. Over MEM_CAP_MB of PSS the tree is killed (SIGKILL to each
 * process): the machine is shared, and a run must not push others' work
 * out of memory. `capHit` then holds the reading.
 */
function treeSampler(pid) {
  const peak = { pssMb: 0, rssMb: 0, fds: 0, processes: 0, fdsPerProcess: [] };
  const sampler = { peak, capHit: null };
  const read = () => {
    const pids = processTree(pid);
    let pss = 0;
    let rss = 0;
    const fds = [];
    for (const p of pids) {
      pss += kbField(`/proc/${p}/smaps_rollup`, 'Pss');
      rss += kbField(`/proc/${p}/status`, 'VmRSS');
      fds.push(fdCount(p));
    }
    const total = fds.reduce((a, b) => a + b, 0);
    const now = { pssMb: pss / 1024, rssMb: rss / 1024, fds: total, processes: pids.length, fdsPerProcess: fds };
    peak.pssMb = Math.max(peak.pssMb, now.pssMb);
    peak.rssMb = Math.max(peak.rssMb, now.rssMb);
    if (total > peak.fds) {
      peak.fds = total;
      peak.fdsPerProcess = fds;
    }
    peak.processes = Math.max(peak.processes, pids.length);
    if (now.pssMb > MEM_CAP_MB && sampler.capHit === null) {
      sampler.capHit = now;
      log(`PSS ${Math.round(now.pssMb)} MB is over MEM_CAP_MB (${MEM_CAP_MB}): killing the tree of ${pid}`);
      for (const p of pids) {
        try {
          process.kill(p, 'SIGKILL');
        } catch {
          // gone
        }
      }
    }
    return now;
  };
  read();
  const timer = setInterval(read, 1000);
  return Object.assign(sampler, {
    read,
    stop() {
      clearInterval(timer);
      return read();
    },
  });
}

/**
 * Counts, over a child's whole output, lines naming EMFILE ("too many open
 * files"), lines at error level or above (proxyd's and Caddy's JSON logs
 * alike) and warnings; keeps the first few distinct error lines and,
 * after them, warnings.
 */
function outputScanner(child) {
  const found = { emfile: 0, warnOrWorse: 0, errors: 0, first: [] };
  let partial = '';
  const keep = (line, limit) => {
    const key = line.replace(/[0-9]+/g, 'N').slice(0, 160);
    if (found.first.length < limit && !found.first.some((f) => f.key === key))
      found.first.push({ key, line: line.slice(0, 600) });
  };
  const onData = (d) => {
    const text = partial + d;
    const lines = text.split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      const emfile = /EMFILE|too many open files/i.test(line);
      const error = emfile || /"level":"(error|fatal)"/.test(line);
      const warn = /"level":"warn"/.test(line);
      if (emfile) found.emfile++;
      if (error) {
        found.errors++;
        keep(line, 8);
      }
      if (error || warn) found.warnOrWorse++;
      if (warn) keep(line, 4);
    }
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  return {
    summary: () => ({
      emfile: found.emfile,
      errors: found.errors,
      warnOrWorse: found.warnOrWorse,
      first: found.first.map((f) => f.line),
    }),
  };
}

/** Removes a run's dir (certificates included), timed: a slow disk shows here, not in the next run. */
function removeRunDir(runDir) {
  const t = performance.now();
  rmSync(runDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
  log(`removed ${path.basename(runDir)} in ${((performance.now() - t) / 1000).toFixed(1)} s`);
}

/**
 * Certificates issued so far: folders under `certificates/local/` of a
 * certmagic-style storage (proxyd's cert dir and Caddy's data dir alike),
 * with the seconds since `t0`.
 */
function issued(storageRoot, t0) {
  let count = 0;
  try {
    count = readdirSync(path.join(storageRoot, 'certificates/local')).length;
  } catch {
    // none yet
  }
  return { count, atS: round((performance.now() - t0) / 1000, 1) };
}

// --- measurements shared by both proxies ------------------------------------------
/**
 * Coverage: each sampled name is fetched over HTTPS (chain verified against
 * `ca()`, which may appear late) until it answers 200, 8 at a time, until
 * `deadline`. Returns when each verified (ms since `t0`).
 */
async function coverage(port, names, ca, t0, deadline) {
  const verifiedAt = new Map();
  const queue = [...names];
  const worker = async () => {
    while (queue.length > 0) {
      const name = queue.shift();
      const ok = await until(
        deadline,
        async () => {
          const pem = ca();
          if (pem === null) return false;
          return (await httpsGet(port, name, pem)).status === 200;
        },
        500,
      );
      if (ok) verifiedAt.set(name, performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  const times = [...verifiedAt.values()];
  return {
    sampled: names.length,
    verified: verifiedAt.size,
    completeS: verifiedAt.size === names.length ? Math.max(...times) / 1000 : null,
    boundS: (deadline - t0) / 1000,
  };
}

/**
 * A sequential keep-alive HTTPS loop to one name, in its own process
 * (probe.mjs); `window(fn)` gives its request latencies while `fn` runs,
 * with their start times on this process's `performance.now()` clock.
 * Failed requests are counted (their time counts as a latency too: a stall
 * that ends in an error is a stall). `pid` is the probe's process.
 */
function probeLoop(port, name, ca) {
  const child = fork(path.join(here, 'probe.mjs'), [String(port), name], {
    env: { ...process.env, PROBE_CA: ca, PROBE_GAP_MS: String(PROBE_GAP_MS) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  // performance.now() = monotonic ms − this offset (process.hrtime is CLOCK_MONOTONIC, the same in every process).
  const offset = Number(process.hrtime.bigint()) / 1e6 - performance.now();
  /** The probe's next message of `type`; rejects when the probe exits first (`what` names the wait). */
  const next = (type, what) =>
    new Promise((resolve, reject) => {
      const onMessage = (m) => {
        if (m.type !== type) return;
        child.off('message', onMessage);
        child.off('exit', onExit);
        resolve(m);
      };
      const onExit = (code) => reject(new Error(`probe exited (${code}) before ${what}`));
      child.on('message', onMessage);
      child.once('exit', onExit);
    });
  const ready = next('ready', 'it was warm');
  const collect = () => {
    const answer = next('samples', 'answering');
    child.send({ type: 'collect' });
    return answer;
  };
  return {
    pid: child.pid,
    async window(fn) {
      await ready;
      child.send({ type: 'window' });
      const value = await fn();
      const m = await collect();
      return {
        value,
        samples: m.samples,
        starts: m.starts.map((s) => s - offset),
        failures: m.failures,
        lastError: m.lastError,
      };
    },
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.send({ type: 'stop' });
      await exited;
    },
  };
}

const pct = (xs, p) => {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};
const round = (x, d = 1) => (Number.isFinite(x) ? Number(x.toFixed(d)) : null);

/**
 * What the main threads of `processes` ({role, pid}) did, sampled every
 * `everyMs` from /proc/<pid>/schedstat: time run on a CPU and time spent
 * runnable, waiting on a run queue (ns counters, kept in ms); and the CPU
 * time of all the process's threads (/proc/<pid>/stat, 10 ms ticks). The
 * counters are cumulative, so the difference between any two samples is
 * exact for the time between them, however late this loop's timer fires
 * (but the kernel adds a wait when the thread gets its CPU: a wait begun
 * before a span counts in it).
 */
function schedSampler(processes, everyMs = 20) {
  const samples = [];
  const read = () => {
    const at = performance.now();
    const v = processes.map(({ pid }) => {
      try {
        const [run, wait] = readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ').map(Number);
        // utime + stime of every thread (fields 14 and 15, after the command's closing parenthesis), in ticks.
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        const cpu = ((Number(fields[11]) + Number(fields[12])) * 1000) / CLK_TCK;
        return [run / 1e6, wait / 1e6, cpu];
      } catch {
        return null;
      }
    });
    samples.push({ at, v });
  };
  read();
  const timer = setInterval(read, everyMs);
  return {
    /** Takes a sample now. */
    read,
    stop() {
      clearInterval(timer);
      read();
    },
    /**
     * Each process's run and run-queue wait over the shortest sampled
     * span holding [from, to], and that span's length.
     */
    during(from, to) {
      let a = null;
      let b = null;
      for (const x of samples) {
        if (x.at <= from) a = x;
        if (x.at >= to && b === null) b = x;
      }
      if (a === null || b === null) return null;
      return {
        spanMs: round(b.at - a.at, 1),
        processes: processes.map(({ role }, i) => {
          const [x, y] = [a.v[i], b.v[i]];
          return x && y
            ? { role, runMs: round(y[0] - x[0], 1), waitMs: round(y[1] - x[1], 1), cpuMs: round(y[2] - x[2], 0) }
            : { role };
        }),
      };
    },
  };
}

/** The slowest request of a probe window, and what the processes did around it (`sched`: a schedSampler or null). */
function worstOf(window, sched) {
  let at = -1;
  for (let i = 0; i < window.samples.length; i++) if (at < 0 || window.samples[i] > window.samples[at]) at = i;
  if (at < 0) return null;
  const ms = window.samples[at];
  const from = window.starts[at];
  return { ms: round(ms, 1), around: sched?.during(from, from + ms) ?? null };
}

/** Stall figures of a write window against the idle window before it. */
function stallOf(idle, during, sched = null) {
  const base = pct(idle.samples, 50);
  const worst = Math.max(0, ...during.samples);
  return {
    probeRequests: during.samples.length,
    probeFailures: during.failures,
    probeLastError: during.lastError,
    idleP50Ms: round(base, 2),
    idleWorstMs: round(Math.max(0, ...idle.samples), 1),
    worstMs: round(worst, 1),
    stallMs: round(worst - base, 1),
    ...(sched ? { idleWorst: worstOf(idle, sched), worst: worstOf(during, sched) } : {}),
  };
}

// --- proxyd -------------------------------------------------------------------------
/** The state file as the route store writes it: one route per line, sorted by domain. */
function stateFile(names) {
  const lines = names
    .slice()
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
    .map((domain) => JSON.stringify({ domain, upstream: UPSTREAM, tls: false, source: null }));
  return `{"format":"proxyd-routes/1","routes":[\n${lines.join(',\n')}\n]}\n`;
}

function spawnProxyd(run) {
  const t0 = performance.now();
  const child = start(
    'proxyd',
    process.execPath,
    [
      ...NODE_ARGS,
      PROXYD,
      'run',
      '--config',
      run.config,
      '--state-dir',
      run.stateDir,
      '--cert-dir',
      run.certDir,
      '--admin-socket',
      run.socket,
      '--no-docker',
      ...(WORKERS === undefined ? [] : ['--workers', WORKERS]),
    ],
    { PROXY_ADMIN_TOKEN: TOKEN, PROXY_LOG: 'warn' },
  );
  // The session's listener reports an early exit; a planned stop removes it (and only it).
  const reportEarlyExit = child.listeners('exit');
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  return { child, t0, exited, reportEarlyExit, scan: outputScanner(child) };
}

async function stopProxyd(proc) {
  for (const l of proc.reportEarlyExit) proc.child.off('exit', l);
  if (proc.child.exitCode === null && proc.child.signalCode === null) proc.child.kill('SIGTERM');
  const killer = setTimeout(() => proc.child.kill('SIGKILL'), 20_000);
  await proc.exited;
  clearTimeout(killer);
}

/** spawn → /health 200, and → `name` answering over verified HTTPS; null where not within the bound. */
async function startTimes(run, proc, name) {
  const deadline = proc.t0 + START_MS;
  let died = null;
  proc.exited.then((e) => {
    died = { ...e, atS: round((performance.now() - proc.t0) / 1000, 1) };
  });
  const over = () => died !== null;
  let readyMs = null;
  const okHealth = await until(
    deadline,
    async () => {
      return (await call({ host: '127.0.0.1', port: run.adminPort, path: '/health', timeoutMs: 2000 })).status === 200;
    },
    50,
    over,
  );
  if (okHealth) readyMs = performance.now() - proc.t0;
  let httpsMs = null;
  const okHttps = await until(
    deadline,
    async () => {
      const ca = run.ca();
      return ca !== null && (await httpsGet(run.httpsPort, name, ca, false, 2000)).status === 200;
    },
    50,
    over,
  );
  if (okHttps) httpsMs = performance.now() - proc.t0;
  return { readyS: readyMs === null ? null : readyMs / 1000, httpsS: httpsMs === null ? null : httpsMs / 1000, died };
}

async function benchProxyd(n) {
  const runDir = path.join(dir, `proxyd-${n}`);
  mkdirSync(path.join(runDir, 'state'), { recursive: true, mode: 0o700 });
  const adds = Math.ceil(WRITES / 2);
  // The table ends at n routes after the writes add theirs (the route store's limit is 100,000).
  const preloaded = n - adds;
  const names = Array.from({ length: preloaded }, (_, i) => nameOf(i));
  const [httpPort, httpsPort, adminPort] = [await freePort(), await freePort(), await freePort()];
  const run = {
    config: path.join(runDir, 'Proxyfile'),
    stateDir: path.join(runDir, 'state'),
    certDir: path.join(runDir, 'certs'),
    socket: path.join(runDir, 'admin.sock'),
    httpsPort,
    adminPort,
    ca() {
      const file = path.join(this.certDir, 'ca/local/root.crt');
      return existsSync(file) ? readFileSync(file) : null;
    },
  };
  // Automatic HTTPS on (the default); every .test name is certified by the local CA.
  writeFileSync(
    run.config,
    `{\n\thttp_port ${httpPort}\n\thttps_port ${httpsPort}\n\tadmin 127.0.0.1:${adminPort}\n}\n`,
  );
  writeFileSync(path.join(run.stateDir, 'routes.json'), stateFile(names));
  const sample = sampleOf(preloaded, SAMPLE).map(nameOf);
  const probeName = sample[0];
  const result = {
    proxy: 'proxyd',
    names: n,
    preloaded,
    workers: WORKERS ?? `default (${availableParallelism()})`,
    load: { start: load() },
  };

  log(`proxyd ${n}: start (${preloaded} routes in the state file, empty cert dir)`);
  let proc = spawnProxyd(run);
  const sampler = treeSampler(proc.child.pid);
  try {
    result.start = await startTimes(run, proc, probeName);
    log(`proxyd ${n}: ready ${result.start.readyS} s, https ${result.start.httpsS} s`);
    if (result.start.died)
      throw new Error(
        `proxyd exited during start: ${JSON.stringify(result.start.died)}\n${proc.child.output().slice(-2000)}`,
      );
    if (result.start.readyS === null) throw new Error(`no /health within ${START_MS / 1000} s`);
    result.afterStart = sampler.read();
    result.issued = { afterStart: issued(run.certDir, proc.t0) };

    log(`proxyd ${n}: coverage of ${sample.length} sampled names`);
    result.coverage = await coverage(httpsPort, sample, () => run.ca(), proc.t0, performance.now() + COVER_MS);
    result.issued.afterCoverage = issued(run.certDir, proc.t0);
    log(
      `proxyd ${n}: ${result.coverage.verified}/${result.coverage.sampled} verified; complete at ${result.coverage.completeS} s`,
    );

    // The probe needs one name that is served; the first sampled one that verified.
    const ca = run.ca();
    let probeOn = null;
    for (const name of sample) {
      if (ca !== null && (await httpsGet(httpsPort, name, ca).catch(() => ({ status: 0 }))).status === 200) {
        probeOn = name;
        break;
      }
    }
    if (probeOn === null) {
      result.writes = { skipped: 'no sampled name is served over HTTPS: no site to probe' };
    } else {
      result.writes = await proxydWrites(run, n, probeOn, ca, sample, proc.child.pid);
    }
    result.peak = { ...sampler.peak };
    result.load.afterWrites = load();
    result.issued.afterWrites = issued(run.certDir, proc.t0);

    log(`proxyd ${n}: restart on the populated cert dir`);
    await stopProxyd(proc);
    result.log = proc.scan.summary();
    proc = spawnProxyd(run);
    const restartSampler = treeSampler(proc.child.pid);
    try {
      result.restart = await startTimes(run, proc, probeOn ?? probeName);
      await sleep(1000);
      result.restart.afterStart = restartSampler.read();
      result.restart.peak = { ...restartSampler.peak };
    } finally {
      restartSampler.stop();
      result.restart.memCapHit = restartSampler.capHit;
      result.restart.log = proc.scan.summary();
    }
    log(`proxyd ${n}: restart ready ${result.restart.readyS} s, https ${result.restart.httpsS} s`);
  } catch (err) {
    result.error = err.message;
    log(`proxyd ${n}: ${err.message}`);
  } finally {
    sampler.stop();
    result.peak ??= { ...sampler.peak };
    result.exitedEarly =
      proc.child.exitCode !== null || proc.child.signalCode !== null
        ? { code: proc.child.exitCode, signal: proc.child.signalCode }
        : null;
    if (result.exitedEarly || result.error) result.output = proc.child.output().slice(-4000);
    await stopProxyd(proc);
    result.log ??= proc.scan.summary();
    result.memCapHit = sampler.capHit;
    result.load.end = load();
    removeRunDir(runDir);
  }
  return result;
}

/** WRITES POST /routes at WRITE_RATE, alternating TCP and the admin socket; half add a name, half replace one. */
async function proxydWrites(run, n, probeOn, ca, sample, pid) {
  const tcpAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const sockAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const probe = probeLoop(run.httpsPort, probeOn, ca);
  // Who ran and who waited for a CPU while the probe's slowest requests were in flight.
  const [primary, ...children] = processTree(pid);
  const sched = schedSampler([
    { role: 'primary', pid: primary },
    ...children.map((p, i) => ({ role: `child ${i + 1}`, pid: p })),
    { role: 'upstream', pid: upstream.pid },
    { role: 'probe', pid: probe.pid },
    { role: 'bench', pid: process.pid },
  ]);
  const latencies = [];
  const statuses = {};
  const errors = [];
  const added = [];
  try {
    const idle = await probe.window(() => sleep(IDLE_MS));
    log(`proxyd ${n}: ${WRITES} POST /routes at ${WRITE_RATE}/s, probe on ${probeOn}`);
    const t0 = performance.now();
    const deadline = t0 + WRITES_MS;
    const during = await probe.window(async () => {
      for (let i = 0; i < WRITES && performance.now() < deadline; i++) {
        const slot = t0 + (i * 1000) / WRITE_RATE;
        if (slot > performance.now()) await sleep(slot - performance.now());
        // Even: a new name (a new certificate); odd: an existing route replaced (never the probe's).
        const replaceable = sample.filter((s) => s !== probeOn);
        const domain = i % 2 === 0 ? `w${i}.names.test` : replaceable[(i >> 1) % replaceable.length];
        if (i % 2 === 0) added.push(domain);
        const viaSocket = i % 4 >= 2;
        const s = performance.now();
        try {
          const res = await call(
            viaSocket
              ? { socketPath: run.socket, method: 'POST', path: '/routes', agent: sockAgent }
              : {
                  host: '127.0.0.1',
                  port: run.adminPort,
                  method: 'POST',
                  path: '/routes',
                  agent: tcpAgent,
                  headers: { authorization: `Bearer ${TOKEN}` },
                },
            { domain, upstream: UPSTREAM, tls: false },
          );
          statuses[res.status] = (statuses[res.status] ?? 0) + 1;
          if (res.status !== 201) errors.push(`${domain}: ${res.status} ${res.body.slice(0, 200)}`);
        } catch (err) {
          statuses.error = (statuses.error ?? 0) + 1;
          errors.push(`${domain}: ${err.message}`);
        }
        latencies.push(performance.now() - s);
      }
    });
    const elapsedS = (performance.now() - t0) / 1000;
    sched.read();
    const writesSched = sched.during(t0, performance.now() - 1);
    // The names the writes added: served with a verified certificate within the coverage bound?
    const addedCoverage = await coverage(
      run.httpsPort,
      added,
      () => run.ca(),
      performance.now(),
      performance.now() + Math.min(COVER_MS, 120_000),
    );
    return {
      count: latencies.length,
      planned: WRITES,
      ratePerS: WRITE_RATE,
      elapsedS: round(elapsedS, 1),
      p50Ms: round(pct(latencies, 50)),
      p99Ms: round(pct(latencies, 99)),
      maxMs: round(Math.max(...latencies)),
      // Each write's time in order: whether the slow ones are the first (a cold path) or spread.
      latenciesMs: latencies.map((x) => round(x, 0)),
      statuses,
      non2xx: latencies.length - (statuses[201] ?? 0),
      errors: errors.slice(0, 5),
      probeOn,
      ...stallOf(idle, during, sched),
      sched: writesSched,
      addedCoverage,
    };
  } finally {
    sched.stop();
    await probe.stop();
    tcpAgent.destroy();
    sockAgent.destroy();
  }
}

// --- Caddy ----------------------------------------------------------------------------
const caddyRoute = (name) => ({
  match: [{ host: [name] }],
  handle: [{ handler: 'reverse_proxy', upstreams: [{ dial: UPSTREAM }] }],
  terminal: true,
});

async function benchCaddy(n) {
  const runDir = path.join(dir, `caddy-${n}`);
  mkdirSync(runDir, { recursive: true });
  const preloaded = n - Math.ceil(CADDY_CHANGES);
  const names = Array.from({ length: preloaded }, (_, i) => nameOf(i));
  const [httpPort, httpsPort, adminPort] = [await freePort(), await freePort(), await freePort()];
  const storage = path.join(runDir, 'data');
  const config = {
    admin: { listen: `127.0.0.1:${adminPort}` },
    storage: { module: 'file_system', root: storage },
    logging: { logs: { default: { level: 'WARN' } } },
    apps: {
      http: {
        http_port: httpPort,
        https_port: httpsPort,
        servers: {
          srv0: {
            listen: [`127.0.0.1:${httpsPort}`],
            routes: names.map(caddyRoute),
            automatic_https: { disable_redirects: true },
            // HTTP/1.1 and HTTP/2 over TLS, as proxyd serves (no HTTP/3 listener).
            protocols: ['h1', 'h2'],
          },
        },
      },
      // One catch-all policy: every host of the routes gets a certificate from the internal CA, none on demand.
      tls: { automation: { policies: [{ issuers: [{ module: 'internal' }] }] } },
      pki: { certificate_authorities: { local: { install_trust: false } } },
    },
  };
  const file = path.join(runDir, 'caddy.json');
  writeFileSync(file, JSON.stringify(config));
  const rootFile = path.join(storage, 'pki/authorities/local/root.crt');
  const ca = () => (existsSync(rootFile) ? readFileSync(rootFile) : null);
  const sample = sampleOf(preloaded, SAMPLE).map(nameOf);
  const result = {
    proxy: 'caddy',
    names: n,
    preloaded,
    version: execFileSync('caddy', ['version']).toString().trim(),
    load: { start: load() },
  };

  log(`caddy ${n}: start (${preloaded} routes in the JSON config, empty storage)`);
  const t0 = performance.now();
  const child = start('caddy', 'caddy', ['run', '--config', file], {
    HOME: runDir,
    XDG_DATA_HOME: runDir,
    XDG_CONFIG_HOME: runDir,
  });
  const sampler = treeSampler(child.pid);
  const scan = outputScanner(child);
  const exited = () => child.exitCode !== null || child.signalCode !== null;
  try {
    const budgetEnd = t0 + CADDY_MS;
    const deadline = Math.min(t0 + START_MS, budgetEnd);
    const adminOk = await until(
      deadline,
      async () => {
        return (
          (
            await call({
              host: '127.0.0.1',
              port: adminPort,
              path: '/config/apps/http/servers/srv0/listen',
              timeoutMs: 2000,
            })
          ).status === 200
        );
      },
      50,
      exited,
    );
    const readyS = adminOk ? (performance.now() - t0) / 1000 : null;
    const httpsOk = await until(
      deadline,
      async () => {
        const pem = ca();
        return pem !== null && (await httpsGet(httpsPort, sample[0], pem, false, 2000)).status === 200;
      },
      50,
      exited,
    );
    result.start = { readyS, httpsS: httpsOk ? (performance.now() - t0) / 1000 : null };
    log(`caddy ${n}: config loaded ${readyS} s, https ${result.start.httpsS} s`);
    if (exited()) throw new Error(`caddy exited during start (${child.exitCode}): ${child.output().slice(-2000)}`);
    result.afterStart = sampler.read();
    result.issued = { afterStart: issued(storage, t0) };

    log(`caddy ${n}: coverage of ${sample.length} sampled names`);
    result.coverage = await coverage(httpsPort, sample, ca, t0, Math.min(performance.now() + COVER_MS, budgetEnd));
    result.issued.afterCoverage = issued(storage, t0);
    log(
      `caddy ${n}: ${result.coverage.verified}/${result.coverage.sampled} verified; complete at ${result.coverage.completeS} s`,
    );

    const probeOn = [];
    const pem = ca();
    for (const name of sample) {
      if (pem !== null && (await httpsGet(httpsPort, name, pem).catch(() => ({ status: 0 }))).status === 200) {
        probeOn.push(name);
        break;
      }
    }
    const probe = probeOn.length > 0 ? probeLoop(httpsPort, probeOn[0], pem) : null;
    const latencies = [];
    const servedAfter = [];
    const statuses = {};
    const errors = [];
    try {
      const idle = probe ? await probe.window(() => sleep(IDLE_MS)) : null;
      log(`caddy ${n}: ${CADDY_CHANGES} sites added through the admin API`);
      const c0 = performance.now();
      const changesEnd = Math.max(Math.min(c0 + CHANGES_MS, budgetEnd), c0 + 60_000);
      const work = async () => {
        for (let i = 0; i < CADDY_CHANGES && performance.now() < changesEnd; i++) {
          const name = `w${i}.names.test`;
          const s = performance.now();
          try {
            const res = await call(
              {
                host: '127.0.0.1',
                port: adminPort,
                method: 'POST',
                path: '/config/apps/http/servers/srv0/routes',
                timeoutMs: Math.max(changesEnd - performance.now(), 1000),
              },
              caddyRoute(name),
            );
            statuses[res.status] = (statuses[res.status] ?? 0) + 1;
            if (res.status !== 200) errors.push(`${name}: ${res.status} ${res.body.slice(0, 200)}`);
          } catch (err) {
            statuses.error = (statuses.error ?? 0) + 1;
            errors.push(`${name}: ${err.message}`);
          }
          latencies.push(performance.now() - s);
          // The change is done for a user when the new site answers over verified HTTPS.
          const served = await until(
            changesEnd,
            async () => (await httpsGet(httpsPort, name, ca(), false, 5000)).status === 200,
            50,
          );
          servedAfter.push(served ? performance.now() - s : null);
        }
      };
      let during = null;
      if (probe) during = await probe.window(work);
      else await work();
      const served = servedAfter.filter((x) => x !== null);
      result.changes = {
        count: latencies.length,
        planned: CADDY_CHANGES,
        p50Ms: round(pct(latencies, 50)),
        p99Ms: round(pct(latencies, 99)),
        maxMs: round(Math.max(...latencies)),
        statuses,
        errors: errors.slice(0, 5),
        servedP50Ms: round(pct(served, 50)),
        servedMaxMs: round(Math.max(...served)),
        notServed: servedAfter.length - served.length,
        ...(probe ? stallOf(idle, during) : { probe: 'no sampled name served: no site to probe' }),
      };
    } finally {
      await probe?.stop();
    }
    result.afterChanges = sampler.read();
    result.issued.afterChanges = issued(storage, t0);
  } catch (err) {
    result.error = err.message;
    log(`caddy ${n}: ${err.message}`);
  } finally {
    sampler.stop();
    result.peak = { ...sampler.peak };
    child.removeAllListeners('exit');
    if (!exited()) {
      const gone = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      await gone;
      clearTimeout(killer);
    }
    result.log = scan.summary();
    result.memCapHit = sampler.capHit;
    result.load.end = load();
    removeRunDir(runDir);
  }
  return result;
}

// --- the run ----------------------------------------------------------------------------
const commit = (() => {
  try {
    return execFileSync('git', ['-C', path.dirname(PROXYD), 'rev-parse', '--short', 'HEAD'])
      .toString()
      .trim();
  } catch {
    return null;
  }
})();
/**
 * The disk's own fsync times, in the bench's directory (the file system the
 * state file and the cert dir live on): what a route write's durability
 * costs before proxyd does anything. A write answers after its journal
 * line is fsynced, so this is its floor, and its tail is the write's tail
 * on a disk that stalls (a VM's, shared). `FSYNC_PROBE_MS` of 200-byte
 * appends, one every 20 ms, before any proxy runs.
 */
async function fsyncFloor(ms) {
  const file = path.join(dir, 'fsync-probe');
  const fd = openSync(file, 'a');
  const times = [];
  try {
    const end = performance.now() + ms;
    while (performance.now() < end) {
      writeSync(fd, `${'x'.repeat(199)}\n`);
      const t = performance.now();
      fsyncSync(fd);
      times.push(performance.now() - t);
      await sleep(20);
    }
  } finally {
    closeSync(fd);
    rmSync(file, { force: true });
  }
  return {
    count: times.length,
    p50Ms: round(pct(times, 50), 2),
    p99Ms: round(pct(times, 99), 1),
    p999Ms: round(pct(times, 99.9), 1),
    maxMs: round(Math.max(...times), 1),
    over100Ms: times.filter((t) => t > 100).length,
  };
}
log(`the disk's fsync times, ${FSYNC_PROBE_MS / 1000} s`);
const fsync = await fsyncFloor(FSYNC_PROBE_MS);
const results = [];
for (const n of SIZES) {
  if (ONLY.includes('proxyd')) results.push(await benchProxyd(n));
  if (ONLY.includes('caddy')) results.push(await benchCaddy(n));
}

// --- the table ---------------------------------------------------------------------------
const mark = (ok) => (ok === null ? '' : ok ? ' ✓' : ' ✗');
const s = (x, d = 1) => (x === null || x === undefined ? '—' : Number(x).toFixed(d));
const int = (x) => (x === null || x === undefined ? '—' : Math.round(x).toLocaleString('en'));
const lines = [];
const out = (l) => lines.push(l);
out(
  `bench/names: ${commit ?? '?'}, Node ${process.versions.node}, ${availableParallelism()} CPUs; ✓/✗ = issue 30's goal met/missed`,
);
out('');
out(
  `The disk (the floor of a write, which answers once its journal line is fsynced): ${fsync.count} fsyncs of a 200-byte append, p50 ${s(fsync.p50Ms, 2)} / p99 ${s(fsync.p99Ms)} / p99.9 ${s(fsync.p999Ms)} / max ${s(fsync.maxMs)} ms, ${fsync.over100Ms} over 100 ms.`,
);
out('');
out(
  '| proxy | names | start: admin (s) | start: HTTPS (s) | restart: HTTPS (s) | write p50 / p99 / max (ms) | non-2xx | stall (ms) | idle p50 / worst (ms) | PSS / RSS (MB) | fds (per process) | sample verified | issued (at s) | load avg |',
);
out(
  '| ----- | ----: | ----: | ----: | ----: | ----: | ----: | ----: | ----: | ----: | ----: | ----- | ----: | ----- |',
);
for (const r of results) {
  const w = r.proxy === 'proxyd' ? r.writes : r.changes;
  const startOk =
    r.names >= GOALS.startAtN && r.start ? r.start.httpsS !== null && r.start.httpsS <= GOALS.startS : null;
  const pssOk = r.names >= GOALS.pssAtN && r.proxy === 'proxyd' ? r.peak.pssMb <= GOALS.pssMb : null;
  const writeOk = r.proxy === 'proxyd' && w?.p99Ms != null ? w.p99Ms <= GOALS.postP99Ms && w.non2xx === 0 : null;
  const stallOk = r.proxy === 'proxyd' && w?.stallMs != null ? w.stallMs <= GOALS.stallMs : null;
  const cov = r.coverage;
  const covText = cov
    ? `${cov.verified}/${cov.sampled} ${cov.completeS === null ? `(not all in ${s(cov.boundS, 0)} s)` : `by ${s(cov.completeS)} s`}`
    : '—';
  const covOk = r.proxy === 'proxyd' && cov ? cov.verified === cov.sampled : null;
  const fdText = r.peak ? `${int(r.peak.fds)} (${r.peak.fdsPerProcess.join('+')})` : '—';
  out(
    `| ${r.proxy === 'proxyd' && WORKERS !== undefined ? `proxyd --workers ${WORKERS}` : r.proxy} | ${int(r.names)} | ${s(r.start?.readyS)} | ${s(r.start?.httpsS)}${mark(startOk)} | ${s(r.restart?.httpsS)} | ${w?.count ? `${s(w.p50Ms, 0)} / ${s(w.p99Ms, 0)} / ${s(w.maxMs, 0)}${mark(writeOk)}` : '—'} | ${w?.count ? (r.proxy === 'proxyd' ? w.non2xx : w.count - (w.statuses[200] ?? 0)) : '—'} | ${s(w?.stallMs)}${mark(stallOk)} | ${w?.idleP50Ms != null ? `${s(w.idleP50Ms)} / ${s(w.idleWorstMs)}` : '—'} | ${r.peak ? `${int(r.peak.pssMb)} / ${int(r.peak.rssMb)}${mark(pssOk)}` : '—'} | ${fdText} | ${covText}${mark(covOk)} | ${r.issued?.afterCoverage ? `${int(r.issued.afterCoverage.count)} (${s(r.issued.afterCoverage.atS, 0)})` : '—'} | ${r.load.start} → ${r.load.end} |`,
  );
}
for (const r of results) {
  if (r.error) out(`\n${r.proxy} ${r.names}: ${r.error}`);
  if (r.memCapHit)
    out(`\n${r.proxy} ${r.names}: killed at ${Math.round(r.memCapHit.pssMb)} MB PSS (MEM_CAP_MB ${MEM_CAP_MB})`);
  if (r.restart?.memCapHit)
    out(
      `\n${r.proxy} ${r.names}: restart killed at ${Math.round(r.restart.memCapHit.pssMb)} MB PSS (MEM_CAP_MB ${MEM_CAP_MB})`,
    );
  for (const [when, l] of [
    ['run', r.log],
    ['restart', r.restart?.log],
  ]) {
    if (l?.errors)
      out(
        `\n${r.proxy} ${r.names} (${when}): ${l.errors} log lines at error level or naming EMFILE, ${l.emfile} naming EMFILE (the first ones are in the JSON record)`,
      );
  }
  const w = r.proxy === 'proxyd' ? r.writes : r.changes;
  if (w?.errors?.length)
    out(`\n${r.proxy} ${r.names}: non-2xx writes ${JSON.stringify(w.statuses)}; first: ${w.errors.join(' | ')}`);
  if (w?.probeFailures)
    out(
      `\n${r.proxy} ${r.names}: ${w.probeFailures} probe requests failed during the writes (last: ${w.probeLastError})`,
    );
  if (w?.sched)
    out(
      `\n${r.proxy} ${r.names}: over the ${s(w.sched.spanMs / 1000, 0)} s of writes, CPU of all threads / main thread's wait for a CPU (s): ${w.sched.processes.map((p) => `${p.role} ${s(p.cpuMs / 1000)} / ${s(p.waitMs / 1000)}`).join(', ')}`,
    );
  for (const [label, x] of [
    ['during the writes', w?.worst],
    ['before them (idle)', w?.idleWorst],
  ]) {
    if (x?.around)
      out(
        `\n${r.proxy} ${r.names}: the probe's slowest request ${label}, ${s(x.ms, 0)} ms; over the ${s(x.around.spanMs, 0)} ms sampled around it, main threads ran / waited for a CPU (ms): ${x.around.processes.map((p) => `${p.role} ${s(p.runMs, 0)} / ${s(p.waitMs, 0)}`).join(', ')}`,
      );
  }
  if (r.proxy === 'caddy' && w?.count)
    out(
      `\ncaddy ${r.names}: a new site answered over verified HTTPS p50 ${s(w.servedP50Ms, 0)} ms, max ${s(w.servedMaxMs, 0)} ms after its POST (${w.notServed} not within the bound)`,
    );
  if (r.proxy === 'proxyd' && w?.addedCoverage)
    out(
      `\nproxyd ${r.names}: names the writes added, served over verified HTTPS: ${w.addedCoverage.verified}/${w.addedCoverage.sampled}${w.addedCoverage.completeS === null ? ` (not all within ${s(w.addedCoverage.boundS, 0)} s)` : ` by ${s(w.addedCoverage.completeS)} s`}`,
    );
}
const table = lines.join('\n');
console.log(table);

const resultsDir = path.join(root, 'bench/results');
mkdirSync(resultsDir, { recursive: true });
const stamp = new Date().toISOString().replace(/[:.]/g, '-');
const jsonFile = path.join(resultsDir, `names-${stamp}.json`);
writeFileSync(
  jsonFile,
  `${JSON.stringify({ bench: 'names', commit, node: process.versions.node, cpus: availableParallelism(), sizes: SIZES, writes: WRITES, writeRate: WRITE_RATE, bounds: { START_MS, COVER_MS, WRITES_MS, CHANGES_MS, CADDY_MS }, goals: GOALS, fsync, results, table }, null, 2)}\n`,
);
console.log(`\nresults: ${path.relative(process.cwd(), jsonFile)}`);
await session.shutdown(results.some((r) => r.error) ? 1 : 0);
