// bench/hotpath: candidate HTTP/1.1 data planes for proxyd (candidates/),
// each a minimal keep-alive reverse proxy, against nginx, Caddy and proxyd
// itself, in front of the same nginx upstream, in one run.
//
//   node bench/hotpath/run.mjs           (or: pnpm bench hotpath)
//   ROUNDS=3 DURATION=5 ONLY="caddy,floor,raw" SCENARIOS="small,large" node bench/hotpath/run.mjs
//   VARIANTS="raw:--max-semi-space-size=1,raw:--single-threaded-gc,raw+tuned" node bench/hotpath/run.mjs
//   NODE_ARGS_raw="--cpu-prof --cpu-prof-dir=/tmp/prof" ONLY=raw node bench/hotpath/run.mjs
//
// Scenarios, targets in alternation, ROUNDS times, median of the rounds:
// - small / large: `wrk -t1 -c50` plain HTTP, a 30-byte / 100 KB body
// - tls: `wrk -t1 -c50` HTTPS keep-alive, 30 B, ECDSA P-256 certificate
// - hs-ec / hs-rsa: a new TLS connection per request, full handshakes only
//   (bench/tls/tls-load.c, 32 in flight), P-256 / RSA-2048 certificate
// The proxy runs on PROXY_CORE (1), wrk and the upstream on LOAD_CORE (0).
// Every Node target and Caddy and nginx serve the same two certificates.
// Memory: PSS (smaps_rollup, summed over the process and its children)
// idle, before any load, and after the last round; peak RSS (VmHWM).
//
// Needs: wrk, nginx, caddy, taskset, openssl, cc + libgnutls28-dev, the
// built daemon (pnpm build) for the proxyd reference, and this folder's
// own dependencies (installed here with `npm ci` when missing).
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchSession, cpuSeconds, median, peakRssMb, toMs } from '../lib/session.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const PROXYD = path.join(root, 'apps/proxyd/dist/main.js');
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const DURATION = Number(process.env.DURATION ?? 5);
const PROXY_CORE = process.env.PROXY_CORE ?? '1';
const LOAD_CORE = process.env.LOAD_CORE ?? '0';
const HOST = 'bench.localhost';
const ONLY = process.env.ONLY?.split(',');
const SCENARIOS = process.env.SCENARIOS?.split(',') ?? ['small', 'large', 'tls', 'hs-ec', 'hs-rsa'];
const CANDIDATES = ['floor', 'undici', 'raw', 'raw-undici', 'pipe'];

for (const bin of ['wrk', 'nginx', 'caddy', 'taskset', 'openssl', 'cc']) {
  try {
    execFileSync('sh', ['-c', `command -v ${bin}`], { stdio: 'ignore' });
  } catch {
    console.error(
      `bench/hotpath needs ${bin} (apt-get install wrk nginx caddy util-linux openssl gcc libgnutls28-dev)`,
    );
    process.exit(2);
  }
}
if (!existsSync(path.join(here, 'node_modules/undici'))) {
  execFileSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: here, stdio: 'inherit' });
}

const session = benchSession('hotpath');
const { dir, children, freePort, start } = session;
chmodSync(dir, 0o755); // nginx workers may run as nobody

