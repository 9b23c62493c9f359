// bench/tls: HTTPS cost of proxyd against Caddy (and nginx as the floor),
// each with an ECDSA P-256 certificate, in front of the same upstream, in one run.
//
//   node bench/tls/run.mjs              (or: pnpm bench tls)
//   ROUNDS=3 DURATION=5 node bench/tls/run.mjs
//   ONLY="caddy,proxyd" MEASURES=handshake node bench/tls/run.mjs
//   PROXYD_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" ONLY=proxyd node bench/tls/run.mjs
//   BASELINE=../other-checkout ONLY="proxyd,proxyd base" node bench/tls/run.mjs   (A/B of two builds)
//   FAST_PATH_AB=1 MEASURES=keepalive ONLY="proxyd,proxyd node:http,caddy,node floor" node bench/tls/run.mjs
//
// Two measures, targets in alternation, ROUNDS times:
// - handshake: every request on a new TLS connection, a full handshake each
//   (no session resumption), by tls-load.c (GnuTLS, compiled into the temp
//   dir) with HANDSHAKE_CONNECTIONS (32) connections in flight. wrk is not
//   used here: with `Connection: close` it resumes about half its sessions.
// - keepalive: `wrk -t1 -c50` over HTTPS keep-alive connections.
// Both fetch a 30-byte body. The proxy runs on core 1 (GOMAXPROCS=1, one
// nginx worker), the client and the upstream (one nginx worker) on core 0.
// Reports the medians over rounds of req/s, p50/p99, the proxy's CPU µs per
// request (utime+stime from /proc), the share of a core the proxy and the
// client used, and peak RSS.
//
// Needs: the built daemon (pnpm build), wrk, nginx, caddy, taskset, openssl,
// cc and the GnuTLS headers (apt-get install wrk nginx caddy util-linux
// openssl gcc libgnutls28-dev).
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import tls from 'node:tls';
import { fileURLToPath } from 'node:url';
import { benchSession, cpuSeconds, median, peakRssMb, toMs } from '../lib/session.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const PROXYD = path.join(path.resolve(process.env.PROXYD_CHECKOUT ?? root), 'apps/proxyd/dist/main.js');
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const DURATION = Number(process.env.DURATION ?? 5);
const CONNECTIONS = Number(process.env.CONNECTIONS ?? 50);
const HANDSHAKE_CONNECTIONS = Number(process.env.HANDSHAKE_CONNECTIONS ?? 32);
const PROXY_CORE = process.env.PROXY_CORE ?? '1';
const LOAD_CORE = process.env.LOAD_CORE ?? '0';
// A *.localhost name: proxyd and Caddy both certify it from their local CA.
const HOST = 'bench.localhost';
const ONLY = process.env.ONLY?.split(',');
const MEASURES = process.env.MEASURES?.split(',') ?? ['handshake', 'keepalive'];

for (const [bin, pkg] of [
  ['wrk', 'wrk'],
  ['nginx', 'nginx'],
  ['caddy', 'caddy'],
  ['taskset', 'util-linux'],
  ['openssl', 'openssl'],
  ['cc', 'gcc'],
]) {
  try {
    execFileSync('sh', ['-c', `command -v ${bin}`], { stdio: 'ignore' });
  } catch {
    console.error(`bench/tls needs ${bin} (apt-get install ${pkg})`);
    process.exit(2);
  }
}
if (!existsSync(PROXYD)) {
  console.error('build first: pnpm build');
  process.exit(2);
}

const session = benchSession('tls');
const { dir, children, shutdown, freePort, start } = session;
// nginx workers may run as nobody: they must read the files served.
chmodSync(dir, 0o755);

// --- the client: tls-load.c, compiled here ----------------------------------
const tlsLoad = path.join(dir, 'tls-load');
try {
  execFileSync('cc', ['-O2', '-o', tlsLoad, path.join(here, 'tls-load.c'), '-lgnutls'], { stdio: 'pipe' });
} catch (err) {
  console.error(`cannot compile bench/tls/tls-load.c (apt-get install gcc libgnutls28-dev):\n${err.stderr ?? err}`);
  await shutdown(2);
}

/** One GET over a plain connection; resolves with whether it answered 200. */
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

/**
 * One GET over TLS with SNI HOST; resolves with the handshake's facts
 * (protocol, cipher, certificate key and issuer) when it answered 200, else null.
 */
