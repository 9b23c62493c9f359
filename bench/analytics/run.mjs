// bench/analytics: the cost of analytics on the proxy's hot path and the
// memory of the collectors, in one run.
//
//   node bench/analytics/run.mjs          (or: pnpm bench analytics)
//   ROUNDS=3 DURATION=5 node bench/analytics/run.mjs
//
// Throughput: two built proxyd processes whose Proxyfiles differ only in
// `analytics off` (which stops counting, injection and the reserved paths, so
// "off" is a real baseline), both pinned to core 1 (`taskset`), in front of one
// nginx upstream (core 0, with wrk). Both trust 127.0.0.1 as a proxy, and a wrk
// Lua script (load.lua) sends every request from another client IP
// (X-Forwarded-For, 100,000 distinct public IPv4s, so the unique-visitor sketch
// and the GeoIP lookups work as under real traffic) for one of 1,000 paths,
// Zipf-distributed (so the top-pages table sees a long tail). wrk loads them in
// alternation, ROUNDS times, for a 30-byte text/plain body under /t/
// (counting only) and a 2 KB HTML page under /p/ (counting + script
// injection); medians over rounds are reported, with the proxy's CPU µs per
// request. bench/analytics/hooks.mjs: the hooks' own CPU per request,
// in-process. Memory: bench/analytics/memory.mjs (V8 heap + array buffers,
// with --expose-gc).
// Needs: the built daemon (pnpm build), wrk, nginx, taskset.
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const PROXYD = path.join(root, 'apps/proxyd/dist/main.js');
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const DURATION = Number(process.env.DURATION ?? 3);
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

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

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
    if (!stopping) console.error(`${name} exited early (${code}):\n${out.slice(-2000)}`);
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

/**
 * `prefix`: `/t/` (small text) or `/p/` (HTML page); load.lua varies the rest
 * of the path and the client IP. Also the proxy's CPU µs per request, which
 * other load on the machine disturbs less than req/s.
 */
function wrk(target, prefix) {
  const { port, pid } = target;
  const cpu0 = cpuMicros(pid);
  const out = execFileSync(
    'taskset',
    [
      '-c',
      LOAD_CORE,
      'wrk',
      '-t1',
      `-c${CONNECTIONS}`,
      `-d${DURATION}s`,
      '--latency',
      '-s',
      LOAD_SCRIPT,
      '-H',
      `Host: ${HOST}`,
      `http://127.0.0.1:${port}/`,
      '--',
      prefix,
    ],
    { encoding: 'utf8' },
  );
  const errors = /Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1];
  if (errors) console.error(`  ! ${errors} non-2xx responses on port ${port}`);
  const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? Number.NaN);
  return {
    cpu: (cpuMicros(pid) - cpu0) / requests,
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? Number.NaN),
    p99: toMs(/\n\s+99%\s+(\S+)/.exec(out)?.[1] ?? ''),
  };
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
async function proxyd(name, analyticsOff) {
  const [httpPort, httpsPort, adminPort] = [await freePort(), await freePort(), await freePort()];
  const file = path.join(dir, `Proxyfile.${name}`);
  writeFileSync(
    file,
    `{
\thttp_port ${httpPort}
\thttps_port ${httpsPort}
\tadmin 127.0.0.1:${adminPort}
\tstate_dir ${dir}/state-${name}
\ttrusted_proxies 127.0.0.1/32
}

http://${HOST} {
\treverse_proxy 127.0.0.1:${upPort}
${analyticsOff ? '\tanalytics off\n' : ''}}
`,
  );
  const child = start(name, ['-c', PROXY_CORE, process.execPath, PROXYD, 'run', '--config', file], {
    PROXY_LOG: 'warn',
    PROXY_ADMIN_TOKEN: 'bench',
  });
  const page = await waitFor(httpPort, 'p/0');
  // taskset execs the command: the child's pid is the daemon's.
  return { name, port: httpPort, pid: child.pid, injected: page.includes('data-t='), adminPort };
}
const on = await proxyd('analytics-on', false);
const off = await proxyd('analytics-off', true);
if (!on.injected || off.injected) throw new Error('injection is not what the Proxyfiles say');

const LOADS = [
  ['small text', '/t/'],
  ['html page', '/p/'],
];
const results = {};
for (const [load, prefix] of LOADS) {
  for (const t of [on, off]) results[`${t.name} ${load}`] = [];
  for (const t of [on, off]) wrk(t, prefix); // warm-up (JIT)
  for (let r = 0; r < ROUNDS; r++) {
    const order = r % 2 === 0 ? [on, off] : [off, on];
    for (const t of order) results[`${t.name} ${load}`].push(wrk(t, prefix));
  }
}

// What the on daemon counted: the load really varied clients and paths; the off daemon counted nothing.
async function snapshots(adminPort) {
  const res = await fetch(`http://127.0.0.1:${adminPort}/analytics`, { headers: { authorization: 'Bearer bench' } });
  return res.json();
}
const [counted] = await snapshots(on.adminPort);
const offCounted = await snapshots(off.adminPort);
if (!counted || offCounted.length !== 0) throw new Error('expected counts on the analytics-on daemon only');

// The median over rounds: one round disturbed by other load on the machine does not move it.
const avg = (xs, k) => {
  const v = xs.map((x) => x[k]).sort((a, b) => a - b);
  const mid = v.length >> 1;
  return v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
};
console.log(`rounds=${ROUNDS} duration=${DURATION}s connections=${CONNECTIONS} proxy core=${PROXY_CORE}`);
console.log('target                        req/s     p99 ms  CPU µs/req');
for (const [k, xs] of Object.entries(results)) {
  const row = `${avg(xs, 'rps').toFixed(0).padStart(7)} ${avg(xs, 'p99').toFixed(2).padStart(10)}`;
  console.log(`${k.padEnd(28)} ${row} ${avg(xs, 'cpu').toFixed(1).padStart(11)}`);
}
for (const [load] of LOADS) {
  const a = avg(results[`analytics-on ${load}`], 'rps');
  const b = avg(results[`analytics-off ${load}`], 'rps');
  const loss = ((b - a) / b) * 100;
  const ca = avg(results[`analytics-on ${load}`], 'cpu');
  const cb = avg(results[`analytics-off ${load}`], 'cpu');
  const extra = ((ca - cb) / cb) * 100;
  console.log(
    `${load}: analytics on vs off: ${loss.toFixed(1)} % throughput loss, +${(ca - cb).toFixed(1)} µs CPU per request (+${extra.toFixed(1)} %) (goal <= 5 %)`,
  );
}
console.log(
  `counted by the on daemon: unique_visitors=${counted.unique_visitors} top_pages=${counted.top_pages.length} countries=${counted.countries.length}; off daemon domains: ${offCounted.length}`,
);
console.log('hooks (in-process CPU µs):', JSON.stringify(hooksCost));
console.log('memory:', JSON.stringify(memory));
// The children (nginx, both daemons) keep the event loop alive: exit, which stops them.
process.exit(0);
