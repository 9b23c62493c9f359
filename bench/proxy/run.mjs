// bench/proxy: proxyd against nginx, Caddy and a hand-written node:http proxy
// (the Node floor), all in front of the same upstream, in one run.
//
//   node bench/proxy/run.mjs            (or: pnpm bench proxy)
//   ROUNDS=3 DURATION=5 node bench/proxy/run.mjs
//
//   BASELINE=../other-checkout BASELINE_NODE=/usr/bin/node ONLY="proxyd,proxyd base" node bench/proxy/run.mjs
//   PROXYD_CHECKOUT=../a BASELINE=../a ONLY="proxyd,proxyd base" node bench/proxy/run.mjs   (null run: the noise band)
//   FAST_PATH_AB=1 ONLY="proxyd,proxyd node:http,Caddy,Node floor" node bench/proxy/run.mjs   (fast path on vs off)
//   FILES=post FAST_PATH_AB=1 ONLY="caddy,node floor,proxyd,proxyd node:http" node bench/proxy/run.mjs   (a 1 KB JSON POST)
//   SITE=encode FILES=small,page,large FAST_PATH_AB=1 ONLY="caddy,proxyd,proxyd node:http" node bench/proxy/run.mjs
//     (`encode gzip zstd` in Caddy's and proxyd's site, wrk sending `Accept-Encoding: gzip`; `page`: 10 KB of text)
//   SITE=headers FAST_PATH_AB=1 ONLY="caddy,proxyd,proxyd node:http" node bench/proxy/run.mjs
//     (`header_up X-Real-IP {remote_host}` and `header @static Cache-Control …`)
//   SITE=auth …  (`basicauth` with a bcrypt hash, wrk sending the credentials)
//
// Needs: the built daemon (pnpm build), wrk, nginx, caddy, taskset (Debian).
// Each proxy is pinned to core 1 (`taskset -c 1`, GOMAXPROCS=1, one nginx
// worker); wrk and the upstream (an nginx worker serving two static files)
// share core 0. Targets run in alternation, ROUNDS times, for a 30-byte and a
// 100 KB body (FILES=small,large, the default), and a POST of a 1 KB JSON
// body answered `ok` (FILES=post: wrk's Lua script; the upstream reads and
// drops the body); req/s, p50/p99 and CPU per request are medians over rounds, peak RSS is VmHWM.
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, longestWait, runQueueSeconds } from '../lib/session.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
// PROXYD_CHECKOUT runs another checkout's build as "proxyd" (with BASELINE: an A/B of two builds, or a null run of one).
const PROXYD = path.join(path.resolve(process.env.PROXYD_CHECKOUT ?? root), 'apps/proxyd/dist/main.js');
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const DURATION = Number(process.env.DURATION ?? 5);
const CONNECTIONS = Number(process.env.CONNECTIONS ?? 50);
const PROXY_CORE = process.env.PROXY_CORE ?? '1';
const LOAD_CORE = process.env.LOAD_CORE ?? '0';
const HOST = 'bench.local';
const ONLY = process.env.ONLY?.split(',');
const FILES = process.env.FILES?.split(',') ?? ['small', 'large'];
// SITE=encode: Caddy and proxyd compress (`encode gzip zstd`), and wrk asks for gzip.
const ENCODE = process.env.SITE === 'encode';
// SITE=headers: `header_up X-Real-IP {remote_host}` and a `header @static …` op behind a path matcher, in both.
const HEADERS = process.env.SITE === 'headers';
// SITE=auth: `basicauth` (Caddy 2.6's spelling, proxyd takes it too) with a bcrypt hash; wrk sends the credentials.
const AUTH = process.env.SITE === 'auth';
const AUTH_LINE = AUTH ? `Authorization: Basic ${Buffer.from('bench:bench').toString('base64')}` : '';
const SITE_LINES = ENCODE
  ? '\tencode gzip zstd\n'
  : HEADERS
    ? '\t@static path /small /page\n\theader @static Cache-Control "public, max-age=60"\n'
    : AUTH
      ? `\tbasicauth {\n\t\tbench ${execFileSync('caddy', ['hash-password', '--plaintext', 'bench'], { encoding: 'utf8' }).trim()}\n\t}\n`
      : '';