function tlsGet(port) {
  return new Promise((resolve) => {
    const s = tls.connect({
      host: '127.0.0.1',
      port,
      servername: HOST,
      rejectUnauthorized: false,
      ALPNProtocols: ['http/1.1'],
    });
    let data = '';
    let facts = null;
    s.on('secureConnect', () => {
      const cert = s.getPeerCertificate(true);
      const key = cert.asn1Curve ? `ECDSA ${cert.nistCurve ?? cert.asn1Curve}` : `RSA-${cert.bits}`;
      facts = {
        protocol: s.getProtocol(),
        cipher: s.getCipher().name,
        key,
        issuer: cert.issuer?.CN,
        issuerKey: cert.issuerCertificate?.asn1Curve
          ? `ECDSA ${cert.issuerCertificate.nistCurve ?? cert.issuerCertificate.asn1Curve}`
          : cert.issuerCertificate?.bits
            ? `RSA-${cert.issuerCertificate.bits}`
            : '?',
      };
      s.write(`GET /small HTTP/1.1\r\nHost: ${HOST}\r\nConnection: close\r\n\r\n`);
    });
    s.on('data', (d) => {
      data += d;
    });
    s.on('end', () => resolve(data.startsWith('HTTP/1.1 200') ? facts : null));
    s.on('error', () => resolve(null));
    s.setTimeout(2000, () => s.destroy());
  });
}

async function poll(what, probe, child) {
  const end = Date.now() + 30_000;
  while (Date.now() < end) {
    const r = await probe();
    if (r) return r;
    if (child && child.exitCode !== null) break;
    await new Promise((res) => setTimeout(res, 200));
  }
  throw new Error(`${what}: no answer within 30 s${child ? `\n${child.output().slice(-2000)}` : ''}`);
}

/** The pid whose CPU and memory count: nginx's single worker, else the process itself. */
function workPid(child, name) {
  if (name !== 'nginx') return child.pid;
  const pid = Number(
    execFileSync('pgrep', ['-P', String(child.pid)])
      .toString()
      .trim()
      .split('\n')[0],
  );
  return pid || child.pid;
}

/**
 * Runs a load client pinned to LOAD_CORE; resolves with its stdout and its
 * CPU seconds (it is a waited-for child once it has exited). Async, so a
 * signal stops the run at once; a client past its time is killed.
 */
function runClient(cmd, args, seconds) {
  return new Promise((resolve, reject) => {
    const before = cpuSeconds(process.pid, true);
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
      if (session.stopping) return; // shutting down: the run is over
      if (code !== 0) reject(new Error(`${cmd} failed (${code ?? signal}): ${err}`));
      else resolve({ out, clientCpu: cpuSeconds(process.pid, true) - before });
    });
  });
}

// wrk resolves the URL's host for its SNI and Host; this script makes it connect to 127.0.0.1.
const wrkScript = path.join(dir, 'loopback.lua');
writeFileSync(wrkScript, 'wrk.resolve = function(host, service) wrk.addrs = wrk.lookup("127.0.0.1", service) end\n');

async function keepalive(port, seconds) {
  const { out, clientCpu } = await runClient(
    'wrk',
    ['-t1', `-c${CONNECTIONS}`, `-d${seconds}s`, '--latency', '-s', wrkScript, `https://${HOST}:${port}/small`],
    seconds,
  );
  const errors = /Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1];
  if (errors) console.error(`  ! ${errors} non-2xx responses on port ${port}`);
  return {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? Number.NaN),
    p50: toMs(/\n\s+50%\s+(\S+)/.exec(out)?.[1] ?? ''),
    p99: toMs(/\n\s+99%\s+(\S+)/.exec(out)?.[1] ?? ''),
    clientCpu,
  };
}

async function handshakes(port, seconds) {
  const { out, clientCpu } = await runClient(
    tlsLoad,
    ['127.0.0.1', String(port), HOST, '/small', String(HANDSHAKE_CONNECTIONS), String(seconds)],
    seconds,
  );
  const r = JSON.parse(out);
  if (r.resumed > 0) throw new Error(`tls-load resumed ${r.resumed} sessions: not full handshakes`);
  if (r.errors > 0 || r.non200 > 0)
    console.error(`  ! ${r.errors} failed connections, ${r.non200} non-200 on port ${port}`);
  return { rps: r.requests / r.seconds, p50: r.p50_ms, p99: r.p99_ms, clientCpu };
}

