// bench/analytics: the cost of analytics on the proxy's hot path and the
// memory of the collectors, in one run.
//
//   node bench/analytics/run.mjs          (or: pnpm bench analytics)
//   ROUNDS=9 DURATION=3 VERBOSE=1 LOADS=html,mix node bench/analytics/run.mjs
//   METHOD=alone [NULL=1] [PAIRS=6] node bench/analytics/run.mjs   (one daemon alone, see runAlone)
//
// Throughput: two built proxyd processes whose Proxyfiles differ only in
// `analytics off` (which stops counting, injection and the reserved paths, so
// "off" is a real baseline), both pinned to core 1 (`taskset`), in front of one
// nginx upstream (core 0, with the load). Both trust 127.0.0.1 as a proxy, and
// a wrk Lua script (load.lua) sends every request from another client IP
// (X-Forwarded-For, 100,000 distinct public IPv4s, so the unique-visitor sketch
// and the GeoIP lookups work as under real traffic) for one of 1,000 paths,
// Zipf-distributed (so the top-pages table sees a long tail).
//
// How on and off are compared, and why: on this shared 2-core VM one daemon
// alone moves ±30 % between 3-second windows, and two identical daemons
// started side by side differ by up to ±15 % for their whole lifetime (JIT
// and memory-layout luck of each process). Both are larger than the effect
// measured. Tried and dropped: alternating windows of two daemons (the first
// version of this bench) and one daemon switched on and off by reload in
// ABBA windows (pairs of adjacent windows scattered from -11 % to +35 %),
// and each daemon of a pair on its own core with its own wrk (the two phases
// of a round disagreed by up to 30 points).
// What is used: a crossover per round. A fresh pair of daemons X and Y is
// loaded AT THE SAME TIME, one wrk each, both saturating the one core they
// share (so both see the same machine at the same moment, and each one's
// throughput is inversely proportional to its CPU per request): X with
// analytics on and Y off for every load, then both Proxyfiles swapped and
// reloaded (POST /reload, same processes) and every load again. In the
// product of the two phases' on/off ratios, (X_on/Y_off) × (Y_on/X_off),
// each process's own factor cancels; its square root is the round's on/off
// ratio, and the median over rounds is reported, with CPU per request (user
// + system, all threads, /proc). The two phases of a round agree within a
// few %. Caveat: sharing a core charges the daemon with the larger working
// set for cache refills after every switch between the two, so this reads
// high rather than low. Loads: a 30-byte text/plain body under /t/
// (counting only), a 2 KB HTML page under /p/ (counting + script injection
// on every request, the worst case) and a site mix under /m/ (one HTML page
// in ten requests, the rest small assets).
// bench/analytics/hooks.mjs: the hooks' own CPU per request, in-process.
// Memory: bench/analytics/memory.mjs (V8 heap + array buffers, --expose-gc).
// Needs: the built daemon (pnpm build), wrk, nginx, taskset.
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../lib/session.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const PROXYD = path.join(root, 'apps/proxyd/dist/main.js');
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const DURATION = Number(process.env.DURATION ?? 3);
const WARMUP = Number(process.env.WARMUP ?? 2);
const CONNECTIONS = Number(process.env.CONNECTIONS ?? 50);
const PROXY_CORE = process.env.PROXY_CORE ?? '1';
const LOAD_CORE = process.env.LOAD_CORE ?? '0';
const HOST = 'bench.local';

for (const bin of ['wrk', 'nginx', 'taskset']) {
  try {
    execFileSync('sh', ['-c', `command -v ${bin}`], { stdio: 'ignore' });
  } catch {
    console.error(`bench/analytics needs ${bin} (apt-get install wrk nginx util-linux)`);
    process.exit(2);
  }
}
if (!existsSync(PROXYD)) {
  console.error('build first: pnpm build');
  process.exit(2);
}

// --- memory (a separate process so the heap is clean) -------------------------
const memory = JSON.parse(
  execFileSync(process.execPath, ['--expose-gc', path.join(here, 'memory.mjs')], { encoding: 'utf8' }),
);
// --- CPU per request of the hooks alone (in-process; little disturbed by other load) ---
const hooksCost = JSON.parse(execFileSync(process.execPath, [path.join(here, 'hooks.mjs')], { encoding: 'utf8' }));