const PROXY_BLOCK = HEADERS ? ' {\n\t\theader_up X-Real-IP {remote_host}\n\t}' : '';

for (const bin of ['wrk', 'nginx', 'caddy', 'taskset']) {
  try {
    execFileSync('sh', ['-c', `command -v ${bin}`], { stdio: 'ignore' });
  } catch {
    console.error(`bench/proxy needs ${bin} (apt-get install wrk nginx caddy util-linux)`);
    process.exit(2);
  }
}
if (!existsSync(PROXYD)) {
  console.error('build first: pnpm build');
  process.exit(2);
}

const dir = mkdtempSync(path.join(tmpdir(), 'proxyd-bench-'));
// nginx workers may run as nobody: they must read the files served.
chmodSync(dir, 0o755);
const children = [];

function start(name, cmd, args, env = {}) {
  const child = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
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

async function waitFor(port, hostHeader = HOST) {
  const end = Date.now() + 15_000;
  while (Date.now() < end) {
    const ok = await new Promise((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => {
        s.write(
          `GET /small HTTP/1.1\r\nHost: ${hostHeader}\r\n${AUTH ? `${AUTH_LINE}\r\n` : ''}Connection: close\r\n\r\n`,
        );
      });
      let data = '';
      s.on('data', (d) => {
        data += d;
      });
      s.on('end', () => resolve(data.startsWith('HTTP/1.1 200')));
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`nothing answers 200 on port ${port}`);
}

/** The pid whose memory counts: nginx's single worker, else the process itself. */
function memoryPid(child, name) {
  if (name !== 'nginx') return child.pid;
  try {
    return Number(
      execFileSync('pgrep', ['-P', String(child.pid)])
        .toString()
        .trim()
        .split('\n')[0],
    );
  } catch {
    return child.pid;
  }
}

function peakRssMb(pid) {
  try {
    const line = readFileSync(`/proc/${pid}/status`, 'utf8')
      .split('\n')
      .find((l) => l.startsWith('VmHWM:'));
    return Number(line?.split(/\s+/)[1] ?? 0) / 1024;
  } catch {
    return Number.NaN;
  }
}

/** CPU seconds (user + system) a process has used so far. */
function cpuSeconds(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return Number.NaN;
  }
}

function toMs(v) {
  const m = /^([\d.]+)(us|ms|s)$/.exec(v);
  if (!m) return Number.NaN;
  const n = Number(m[1]);
  return m[2] === 'us' ? n / 1000 : m[2] === 's' ? n * 1000 : n;
}

function wrk(port, file, seconds) {
  const out = execFileSync(
    'taskset',
    [
      '-c',
      LOAD_CORE,
      'wrk',
      '-t1',
      `-c${CONNECTIONS}`,
      `-d${seconds}s`,
      '--latency',
      '-H',
      `Host: ${HOST}`,
      ...(ENCODE ? ['-H', 'Accept-Encoding: gzip'] : []),
      ...(AUTH ? ['-H', AUTH_LINE] : []),
      ...(file === 'post' ? ['-s', path.join(dir, 'post.lua')] : []),
      `http://127.0.0.1:${port}/${file}`,
    ],
    { encoding: 'utf8' },
  );
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? Number.NaN);
  const p50 = toMs(/\n\s+50%\s+(\S+)/.exec(out)?.[1] ?? '');
  const p99 = toMs(/\n\s+99%\s+(\S+)/.exec(out)?.[1] ?? '');
  const errors = /Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1];
  if (errors) console.error(`  ! ${errors} non-2xx responses on port ${port}`);
  return { rps, p50, p99 };
}

let stopping = false;
function stopAll() {
  stopping = true;
  for (const c of children) {
    try {
      c.kill('SIGTERM');
    } catch {}
  }
}
process.on('exit', () => {
  stopAll();
  rmSync(dir, { recursive: true, force: true });
});
process.on('SIGINT', () => process.exit(130));

