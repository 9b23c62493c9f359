// bench/analytics: the cost of analytics on the proxy's hot path and the
// memory of the collectors, in one run.
//
//   node bench/analytics/run.mjs          (or: pnpm bench analytics)
//   ROUNDS=3 DURATION=5 node bench/analytics/run.mjs
//
// Throughput: two built proxyd processes whose Proxyfiles differ only in
// `analytics off`, both pinned to core 1 (`taskset`), in front of one nginx
// upstream (core 0, with wrk). wrk loads them in alternation, ROUNDS times,
// for a 30-byte text/plain file (counting only) and a 2 KB HTML page
// (counting + script injection); medians over rounds are reported. Memory: bench/analytics/memory.mjs
// (V8 heap + array buffers, with --expose-gc).
// Needs: the built daemon (pnpm build), wrk, nginx, taskset.
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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

function wrk(port, file) {
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
      '-H',
      `Host: ${HOST}`,
      `http://127.0.0.1:${port}/${file}`,
    ],
    { encoding: 'utf8' },
  );
  const errors = /Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1];
  if (errors) console.error(`  ! ${errors} non-2xx responses on port ${port}`);
  return {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? Number.NaN),
    p99: toMs(/\n\s+99%\s+(\S+)/.exec(out)?.[1] ?? ''),
  };
}

// --- upstream: nginx serving a 30-byte text file and a 2 KB HTML page ----------
writeFileSync(path.join(dir, 'small.txt'), 'x'.repeat(29) + '\n');
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
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  server { listen 127.0.0.1:${upPort}; root ${dir}; }
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
}

http://${HOST} {
\treverse_proxy 127.0.0.1:${upPort}
${analyticsOff ? '\tanalytics off\n' : ''}}
`,
  );
  start(name, ['-c', PROXY_CORE, process.execPath, PROXYD, 'run', '--config', file], {
    PROXY_LOG: 'warn',
    PROXY_ADMIN_TOKEN: 'bench',
  });
  const page = await waitFor(httpPort, 'page.html');
  return { name, port: httpPort, injected: page.includes('data-t=') };
}
const on = await proxyd('analytics-on', false);
const off = await proxyd('analytics-off', true);
if (!on.injected || off.injected) throw new Error('injection is not what the Proxyfiles say');

const results = {};
for (const file of ['small.txt', 'page.html']) {
  for (const t of [on, off]) results[`${t.name} ${file}`] = [];
  for (const t of [on, off]) wrk(t.port, file); // warm-up (JIT)
  for (let r = 0; r < ROUNDS; r++) {
    const order = r % 2 === 0 ? [on, off] : [off, on];
    for (const t of order) results[`${t.name} ${file}`].push(wrk(t.port, file));
  }
}

// The median over rounds: one round disturbed by other load on the machine does not move it.
const avg = (xs, k) => {
  const v = xs.map((x) => x[k]).sort((a, b) => a - b);
  const mid = v.length >> 1;
  return v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
};
console.log(`rounds=${ROUNDS} duration=${DURATION}s connections=${CONNECTIONS} proxy core=${PROXY_CORE}`);
console.log('target                      req/s     p99 ms');
for (const [k, xs] of Object.entries(results)) {
  console.log(`${k.padEnd(26)} ${avg(xs, 'rps').toFixed(0).padStart(7)} ${avg(xs, 'p99').toFixed(2).padStart(10)}`);
}
for (const file of ['small.txt', 'page.html']) {
  const a = avg(results[`analytics-on ${file}`], 'rps');
  const b = avg(results[`analytics-off ${file}`], 'rps');
  const loss = ((b - a) / b) * 100;
  console.log(`${file}: analytics on vs off: ${loss.toFixed(1)} % loss (goal <= 5 %)`);
}
console.log('memory:', JSON.stringify(memory));