const dir = mkdtempSync(path.join(tmpdir(), 'proxyd-bench-analytics-'));
chmodSync(dir, 0o755);
const children = [];
let stopping = false;
process.on('exit', () => {
  stopping = true;
  for (const c of children) {
    try {
      c.kill('SIGTERM');
    } catch {}
  }
  rmSync(dir, { recursive: true, force: true });
});
process.on('SIGINT', () => process.exit(130));

function start(name, args, env = {}) {
  const child = spawn('taskset', args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => {
    out += d;
  });
  child.stderr.on('data', (d) => {
    out += d;
  });
  child.on('exit', (code) => {
    if (!stopping && !child.stopped) console.error(`${name} exited early (${code}):\n${out.slice(-2000)}`);
  });
  children.push(child);
  return child;
}

async function waitFor(port, file) {
  const end = Date.now() + 15_000;
  while (Date.now() < end) {
    const ok = await new Promise((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => {
        s.write(`GET /${file} HTTP/1.1\r\nHost: ${HOST}\r\nConnection: close\r\n\r\n`);
      });
      let data = '';
      s.on('data', (d) => {
        data += d;
      });
      s.on('end', () => resolve(data));
      s.on('error', () => resolve(''));
    });
    if (ok.startsWith('HTTP/1.1 200')) return ok;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`nothing answers 200 on port ${port}`);
}

function toMs(v) {
  const m = /^([\d.]+)(us|ms|s)$/.exec(v);
  if (!m) return Number.NaN;
  const n = Number(m[1]);
  return m[2] === 'us' ? n / 1000 : m[2] === 's' ? n * 1000 : n;
}

const LOAD_SCRIPT = path.join(here, 'load.lua');

/** CPU time (user + system) of a process so far, µs, from /proc (clock ticks of 10 ms). */
function cpuMicros(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

/** Starts wrk against one daemon; resolves with its output. */
function wrkRun(port, prefix, seconds) {
  return new Promise((resolve, reject) => {
    const child = spawn(
      'taskset',
      [
        '-c',
        LOAD_CORE,
        'wrk',
        '-t1',
        `-c${CONNECTIONS}`,
        `-d${seconds}s`,
        '--latency',
        '-s',
        LOAD_SCRIPT,
        '-H',
        `Host: ${HOST}`,
        `http://127.0.0.1:${port}/`,
        '--',
        prefix,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`wrk exited ${code}`))));
  });
}

function parseWrk(out, port) {
  const errors = /Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1];
  if (errors) console.error(`  ! ${errors} non-2xx responses on port ${port}`);
  return {
    requests: Number(/(\d+) requests in/.exec(out)?.[1] ?? Number.NaN),
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? Number.NaN),
    p99: toMs(/\n\s+99%\s+(\S+)/.exec(out)?.[1] ?? ''),
  };
}

/**
 * One round: both daemons loaded at the same time for DURATION seconds.
 * `prefix`: `/t/` (small text), `/p/` (HTML page) or `/m/` (mix); load.lua
 * varies the rest of the path and the client IP. Returns, per daemon,
 * req/s, p99 and CPU µs per request.
 */
async function pairRound(a, b, prefix, seconds, retry = true) {
  const cpu0 = [cpuMicros(a.pid), cpuMicros(b.pid)];
  const [outA, outB] = await Promise.all([wrkRun(a.port, prefix, seconds), wrkRun(b.port, prefix, seconds)]);
  const cpu1 = [cpuMicros(a.pid), cpuMicros(b.pid)];
  const ra = parseWrk(outA, a.port);
  const rb = parseWrk(outB, b.port);
  if (!(ra.requests > 0 && rb.requests > 0 && ra.rps > 0 && rb.rps > 0)) {
    // A window wrk could not measure (seen once in ~100): say so, and measure it again once.
    console.error(`  ! unreadable wrk output, ${retry ? 'measuring again' : 'giving up'}:\n${outA}\n${outB}`);
    if (retry) return pairRound(a, b, prefix, seconds, false);
    throw new Error('wrk gave no numbers twice');
  }
  return [
    { ...ra, cpu: (cpu1[0] - cpu0[0]) / ra.requests },
    { ...rb, cpu: (cpu1[1] - cpu0[1]) / rb.requests },
  ];
}