// --- upstream: one nginx worker serving a 30-byte and a 100 KB file --------
const upPort = await freePort();
writeFileSync(path.join(dir, 'small'), `${'x'.repeat(29)}\n`);
writeFileSync(path.join(dir, 'large'), 'y'.repeat(100 * 1024));
// FILES=page: 10 KB of varied text (an HTML page or a JSON answer compresses about like it).
writeFileSync(
  path.join(dir, 'page'),
  Array.from({ length: 400 }, (_, i) => `<li id="item-${i}">item ${i * 7919} of ${(i * 104729) % 1000}</li>\n`)
    .join('')
    .slice(0, 10 * 1024),
);
// FILES=post: a 1 KB JSON body (an API call), POSTed by wrk's script.
const postBody = JSON.stringify({ user: 'ada', items: Array.from({ length: 40 }, (_, i) => ({ id: i, n: 'x' })) });
writeFileSync(
  path.join(dir, 'post.lua'),
  `wrk.method = "POST"\nwrk.body = '${postBody.padEnd(1024).slice(0, 1024)}'\nwrk.headers["Content-Type"] = "application/json"\n`,
);
const nginxConf = (name, port, body) => {
  const conf = path.join(dir, `${name}.conf`);
  writeFileSync(
    conf,
    `daemon off;
worker_processes 1;
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
start('upstream', 'taskset', [
  '-c',
  LOAD_CORE,
  'nginx',
  '-c',
  nginxConf(
    'upstream',
    upPort,
    `root ${dir}; location / { default_type text/plain; } location = /post { default_type text/plain; return 200 "ok\\n"; }`,
  ),
  '-p',
  dir,
]);
await waitFor(upPort);

// --- the proxies, each pinned to PROXY_CORE ---------------------------------
const targets = [];
async function addTarget(name, port, child) {
  await waitFor(port);
  targets.push({ name, port, child, pid: child ? memoryPid(child, name) : null });
}
targets.push({ name: 'direct', port: upPort, child: null, pid: null });

const nginxPort = await freePort();
const nginx = start('nginx', 'taskset', [
  '-c',
  PROXY_CORE,
  'nginx',
  '-c',
  nginxConf(
    'nginx',
    nginxPort,
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
\treverse_proxy 127.0.0.1:${upPort}${PROXY_BLOCK}
${SITE_LINES}\theader {
\t\tX-Content-Type-Options nosniff
\t\tX-Frame-Options SAMEORIGIN
\t}
}
`,
);
const caddy = start(
  'caddy',
  'taskset',
  ['-c', PROXY_CORE, 'caddy', 'run', '--config', path.join(dir, 'Caddyfile'), '--adapter', 'caddyfile'],
  { GOMAXPROCS: '1', HOME: dir, XDG_DATA_HOME: dir, XDG_CONFIG_HOME: dir },
);
await addTarget('caddy', caddyPort, caddy);

// The Node floor: the smallest correct keep-alive node:http proxy.
const floorPort = await freePort();
const floorFile = path.join(dir, 'floor.mjs');
writeFileSync(
  floorFile,
  `import http from 'node:http';
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
}).listen(${floorPort}, '127.0.0.1');
process.on('SIGTERM', () => process.exit(0));
`,
);
const floor = start('node floor', 'taskset', [
  '-c',
  PROXY_CORE,
  process.execPath,
  ...(process.env.FLOOR_NODE_ARGS ? process.env.FLOOR_NODE_ARGS.split(' ') : []),
  floorFile,
]);
await addTarget('node floor', floorPort, floor);

// proxyd, and optionally a second build of it (BASELINE=<checkout>, run by
// BASELINE_NODE, default this node) measured in the same alternation: an A/B
// of two commits or two Node versions in one run.
async function addProxyd(name, main, node, siteLines = SITE_LINES, env = {}) {
  const proxydPort = await freePort();
  const adminPort = await freePort();
  const confDir = mkdtempSync(path.join(dir, 'proxyd-'));
  writeFileSync(
    path.join(confDir, 'Proxyfile'),
    `{
\thttp_port ${proxydPort}
\tadmin 127.0.0.1:${adminPort}
}

http://${HOST} {
${siteLines}\treverse_proxy 127.0.0.1:${upPort}${PROXY_BLOCK}
}
`,
  );
  const child = start(
    name,
    'taskset',
    [
      '-c',
      PROXY_CORE,
      node,
      ...(process.env.PROXYD_NODE_ARGS ? process.env.PROXYD_NODE_ARGS.split(' ') : []),
      main,
      'run',
      '--config',
      path.join(confDir, 'Proxyfile'),
      '--state-dir',
      path.join(confDir, 'state'),
    ],
    { PROXY_LOG: 'warn', PROXY_ADMIN_TOKEN: 'bench', ...env },
  );
  await addTarget(name, proxydPort, child);
}
await addProxyd('proxyd', PROXYD, process.env.PROXYD_NODE ?? process.execPath);
// SITE_LOG=1: the same build with the site's `log` to a file (rolled at the defaults), in the same alternation.
if (process.env.SITE_LOG === '1') {
  const logFile = path.join(dir, 'site-log', 'access.log');
  await addProxyd(
    'proxyd log',
    PROXYD,
    process.env.PROXYD_NODE ?? process.execPath,
    `\tlog {\n\t\toutput file ${logFile}\n\t}\n`,
  );
}
// FAST_PATH_AB=1: the same build with its HTTP/1.1 fast path off (every request on node:http), alternating.
if (process.env.FAST_PATH_AB === '1') {
  await addProxyd('proxyd node:http', PROXYD, process.env.PROXYD_NODE ?? process.execPath, undefined, {
    PROXY_FAST_PATH: '0',
  });
}
if (process.env.BASELINE) {
  const main = path.resolve(process.env.BASELINE, 'apps/proxyd/dist/main.js');
  if (!existsSync(main)) {
    console.error(`BASELINE: no built daemon at ${main}`);
    process.exit(2);
  }
  await addProxyd('proxyd base', main, process.env.BASELINE_NODE ?? process.execPath);
}

// --- measure, in alternation ------------------------------------------------
// A round whose proxy used under half its core while a thread of it waited over half the round for a CPU
// measured the machine's load, not the proxy: it is marked, and the medians leave it out (unless every round was).
const pct = (x) => (Number.isNaN(x) ? '-' : `${(x * 100).toFixed(0)} %`);
const chosen = ONLY ? targets.filter((t) => ONLY.includes(t.name)) : targets;
const results = new Map();
console.log(
  `wrk -t1 -c${CONNECTIONS} -d${DURATION}s, proxies on core ${PROXY_CORE}, wrk + upstream on core ${LOAD_CORE}, ${ROUNDS} rounds`,
);
for (let round = 1; round <= ROUNDS; round++) {
  for (const file of FILES) {
    for (const t of chosen) {
      wrk(t.port, file, 1); // warm-up (JIT, keep-alive pools)
      const cpuBefore = t.pid ? cpuSeconds(t.pid) : Number.NaN;
      const waitBefore = runQueueSeconds(t.pid);
      const r = wrk(t.port, file, DURATION);
      // CPU time per request: robust to other load on the machine, unlike req/s.
      const cpu = cpuSeconds(t.pid) - cpuBefore;
      r.cpuUs = (cpu * 1e6) / (r.rps * DURATION);
      // Share of its core the proxy used, and of the round its most delayed thread was runnable but not running.
      r.share = cpu / DURATION;
      r.waited = t.pid ? longestWait(waitBefore, runQueueSeconds(t.pid)) / DURATION : Number.NaN;
      r.starved = r.share < 0.5 && r.waited > 0.5;
      const key = `${file}|${t.name}`;
      const list = results.get(key) ?? [];
      list.push(r);
      results.set(key, list);
      console.log(
        `  round ${round} ${file.padEnd(5)} ${t.name.padEnd(11)} ${r.rps.toFixed(0).padStart(7)} req/s  p50 ${r.p50.toFixed(2)} ms  p99 ${r.p99.toFixed(2)} ms  cpu ${Number.isNaN(r.cpuUs) ? '-' : r.cpuUs.toFixed(1)} µs/req  core ${pct(r.share)} waited ${pct(r.waited)}${r.starved ? ' (starved: other processes had its core; left out of the medians)' : ''}`,
      );
    }
  }
}

// Medians over the rounds: one disturbed round (other load on a shared machine) does not move them.
const mean = (xs) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
for (const [file, label] of [
  ['small', '30-byte body'],
  ['page', '10 KB text'],
  ['large', '100 KB body'],
  ['post', '1 KB POST'],
]) {
  console.log(`\n${label}`);
  console.log('target       req/s     p50 ms   p99 ms   peak RSS MB   ×Caddy   ×floor   CPU µs/req');
  const summary = (name) => {
    const all = results.get(`${file}|${name}`);
    const fair = all?.filter((r) => !r.starved);
    const list = fair?.length ? fair : all;
    return list
      ? {
          rps: mean(list.map((r) => r.rps)),
          p50: mean(list.map((r) => r.p50)),
          p99: mean(list.map((r) => r.p99)),
          cpuUs: mean(list.map((r) => r.cpuUs)),
        }
      : null;
  };
  const caddyS = summary('caddy');
  const floorS = summary('node floor');
  for (const t of chosen) {
    const s = summary(t.name);
    if (!s) continue;
    const rss = t.pid ? peakRssMb(t.pid).toFixed(1) : '-';
    const vsCaddy = caddyS ? (s.rps / caddyS.rps).toFixed(2) : '-';
    const vsFloor = floorS ? (s.rps / floorS.rps).toFixed(2) : '-';
    console.log(
      `${t.name.padEnd(11)} ${s.rps.toFixed(0).padStart(7)}   ${s.p50.toFixed(2).padStart(7)}  ${s.p99.toFixed(2).padStart(7)}   ${rss.padStart(11)}   ${vsCaddy.padStart(6)}   ${vsFloor.padStart(6)}   ${Number.isNaN(s.cpuUs) ? '-' : s.cpuUs.toFixed(1)}`,
    );
  }
}
console.log('\ntargets: proxyd ≥ 1.00× Caddy, ≥ 0.95× the Node floor, p99 ≤ Caddy');
for (const file of FILES) {
  const get = (name) => {
    const all = results.get(`${file}|${name}`);
    const fair = all?.filter((r) => !r.starved);
    return fair?.length ? fair : all;
  };
  const p = get('proxyd');
  const c = get('caddy');
  const f = get('node floor');
  if (!p) continue;
  const parts = [];
  if (c) {
    parts.push(`${(mean(p.map((r) => r.rps)) / mean(c.map((r) => r.rps))).toFixed(2)}× Caddy`);
    parts.push(`p99 ${mean(p.map((r) => r.p99)).toFixed(2)} vs ${mean(c.map((r) => r.p99)).toFixed(2)} ms`);
  }
  if (f) parts.push(`${(mean(p.map((r) => r.rps)) / mean(f.map((r) => r.rps))).toFixed(2)}× floor`);
  const pAll = results.get(`${file}|proxyd`) ?? [];
  const b = results.get(`${file}|proxyd base`);
  if (b) {
    // Pairwise per round: the two builds ran back to back, so machine drift cancels (all rounds: pairs stay whole).
    const ratios = pAll.map((r, i) => r.rps / (b[i]?.rps ?? Number.NaN));
    const cpu = pAll.map((r, i) => r.cpuUs / (b[i]?.cpuUs ?? Number.NaN));
    parts.push(
      `${mean(ratios).toFixed(3)}× base (rounds ${ratios.map((x) => x.toFixed(3)).join(' ')}), CPU/req ${mean(cpu).toFixed(3)}× base`,
    );
  }
  console.log(
    `  ${{ small: '30 B ', page: '10 KB', large: '100 KB', post: 'POST 1 KB' }[file] ?? file}: proxyd ${parts.join(', ')}`,
  );
}
stopAll();
process.exit(0);