// --- certificates: one P-256 and one RSA-2048 self-signed leaf for HOST ---------
const ossl = (...args) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
for (const [kind, keyArgs] of [
  ['ec', ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256']],
  ['rsa', ['-newkey', 'rsa:2048']],
]) {
  ossl(
    'req',
    '-x509',
    ...keyArgs,
    '-nodes',
    '-keyout',
    `${kind}.key`,
    '-out',
    `${kind}.pem`,
    '-days',
    '2',
    '-subj',
    `/CN=${HOST}`,
    '-addext',
    `subjectAltName=DNS:${HOST}`,
  );
}

const tlsLoad = path.join(dir, 'tls-load');
execFileSync('cc', ['-O2', '-o', tlsLoad, path.join(here, '../tls/tls-load.c'), '-lgnutls'], { stdio: 'pipe' });
const wrkScript = path.join(dir, 'loopback.lua');
writeFileSync(wrkScript, 'wrk.resolve = function(host, service) wrk.addrs = wrk.lookup("127.0.0.1", service) end\n');

// --- probes and readings -----------------------------------------------------------
function plainGet(port) {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1', () => {
      s.write(`GET /small HTTP/1.1\r\nHost: ${HOST}\r\nConnection: close\r\n\r\n`);
    });
    let data = '';
    s.on('data', (d) => {
      data += d;
    });
    s.on('end', () => resolve(data.startsWith('HTTP/1.1 200')));
    s.on('error', () => resolve(false));
  });
}
async function poll(what, port, child) {
  const end = Date.now() + 30_000;
  while (Date.now() < end) {
    if (await plainGet(port)) return;
    if (child && child.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${what}: no 200 on port ${port} within 30 s\n${child?.output().slice(-2000) ?? ''}`);
}

/** The process and all its descendants. */
function tree(pid) {
  let kids = [];
  try {
    kids = execFileSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .filter(Boolean);
  } catch {}
  return [pid, ...kids.flatMap((k) => tree(Number(k)))];
}
/**
 * PSS and USS (Private_Clean + Private_Dirty) in MB, summed over a process
 * tree. PSS splits each shared page among its sharers, so it falls as more
 * processes of the same binary run; USS is what the process alone adds.
 */
function memMb(pid) {
  let pss = 0;
  let uss = 0;
  for (const p of tree(pid)) {
    try {
      const text = readFileSync(`/proc/${p}/smaps_rollup`, 'utf8');
      const kb = (field) => Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? 0);
      pss += kb('Pss');
      uss += kb('Private_Clean') + kb('Private_Dirty');
    } catch {}
  }
  return { pss: pss / 1024, uss: uss / 1024 };
}
const cpuTree = (pid) => tree(pid).reduce((s, p) => s + (cpuSeconds(p) || 0), 0);
const peakTree = (pid) => tree(pid).reduce((s, p) => s + (peakRssMb(p) || 0), 0);

function runClient(cmd, args, seconds) {
  return new Promise((resolve, reject) => {
    const child = spawn('taskset', ['-c', LOAD_CORE, cmd, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    child.stderr.on('data', (d) => {
      err += d;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), (seconds + 30) * 1000);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      children.splice(children.indexOf(child), 1);
      if (session.stopping) return;
      if (code !== 0) reject(new Error(`${cmd} failed (${code ?? signal}): ${err}`));
      else resolve(out);
    });
  });
}
async function wrk(url, seconds, extra = []) {
  const out = await runClient('wrk', ['-t1', '-c50', `-d${seconds}s`, '--latency', ...extra, url], seconds);
  const errors = /Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1];
  const socketErrors = /Socket errors: (.*)/.exec(out)?.[1];
  if (errors || socketErrors)
    console.error(`  ! ${url}: ${errors ?? 0} non-2xx; socket errors: ${socketErrors ?? '-'}`);
  return {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? Number.NaN),
    p99: toMs(/\n\s+99%\s+(\S+)/.exec(out)?.[1] ?? ''),
  };
}
async function handshakes(port, seconds) {
  const r = JSON.parse(
    await runClient(tlsLoad, ['127.0.0.1', String(port), HOST, '/small', '32', String(seconds)], seconds),
  );
  if (r.resumed > 0) throw new Error(`tls-load resumed ${r.resumed} sessions`);
  if (r.errors > 0 || r.non200 > 0) console.error(`  ! port ${port}: ${r.errors} failed, ${r.non200} non-200`);
  return { rps: r.requests / r.seconds, p99: r.p99_ms };
}
const SCENARIO = {
  small: (t, s) => wrk(`http://127.0.0.1:${t.port}/small`, s, ['-H', `Host: ${HOST}`]),
  large: (t, s) => wrk(`http://127.0.0.1:${t.port}/large`, s, ['-H', `Host: ${HOST}`]),
  tls: (t, s) => wrk(`https://${HOST}:${t.ec}/small`, s, ['-s', wrkScript]),
  'hs-ec': (t, s) => handshakes(t.ec, s),
  'hs-rsa': (t, s) => handshakes(t.rsa, s),
};

// --- upstream: one nginx worker serving a 30-byte and a 100 KB file ---------------
writeFileSync(path.join(dir, 'small'), `${'x'.repeat(29)}\n`);
writeFileSync(path.join(dir, 'large'), 'y'.repeat(100 * 1024));
const upPort = await freePort();
const nginxConf = (name, servers, extra = '') => {
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
  ${extra}
  ${servers}
}
`,
  );
  return conf;
};
const upConf = nginxConf(
  'upstream',
  `server { listen 127.0.0.1:${upPort}; root ${dir}; location / { default_type text/plain; } }`,
);
start('upstream', 'taskset', ['-c', LOAD_CORE, 'nginx', '-c', upConf, '-p', dir]);
await poll('upstream', upPort);

// --- targets, each pinned to PROXY_CORE --------------------------------------------
const targets = [];
const wanted = (name) => !ONLY || ONLY.includes(name) || ONLY.includes(name.split(' ')[0]);
async function ports() {
  return { port: await freePort(), ec: await freePort(), rsa: await freePort() };
}

if (wanted('nginx')) {
  const p = await ports();
  const loc = `location / {
      proxy_pass http://up; proxy_http_version 1.1; proxy_set_header Connection "";
      proxy_set_header Host $host; proxy_set_header X-Forwarded-For $remote_addr;
      add_header X-Content-Type-Options nosniff always; add_header X-Frame-Options SAMEORIGIN always;
    }`;
  const tlsServer = (port, kind) =>
    `server { listen 127.0.0.1:${port} ssl; ssl_certificate ${dir}/${kind}.pem; ssl_certificate_key ${dir}/${kind}.key; ssl_protocols TLSv1.2 TLSv1.3; ${loc} }`;
  const conf = nginxConf(
    'nginx',
    `server { listen 127.0.0.1:${p.port}; ${loc} }\n${tlsServer(p.ec, 'ec')}\n${tlsServer(p.rsa, 'rsa')}`,
    `upstream up { server 127.0.0.1:${upPort}; keepalive 64; }`,
  );
  const child = start('nginx', 'taskset', ['-c', PROXY_CORE, 'nginx', '-c', conf, '-p', dir]);
  targets.push({ name: 'nginx', child, ...p });
}
if (wanted('caddy')) {
  const p = await ports();
  const site = (addr, tls) =>
    `${addr} {\n${tls}\treverse_proxy 127.0.0.1:${upPort}\n\theader {\n\t\tX-Content-Type-Options nosniff\n\t\tX-Frame-Options SAMEORIGIN\n\t}\n}\n`;
  writeFileSync(
    path.join(dir, 'Caddyfile'),
    `{\n\tadmin off\n\tskip_install_trust\n\tauto_https off\n\tstorage file_system ${dir}/caddy-data\n}\n\n` +
      site(`http://:${p.port}`, '') +
      site(`https://${HOST}:${p.ec}`, `\ttls ${dir}/ec.pem ${dir}/ec.key\n`) +
      site(`https://${HOST}:${p.rsa}`, `\ttls ${dir}/rsa.pem ${dir}/rsa.key\n`),
  );
  const child = start(
    'caddy',
    'taskset',
    ['-c', PROXY_CORE, 'caddy', 'run', '--config', path.join(dir, 'Caddyfile'), '--adapter', 'caddyfile'],
    { GOMAXPROCS: '1', HOME: dir, XDG_DATA_HOME: dir, XDG_CONFIG_HOME: dir },
  );
  targets.push({ name: 'caddy', child, ...p });
}
if (wanted('proxyd') && existsSync(PROXYD) && (SCENARIOS.includes('small') || SCENARIOS.includes('large'))) {
  // The built daemon, one worker, plain HTTP only (its TLS uses its own CA; bench/tls measures it).
  const port = await freePort();
  const adminPort = await freePort();
  writeFileSync(
    path.join(dir, 'Proxyfile'),
    `{\n\thttp_port ${port}\n\tadmin 127.0.0.1:${adminPort}\n}\n\nhttp://${HOST} {\n\treverse_proxy 127.0.0.1:${upPort}\n}\n`,
  );
  const args = [
    'run',
    '--config',
    path.join(dir, 'Proxyfile'),
    '--state-dir',
    path.join(dir, 'proxyd-state'),
    '--workers',
    '1',
  ];
  const child = start('proxyd', 'taskset', ['-c', PROXY_CORE, process.execPath, PROXYD, ...args], {
    PROXY_LOG: 'warn',
    PROXY_ADMIN_TOKEN: 'bench',
  });
  targets.push({ name: 'proxyd', child, port, plainOnly: true });
}
// Candidates, and VARIANTS: "name[+tuned][:--flag --flag2],…" runs a candidate
// again with Node flags, or (+tuned) with the TLS options of lib/listen.mjs's TLS_TUNED.
const variants = (process.env.VARIANTS ?? '').split(',').filter(Boolean);
for (const spec of [...CANDIDATES, ...variants]) {
  const [base, flags = ''] = spec.split(':');
  const [file, tuned] = base.split('+');
  const name = [file, tuned && '+tuned', flags].filter(Boolean).join(' ');
  if (!wanted(name)) continue;
  const p = await ports();
  const nodeArgs = [
    ...flags.split(' '),
    ...(process.env[`NODE_ARGS_${file.replace('-', '_')}`] ?? '').split(' '),
  ].filter(Boolean);
  const child = start(
    name,
    'taskset',
    ['-c', PROXY_CORE, process.execPath, ...nodeArgs, path.join(here, 'candidates', `${file}.mjs`)],
    {
      UPSTREAM_PORT: String(upPort),
      PORT: String(p.port),
      TLS_EC_PORT: String(p.ec),
      TLS_RSA_PORT: String(p.rsa),
      CERT_DIR: dir,
      TLS_TUNED: tuned === 'tuned' ? '1' : '',
    },
  );
  targets.push({ name, child, ...p, plainOnly: file === 'pipe' });
}
for (const t of targets) {
  await poll(t.name, t.port, t.child);
  t.pid = t.child.pid;
}
await new Promise((r) => setTimeout(r, 2000));
for (const t of targets) t.idle = memMb(t.pid);