// --- upstream: nginx serving a 30-byte text file and a 2 KB HTML page ----------
writeFileSync(path.join(dir, 'small.txt'), `${'x'.repeat(29)}\n`);
writeFileSync(
  path.join(dir, 'page.html'),
  `<!doctype html><html><head><meta charset="utf-8"><title>bench</title></head><body>${'<p>lorem ipsum dolor sit amet</p>'.repeat(55)}</body></html>\n`,
);
const upPort = await freePort();
writeFileSync(
  path.join(dir, 'nginx.conf'),
  `worker_processes 1;
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
  types { text/html html; text/plain txt; }
  # Every path under /t/ is the small text file, every path under /p/ the HTML page.
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  server {
    listen 127.0.0.1:${upPort};
    root ${dir};
    location /t/ { rewrite ^ /small.txt break; }
    location /p/ { rewrite ^ /page.html break; }
  }
}
`,
);
start('upstream', ['-c', LOAD_CORE, 'nginx', '-c', path.join(dir, 'nginx.conf'), '-p', dir]);
await waitFor(upPort, 'small.txt');

// --- two proxyd, differing only in `analytics off` -----------------------------
async function proxyd(name, analyticsOff, round) {
  const [httpPort, httpsPort, adminPort] = [await freePort(), await freePort(), await freePort()];
  const file = path.join(dir, `Proxyfile.${name}.${round}`);
  const write = (off) =>
    writeFileSync(
      file,
      `{
\thttp_port ${httpPort}
\thttps_port ${httpsPort}
\tadmin 127.0.0.1:${adminPort}
\tstate_dir ${dir}/state-${name}-${round}
\ttrusted_proxies 127.0.0.1/32
}

http://${HOST} {
\treverse_proxy 127.0.0.1:${upPort}
${off ? '\tanalytics off\n' : ''}}
`,
    );
  write(analyticsOff);
  const child = start(name, ['-c', PROXY_CORE, process.execPath, PROXYD, 'run', '--config', file], {
    PROXY_LOG: 'warn',
    PROXY_ADMIN_TOKEN: 'bench',
  });
  await waitFor(httpPort, 'p/0');
  // taskset execs the command: the child's pid is the daemon's.
  return { name, port: httpPort, pid: child.pid, child, adminPort, write };
}

/** One admin API call: its status and JSON body. */
async function adminCall(daemon, method, route) {
  const res = await fetch(`http://127.0.0.1:${daemon.adminPort}${route}`, {
    method,
    headers: { authorization: 'Bearer bench' },
  });
  return { status: res.status, body: await res.json() };
}

async function admin(daemon, method, route) {
  const { status, body } = await adminCall(daemon, method, route);
  if (status !== 200) throw new Error(`${method} ${route}: ${status} ${JSON.stringify(body)}`);
  return body;
}

/** Rewrites a daemon's Proxyfile with analytics on or off and reloads it (POST /reload). */
async function switchAnalytics(daemon, off) {
  daemon.write(off);
  await reloadNow(daemon);
}

/** Whether a daemon injects the script now (its Proxyfile says analytics on). */
async function injects(daemon) {
  return (await waitFor(daemon.port, 'p/0')).includes('data-t=');
}

/** Stops a daemon and waits for it to exit. */
function stop(daemon) {
  return new Promise((resolve) => {
    if (daemon.child.exitCode !== null) return resolve();
    daemon.child.stopped = true;
    daemon.child.once('exit', resolve);
    daemon.child.kill('SIGTERM');
  });
}