// --- upstream: one nginx worker serving a 30-byte file -----------------------
writeFileSync(path.join(dir, 'small'), `${'x'.repeat(29)}\n`);
const upPort = await freePort();
const nginxConf = (name, body, extra = '') => {
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
  server {
    ${body}
  }
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
  nginxConf('upstream', `listen 127.0.0.1:${upPort}; root ${dir}; location / { default_type text/plain; }`),
  '-p',
  dir,
]);
await poll('upstream', () => plainGet(upPort));

// --- the proxies, each pinned to PROXY_CORE, each with an ECDSA P-256 certificate ---
const targets = [];
async function addTarget(name, port, child) {
  const facts = await poll(`${name} on https port ${port}`, () => tlsGet(port), child);
  targets.push({ name, port, child, pid: workPid(child, name), facts });
}

// nginx, the floor: a leaf for HOST signed by a CA, both P-256, made here; it
// sends leaf + CA, a two-certificate chain like the local CAs' leaf + intermediate.
{
  const o = (...args) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  o(
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
    '-subj',
    '/CN=bench ECC CA',
    '-days',
    '2',
  );
  o(
    'req',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    'leaf.key',
    '-out',
    'leaf.csr',
    '-subj',
    `/CN=${HOST}`,
  );
  writeFileSync(path.join(dir, 'leaf.ext'), `subjectAltName=DNS:${HOST}\n`);
  o(
    'x509',
    '-req',
    '-in',
    'leaf.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'leaf.pem',
    '-days',
    '2',
    '-extfile',
    'leaf.ext',
  );
  writeFileSync(
    path.join(dir, 'chain.pem'),
    readFileSync(path.join(dir, 'leaf.pem'), 'utf8') + readFileSync(path.join(dir, 'ca.pem'), 'utf8'),
  );
  const nginxPort = await freePort();
  const nginx = start('nginx', 'taskset', [
    '-c',
    PROXY_CORE,
    'nginx',
    '-c',
    nginxConf(
      'nginx',
      `listen 127.0.0.1:${nginxPort} ssl;
    server_name ${HOST};
    ssl_certificate ${dir}/chain.pem;
    ssl_certificate_key ${dir}/leaf.key;
    ssl_protocols TLSv1.2 TLSv1.3;
    location / {
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
      `upstream up { server 127.0.0.1:${upPort}; keepalive 64; }`,
    ),
    '-p',
    dir,
  ]);
  await addTarget('nginx', nginxPort, nginx);
}

// The Node floor: the smallest correct node:https keep-alive proxy, with the
// nginx certificate (P-256). Knobs for investigations: FLOOR_TLS (JSON added
// to the server's TLS options, e.g. '{"ciphers":"TLS_AES_128_GCM_SHA256"}'),
// FLOOR_SNI=1 (the certificate from an SNICallback, as proxyd does),
// FLOOR_RESPOND=1 (answer itself, no upstream).
{
  const floorPort = await freePort();
  const floorFile = path.join(dir, 'floor.mjs');
  writeFileSync(
    floorFile,
    `import http from 'node:http';
import https from 'node:https';
import { readFileSync } from 'node:fs';
import tls from 'node:tls';
const agent = new http.Agent({ keepAlive: true, maxFreeSockets: 256 });
const HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'te', 'trailer', 'proxy-connection']);
const pair = { cert: readFileSync('${dir}/chain.pem'), key: readFileSync('${dir}/leaf.key') };
const extra = JSON.parse(process.env.FLOOR_TLS || '{}');
let options = { ...pair, ALPNProtocols: ['http/1.1'], ...extra };
if (process.env.FLOOR_SNI === '1') {
  const ctx = tls.createSecureContext({ ...pair, ...extra });
  options = { ALPNProtocols: ['http/1.1'], ...extra, SNICallback: (name, cb) => cb(null, ctx) };
}
const small = Buffer.from('${'x'.repeat(29)}\\n');
https.createServer(options, (req, res) => {
  if (process.env.FLOOR_RESPOND === '1') {
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': small.length });
    res.end(small);
    return;
  }
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
}

// Caddy: `tls internal` (its local CA: ECDSA P-256 root, intermediate and
// leaves), in a temp HOME/XDG dir, never touching the machine's trust stores.
{
  const caddyDir = mkdtempSync(path.join(dir, 'caddy-'));
  const [httpPort, httpsPort] = [await freePort(), await freePort()];
  writeFileSync(
    path.join(caddyDir, 'Caddyfile'),
    `{
\tadmin off
\tskip_install_trust
\thttp_port ${httpPort}
\thttps_port ${httpsPort}
\tauto_https disable_redirects
\tstorage file_system ${caddyDir}/data
}

${HOST} {
\tbind 127.0.0.1
\ttls internal
\treverse_proxy 127.0.0.1:${upPort}
\theader {
\t\tX-Content-Type-Options nosniff
\t\tX-Frame-Options SAMEORIGIN
\t}
}
`,
  );
  const caddy = start(
    'caddy',
    'taskset',
    ['-c', PROXY_CORE, 'caddy', 'run', '--config', path.join(caddyDir, 'Caddyfile'), '--adapter', 'caddyfile'],
    { GOMAXPROCS: '1', HOME: caddyDir, XDG_DATA_HOME: caddyDir, XDG_CONFIG_HOME: caddyDir },
  );
  await addTarget('caddy', httpsPort, caddy);
}

// proxyd (the built daemon; BASELINE adds another checkout's build as
// "proxyd base"): HOST's certificate comes from its local CA, obtained after
// start; the probe waits until a handshake for HOST succeeds.
async function addProxyd(name, main, node, env = {}) {
  const [httpPort, httpsPort, adminPort] = [await freePort(), await freePort(), await freePort()];
  const confDir = mkdtempSync(path.join(dir, 'proxyd-'));
  writeFileSync(
    path.join(confDir, 'Proxyfile'),
    `{
\thttp_port ${httpPort}
\thttps_port ${httpsPort}
\tadmin 127.0.0.1:${adminPort}
}

${HOST} {
\treverse_proxy 127.0.0.1:${upPort}
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
      '--cert-dir',
      path.join(confDir, 'certs'),
      '--state-dir',
      path.join(confDir, 'state'),
    ],
    { PROXY_LOG: 'warn', PROXY_ADMIN_TOKEN: 'bench', ...env },
  );
  await addTarget(name, httpsPort, child);
}
await addProxyd('proxyd', PROXYD, process.env.PROXYD_NODE ?? process.execPath);
// FAST_PATH_AB=1: the same build with its HTTP/1.1 fast path off (every request on node:http), alternating.
if (process.env.FAST_PATH_AB === '1') {
  await addProxyd('proxyd node:http', PROXYD, process.env.PROXYD_NODE ?? process.execPath, { PROXY_FAST_PATH: '0' });
}
if (process.env.BASELINE) {
  const main = path.resolve(process.env.BASELINE, 'apps/proxyd/dist/main.js');
  if (!existsSync(main)) {
    console.error(`BASELINE: no built daemon at ${main}`);
    await shutdown(2);
  }
  await addProxyd('proxyd base', main, process.env.BASELINE_NODE ?? process.execPath);
}

for (const t of targets) {
  const f = t.facts;
  console.log(`${t.name.padEnd(11)} ${f.protocol} ${f.cipher}, leaf ${f.key} from "${f.issuer}" (${f.issuerKey})`);
}

// --- measure, in alternation --------------------------------------------------
const chosen = ONLY ? targets.filter((t) => ONLY.includes(t.name)) : targets;
const MEASURE = {
  handshake: {
    run: handshakes,
    label: `full handshakes, a new TLS connection per request (tls-load -c${HANDSHAKE_CONNECTIONS})`,
    unit: 'hs',
  },
  keepalive: { run: keepalive, label: `keep-alive HTTPS (wrk -t1 -c${CONNECTIONS})`, unit: 'req' },
};
const results = new Map();
console.log(
  `${DURATION} s per measure, proxies on core ${PROXY_CORE}, client + upstream on core ${LOAD_CORE}, ${ROUNDS} rounds, 30-byte body`,
);
for (let round = 1; round <= ROUNDS; round++) {
  for (const measure of MEASURES) {
    const m = MEASURE[measure];
    if (!m) throw new Error(`unknown measure ${measure}; have: ${Object.keys(MEASURE).join(', ')}`);
    for (const t of chosen) {
      await m.run(t.port, 1); // warm-up (JIT, pools)
      const cpuBefore = cpuSeconds(t.pid);
      const r = await m.run(t.port, DURATION);
      const cpu = cpuSeconds(t.pid) - cpuBefore;
      // CPU per request: robust to other load on the machine, unlike req/s.
      r.cpuUs = (cpu * 1e6) / (r.rps * DURATION);
      r.proxyCore = cpu / DURATION;
      r.clientCore = r.clientCpu / DURATION;
      const list = results.get(`${measure}|${t.name}`) ?? [];
      list.push(r);
      results.set(`${measure}|${t.name}`, list);
      console.log(
        `  round ${round} ${measure.padEnd(9)} ${t.name.padEnd(11)} ${r.rps.toFixed(0).padStart(6)}/s  p50 ${r.p50.toFixed(2)} ms  p99 ${r.p99.toFixed(2)} ms  cpu ${r.cpuUs.toFixed(1)} µs/${m.unit}  proxy ${(r.proxyCore * 100).toFixed(0)}% client ${(r.clientCore * 100).toFixed(0)}% of a core`,
      );
    }
  }
}

// Medians over the rounds: one disturbed round does not move them.
const summary = (measure, name) => {
  const list = results.get(`${measure}|${name}`);
  if (!list) return null;
  const out = {};
  for (const k of ['rps', 'p50', 'p99', 'cpuUs', 'proxyCore', 'clientCore']) out[k] = median(list.map((r) => r[k]));
  return out;
};
for (const measure of MEASURES) {
  const m = MEASURE[measure];
  console.log(`\n${m.label}`);
  console.log(
    `target       ${m.unit === 'hs' ? 'hs/s ' : 'req/s'}   p50 ms   p99 ms   CPU µs/${m.unit.padEnd(3)}  proxy core  client core  peak RSS MB   ×Caddy rate   ×Caddy CPU`,
  );
  const c = summary(measure, 'caddy');
  for (const t of chosen) {
    const s = summary(measure, t.name);
    if (!s) continue;
    const pct = (x) => `${(x * 100).toFixed(0)}%`;
    console.log(
      `${t.name.padEnd(11)} ${s.rps.toFixed(0).padStart(6)}   ${s.p50.toFixed(2).padStart(6)}   ${s.p99.toFixed(2).padStart(6)}   ${s.cpuUs.toFixed(1).padStart(10)}  ${pct(s.proxyCore).padStart(10)}  ${pct(s.clientCore).padStart(11)}  ${peakRssMb(t.pid).toFixed(1).padStart(11)}   ${(c ? (s.rps / c.rps).toFixed(2) : '-').padStart(11)}   ${(c ? (c.cpuUs / s.cpuUs).toFixed(2) : '-').padStart(10)}`,
    );
  }
}

// ×Caddy CPU is Caddy's CPU per request over the target's: the ratio of what
// one core can serve, which holds even where the client, not the proxy, set the rate.
const goals = { handshake: 0.8, keepalive: 1.1 };
console.log('\ngoals: full handshakes ≥ 0.80× Caddy, keep-alive ≥ 1.10× Caddy');
for (const measure of MEASURES) {
  const p = summary(measure, 'proxyd');
  const c = summary(measure, 'caddy');
  if (!p || !c) continue;
  const rate = p.rps / c.rps;
  const cpu = c.cpuUs / p.cpuUs;
  const met = rate >= goals[measure] && cpu >= goals[measure] ? 'met' : 'missed';
  let line = `  ${measure.padEnd(9)}: proxyd ${rate.toFixed(2)}× Caddy by rate, ${cpu.toFixed(2)}× by CPU per ${MEASURE[measure].unit}, p99 ${p.p99.toFixed(2)} vs ${c.p99.toFixed(2)} ms: ${met}`;
  const b = results.get(`${measure}|proxyd base`);
  if (b) {
    // Pairwise per round: the two builds ran back to back, so machine drift cancels.
    const list = results.get(`${measure}|proxyd`);
    const ratios = list.map((r, i) => r.rps / (b[i]?.rps ?? Number.NaN));
    const cpuRatios = list.map((r, i) => (b[i]?.cpuUs ?? Number.NaN) / r.cpuUs);
    line += `; ${median(ratios).toFixed(3)}× base (rounds ${ratios.map((x) => x.toFixed(3)).join(' ')}), ${median(cpuRatios).toFixed(3)}× base by CPU`;
  }
  console.log(line);
}
await shutdown(0);