// --- measure, in alternation ---------------------------------------------------------
const results = new Map();
console.log(
  `${DURATION} s per measure, proxies on core ${PROXY_CORE}, load + upstream on core ${LOAD_CORE}, ${ROUNDS} rounds`,
);
for (let round = 1; round <= ROUNDS; round++) {
  for (const sc of SCENARIOS) {
    for (const t of targets) {
      if (t.plainOnly && !['small', 'large'].includes(sc)) continue;
      await SCENARIO[sc](t, 1); // warm-up: JIT, pools
      const before = cpuTree(t.pid);
      const r = await SCENARIO[sc](t, DURATION);
      r.cpuUs = ((cpuTree(t.pid) - before) * 1e6) / (r.rps * DURATION);
      const list = results.get(`${sc}|${t.name}`) ?? [];
      list.push(r);
      results.set(`${sc}|${t.name}`, list);
      console.log(
        `  round ${round} ${sc.padEnd(6)} ${t.name.padEnd(12)} ${r.rps.toFixed(0).padStart(6)}/s  p99 ${r.p99.toFixed(2)} ms  cpu ${r.cpuUs.toFixed(1)} µs/req`,
      );
    }
  }
}
for (const t of targets) {
  t.after = memMb(t.pid);
  t.peak = peakTree(t.pid);
}