// LOADS=html (or text, mix; comma-separated) runs only those loads.
const LOADS = [
  ['small text', '/t/'],
  ['html page', '/p/'],
  ['site mix', '/m/'],
].filter(([load]) => !process.env.LOADS || process.env.LOADS.split(',').some((w) => load.includes(w)));
/** The median: a round disturbed by other load on the machine does not move it. */
function median(values) {
  const v = [...values].sort((x, y) => x - y);
  const mid = v.length >> 1;
  return v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

/** The first cells of a result line: load, on and off req/s, on/off and loss (medians over rounds). */
function ratioCells(load, rounds) {
  const ratio = median(rounds.map((x) => x.ratio));
  return [
    load.padEnd(12),
    median(rounds.map((x) => x.on.rps))
      .toFixed(0)
      .padStart(9),
    median(rounds.map((x) => x.off.rps))
      .toFixed(0)
      .padStart(10),
    ratio.toFixed(3).padStart(7),
    `${((1 - ratio) * 100).toFixed(1)} %`.padStart(7),
  ];
}

/** POST /reload, waiting out the admin API's reload rate limit (429 with `retry_after` seconds). */
async function reloadNow(daemon) {
  for (;;) {
    const { status, body } = await adminCall(daemon, 'POST', '/reload');
    if (status === 200) return;
    if (typeof body.retry_after !== 'number') throw new Error(`POST /reload: ${status} ${JSON.stringify(body)}`);
    await new Promise((r) => setTimeout(r, body.retry_after * 1000));
  }
}

/** Requests and CPU (µs) of one daemon loaded alone for `seconds`. */
async function aloneWindow(daemon, prefix, seconds) {
  const cpu0 = cpuMicros(daemon.pid);
  const out = await wrkRun(daemon.port, prefix, seconds);
  const cpu = cpuMicros(daemon.pid) - cpu0;
  const r = parseWrk(out, daemon.port);
  if (!(r.requests > 0)) throw new Error(`unreadable wrk output:\n${out}`);
  return { requests: r.requests, cpu };
}

/**
 * METHOD=alone: one fresh daemon per round, alone on its core (as a user
 * runs it), switched between analytics on and off by POST /reload between
 * windows of DURATION seconds, in the order on,off,off,on,on,off,… (PAIRS
 * pairs per load; each window after a switch is preceded by one unmeasured
 * second, so the code paths the switch left cold are warm again). The same
 * process is compared with itself, so its lifetime luck cancels; adjacent
 * windows see nearly the same machine. A round's ratio is its on requests
 * over its off requests; the median over rounds is reported. NULL=1 reloads
 * `analytics off` for both states: the noise floor of the method.
 */
async function runAlone() {
  const PAIRS = Number(process.env.PAIRS ?? 6);
  const nullRun = process.env.NULL === '1';
  const rounds = Object.fromEntries(LOADS.map(([load]) => [load, []]));
  let daemon;
  for (let r = 0; r < ROUNDS; r++) {
    if (daemon) await stop(daemon);
    daemon = await proxyd('z', false, r);
    for (const [load, prefix] of LOADS) {
      const sum = { on: { requests: 0, cpu: 0 }, off: { requests: 0, cpu: 0 } };
      for (let i = 0; i < PAIRS; i++) {
        for (const state of i % 2 === 0 ? ['on', 'off'] : ['off', 'on']) {
          await switchAnalytics(daemon, nullRun || state === 'off');
          if ((await injects(daemon)) !== (!nullRun && state === 'on'))
            throw new Error('injection is not what the Proxyfile says');
          await wrkRun(daemon.port, prefix, i === 0 && state === 'on' ? WARMUP : 1);
          const w = await aloneWindow(daemon, prefix, DURATION);
          sum[state].requests += w.requests;
          sum[state].cpu += w.cpu;
        }
      }
      const round = {
        ratio: sum.on.requests / sum.off.requests,
        on: { rps: sum.on.requests / (PAIRS * DURATION), cpu: sum.on.cpu / sum.on.requests },
        off: { rps: sum.off.requests / (PAIRS * DURATION), cpu: sum.off.cpu / sum.off.requests },
      };
      rounds[load].push(round);
      if (process.env.VERBOSE) console.error(`  ${load} round ${r + 1}: on/off ${round.ratio.toFixed(3)}`);
    }
  }
  // The last window was counted only if it was `on`: page views move with the Proxyfile.
  await switchAnalytics(daemon, true);
  const before = (await admin(daemon, 'GET', '/analytics'))[0]?.page_views_60m;
  await aloneWindow(daemon, '/t/', 1);
  const after = (await admin(daemon, 'GET', '/analytics'))[0]?.page_views_60m;
  if (!nullRun && !(before > 0)) throw new Error('the analytics-on windows counted nothing');
  if (before !== after) throw new Error(`an analytics-off window counted requests (${before} -> ${after})`);
  console.log(
    `METHOD=alone${nullRun ? ' NULL=1 (both states analytics off: the noise floor)' : ''}: rounds=${ROUNDS} (a fresh daemon each, alone on core ${PROXY_CORE}) pairs=${PAIRS} windows of ${DURATION}s, connections=${CONNECTIONS}`,
  );
  console.log('load          on req/s  off req/s  on/off   loss   CPU µs/req on/off   per-round on/off');
  for (const [load] of LOADS) {
    const rs = rounds[load];
    console.log(
      [
        ...ratioCells(load, rs),
        `${median(rs.map((x) => x.on.cpu)).toFixed(1)} / ${median(rs.map((x) => x.off.cpu)).toFixed(1)}`.padStart(19),
        `  ${rs.map((x) => x.ratio.toFixed(3)).join(' ')}`,
      ].join(' '),
    );
  }
  console.log('goal: loss <= 5 % (loss = 1 - on/off, the median of per-round ratios)');
}

if (process.env.METHOD === 'alone') {
  await runAlone();
  process.exit(0);
}

// The crossover described at the top: per round, X on / Y off, then swapped by reload.
const results = Object.fromEntries(LOADS.map(([load]) => [load, []]));
let x;
let y;
for (let r = 0; r < ROUNDS; r++) {
  if (r > 0) await Promise.all([stop(x), stop(y)]);
  x = await proxyd('x', false, r);
  y = await proxyd('y', true, r);
  const phases = [];
  for (const xOn of [true, false]) {
    if (!xOn) await Promise.all([switchAnalytics(x, true), switchAnalytics(y, false)]);
    const [on, off] = xOn ? [x, y] : [y, x];
    if (!(await injects(on)) || (await injects(off))) throw new Error('injection is not what the Proxyfiles say');
    const phase = {};
    for (const [load, prefix] of LOADS) {
      await pairRound(on, off, prefix, WARMUP); // warm-up (JIT)
      phase[load] = await pairRound(on, off, prefix, DURATION);
    }
    phases.push(phase);
  }
  for (const [load] of LOADS) {
    const [[a1, b1], [a2, b2]] = [phases[0][load], phases[1][load]];
    const round = {
      ratio: Math.sqrt((a1.rps / b1.rps) * (a2.rps / b2.rps)),
      cpuRatio: Math.sqrt((a1.cpu / b1.cpu) * (a2.cpu / b2.cpu)),
      on: { rps: (a1.rps + a2.rps) / 2, cpu: (a1.cpu + a2.cpu) / 2, p99: Math.max(a1.p99, a2.p99) },
      off: { rps: (b1.rps + b2.rps) / 2, cpu: (b1.cpu + b2.cpu) / 2, p99: Math.max(b1.p99, b2.p99) },
    };
    results[load].push(round);
    if (process.env.VERBOSE) {
      console.error(
        `  ${load} round ${r + 1}: on/off ${(a1.rps / b1.rps).toFixed(3)} then ${(a2.rps / b2.rps).toFixed(3)} -> ${round.ratio.toFixed(3)}; CPU on/off ${round.cpuRatio.toFixed(3)}`,
      );
    }
  }
}

// What was counted: the load really varied clients and paths, and an `analytics off` phase counted nothing.
const [counted] = await admin(y, 'GET', '/analytics');
const before = (await admin(x, 'GET', '/analytics'))[0]?.page_views_60m;
await pairRound(y, x, '/t/', 1); // x is off now
const after = (await admin(x, 'GET', '/analytics'))[0]?.page_views_60m;
if (!counted || before !== after) throw new Error(`counting is not what the Proxyfiles say (${before} -> ${after})`);

console.log(
  `rounds=${ROUNDS} (a fresh pair of daemons each) warm-up=${WARMUP}s duration=${DURATION}s connections=${CONNECTIONS} per daemon, both loaded at once, proxy core=${PROXY_CORE}`,
);
console.log('load          on req/s  off req/s  on/off   loss   p99 on/off ms   CPU µs/req on/off   extra CPU');
for (const [load] of LOADS) {
  const rounds = results[load];
  const extra = (median(rounds.map((x) => x.cpuRatio)) - 1) * 100;
  console.log(
    [
      ...ratioCells(load, rounds),
      `${median(rounds.map((x) => x.on.p99)).toFixed(1)} / ${median(rounds.map((x) => x.off.p99)).toFixed(1)}`.padStart(
        15,
      ),
      `${median(rounds.map((x) => x.on.cpu)).toFixed(1)} / ${median(rounds.map((x) => x.off.cpu)).toFixed(1)}`.padStart(
        19,
      ),
      `${extra >= 0 ? '+' : ''}${extra.toFixed(1)} %`.padStart(11),
    ].join(' '),
  );
}
console.log('goal: loss <= 5 % (loss = 1 - on/off, the median of per-round throughput ratios)');
console.log(
  `counted: unique_visitors=${counted.unique_visitors} top_pages=${counted.top_pages.length} countries=${counted.countries.length}; an analytics-off phase: ${before} -> ${after} page views`,
);
console.log('hooks (in-process CPU µs):', JSON.stringify(hooksCost));
console.log('memory:', JSON.stringify(memory));
// The children (nginx, both daemons) keep the event loop alive: exit, which stops them.
process.exit(0);