// --- tables (markdown) -----------------------------------------------------------------
const get = (sc, name) => {
  const list = results.get(`${sc}|${name}`);
  return list ? { rps: median(list.map((r) => r.rps)), cpuUs: median(list.map((r) => r.cpuUs)) } : null;
};
const fmt = (n) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '–');
const ratio = (a, b) => (a && b ? (a / b).toFixed(2) : '–');
const table = (title, cell) => {
  console.log(`\n${title}\n`);
  console.log(`| target | ${SCENARIOS.join(' | ')} |`);
  console.log(`| --- | ${SCENARIOS.map(() => '---').join(' | ')} |`);
  for (const t of targets) {
    const cells = SCENARIOS.map((sc) => {
      const s = get(sc, t.name);
      return s ? cell(s, get(sc, 'caddy'), get(sc, 'floor')) : '–';
    });
    console.log(`| ${t.name} | ${cells.join(' | ')} |`);
  }
};
table(
  `req/s, median of ${ROUNDS} rounds; ×Caddy / ×floor`,
  (s, c, f) => `${fmt(s.rps)} ${ratio(s.rps, c?.rps)} / ${ratio(s.rps, f?.rps)}`,
);
// Caddy's (the floor's) CPU per request over the target's: how much more one core serves. Robust to other load.
table(
  `CPU µs per request (per connection for hs-*), median; capacity ×Caddy / ×floor = their µs over this one's`,
  (s, c, f) => `${s.cpuUs.toFixed(0)} ${ratio(c?.cpuUs, s.cpuUs)} / ${ratio(f?.cpuUs, s.cpuUs)}`,
);
console.log('\n| target | PSS idle MB | PSS after load MB | USS idle MB | USS after load MB | peak RSS MB |');
console.log('| --- | --- | --- | --- | --- | --- |');
for (const t of targets)
  console.log(
    `| ${t.name} | ${t.idle.pss.toFixed(1)} | ${t.after.pss.toFixed(1)} | ${t.idle.uss.toFixed(1)} | ${t.after.uss.toFixed(1)} | ${t.peak.toFixed(1)} |`,
  );
await session.shutdown(0);
