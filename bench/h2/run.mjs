// bench/h2: proxyd's HTTP/2 on its TLS listener against its own HTTPS/1.1
// keep-alive and against Caddy's HTTP/2, in front of the same upstream, in one run.
//
//   node bench/h2/run.mjs              (or: pnpm bench h2)
//   ROUNDS=3 DURATION=5 node bench/h2/run.mjs
//   ONLY="proxyd h2,caddy h2" node bench/h2/run.mjs        (rows, or whole targets: ONLY=proxyd)
//   PROXYD_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" ONLY="proxyd h2" node bench/h2/run.mjs
//   PROXYD_CHECKOUT=../clean-build node bench/h2/run.mjs   (the daemon built in another checkout)
//   BASELINE=../other-checkout ONLY="proxyd,proxyd base" node bench/h2/run.mjs   (A/B of two builds)
//
// Rows, in alternation, ROUNDS times, all measured by h2load (one thread):
// - `<target> h2`: `h2load -c50 -m10`: 50 TLS connections, ALPN h2, 10
//   streams in flight on each (500 requests in flight).
// - `<target> h1`: `h2load --h1 -c50 -m1`: 50 TLS connections, ALPN
//   http/1.1, one request at a time on each (keep-alive, no pipelining).
// - `<target> h2-m1`: `h2load -c50 -m1`: h2 at h1's concurrency (50 in
//   flight), for latency at the same load as h1 (context, no goal).
// PROTOCOLS="h2,h1" picks the rows per target (default all three).
// Targets: proxyd (the built daemon) and Caddy (GOMAXPROCS=1), each with a
// certificate for bench.localhost from its local CA, in front of one nginx
// worker serving a 30-byte body. The proxy runs on core 1, h2load and the
// upstream on core 0. h2load connects to 127.0.0.1 (--connect-to) and sends
// SNI and :authority bench.localhost. Each h2load run has a 1 s warm-up
// (connections made, traffic, not counted) then DURATION seconds measured.
// Reports medians over rounds of req/s, p50/p99 (from h2load's per-request
// log), the proxy's CPU µs per request (utime+stime from /proc over the
// measured seconds), the share of a core the proxy and h2load used, and the
// proxy's peak RSS. p50/p99 count the requests that started and ended in the
// measured phase. Any failed, errored, timed-out or non-2xx request, or a
// protocol other than the one asked for, marks the row and makes the run
// exit 1 (after the table); a goal missed does not.
//
// Node's own h1/h2 cost without proxying (compat vs stream API): node-floor.mjs.
//
// Needs: the built daemon (pnpm build), h2load, nginx, caddy, taskset
// (apt-get install nghttp2-client nginx caddy util-linux).
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import tls from 'node:tls';
import { fileURLToPath } from 'node:url';
import { benchSession, cpuSeconds, median, peakRssMb } from '../lib/session.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const PROXYD = path.join(path.resolve(process.env.PROXYD_CHECKOUT ?? root), 'apps/proxyd/dist/main.js');
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const DURATION = Number(process.env.DURATION ?? 5);
const WARMUP = 1; // seconds of h2load's --warm-up-time before each measure
const CONNECTIONS = Number(process.env.CONNECTIONS ?? 50);
const STREAMS = Number(process.env.STREAMS ?? 10);
const PROXY_CORE = process.env.PROXY_CORE ?? '1';
const LOAD_CORE = process.env.LOAD_CORE ?? '0';
// A *.localhost name: proxyd and Caddy both certify it from their local CA.
const HOST = 'bench.localhost';
const ONLY = process.env.ONLY?.split(',');
/** How each row's h2load runs: ALPN asked for and streams (h2) or requests (h1) in flight per connection. */
const VARIANTS = {
  h2: { h1: false, streams: STREAMS, alpn: 'h2' },
  h1: { h1: true, streams: 1, alpn: 'http/1.1' },
  // h2 at h1's concurrency (50 in flight): latency at the same load as h1.
  'h2-m1': { h1: false, streams: 1, alpn: 'h2' },
};
const PROTOCOLS = process.env.PROTOCOLS?.split(',') ?? Object.keys(VARIANTS);
for (const p of PROTOCOLS)
  if (!VARIANTS[p]) throw new Error(`unknown protocol ${p}; have: ${Object.keys(VARIANTS).join(', ')}`);

for (const [bin, pkg] of [
  ['h2load', 'nghttp2-client'],
  ['nginx', 'nginx'],
  ['caddy', 'caddy'],
  ['taskset', 'util-linux'],
]) {
  try {
    execFileSync('sh', ['-c', `command -v ${bin}`], { stdio: 'ignore' });
  } catch {
    console.error(`bench/h2 needs ${bin} (apt-get install ${pkg})`);
    process.exit(2);
  }
}
if (!existsSync(PROXYD)) {
  console.error(`build first: pnpm build (no ${PROXYD})`);
  process.exit(2);
}

const session = benchSession('h2');
const { dir, children, shutdown, freePort, start } = session;
// nginx workers may run as nobody: they must read the files served.
chmodSync(dir, 0o755);

/** One GET over a plain connection; resolves with whether it answered 200. */
function plainGet(port) {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1', () => {
      s.write(`GET / HTTP/1.1\r\nHost: ${HOST}\r\nConnection: close\r\n\r\n`);
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
 * One GET over TLS (SNI HOST, ALPN http/1.1); resolves with the handshake's
 * facts (protocol, cipher, certificate key and issuer) when it answered 200,
 * else null.
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
      facts = { protocol: s.getProtocol(), cipher: s.getCipher().name, key, issuer: cert.issuer?.CN };
      s.write(`GET / HTTP/1.1\r\nHost: ${HOST}\r\nConnection: close\r\n\r\n`);
    });
    s.on('data', (d) => {
      data += d;
    });
    s.on('end', () => resolve(data.startsWith('HTTP/1.1 200') ? facts : null));
    s.on('error', () => resolve(null));
    s.setTimeout(2000, () => s.destroy());
  });
}

/** The ALPN protocol a server picks when offered h2 and http/1.1 (null if none or on error). */
function alpnChoice(port) {
  return new Promise((resolve) => {
    const s = tls.connect({
      host: '127.0.0.1',
      port,
      servername: HOST,
      rejectUnauthorized: false,
      ALPNProtocols: ['h2', 'http/1.1'],
    });
    s.on('secureConnect', () => {
      const p = s.alpnProtocol || null;
      s.destroy();
      resolve(p);
    });
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

/** The q-quantile (0..1) of a sorted array, nearest rank. */
function quantile(sorted, q) {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

/**
 * One h2load run against a target, pinned to LOAD_CORE: WARMUP s not
 * counted, then DURATION s measured. The proxy's CPU is read at the end of
 * the warm-up and at the end of the measure (timers from the spawn: h2load
 * starts its warm-up at its first connection, a few ms later). Async, so a
 * signal stops the run at once; an h2load past its time is killed.
 */
function h2load(target, proto) {
  const v = VARIANTS[proto];
  const log = path.join(dir, `h2load-${target.port}-${proto}.log`);
  const args = [
    '-c',
    LOAD_CORE,
    'h2load',
    ...(v.h1 ? ['--h1'] : []),
    '-c',
    String(CONNECTIONS),
    '-m',
    String(v.streams),
    '-D',
    String(DURATION),
    `--warm-up-time=${WARMUP}`,
    `--connect-to=127.0.0.1:${target.port}`,
    `--log-file=${log}`,
    `https://${HOST}:${target.port}/`,
  ];
  return new Promise((resolve, reject) => {
    const clientBefore = cpuSeconds(process.pid, true);
    const child = spawn('taskset', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    child.stderr.on('data', (d) => {
      err += d;
    });
    let cpu0 = Number.NaN;
    let cpu1 = Number.NaN;
    const t0 = setTimeout(() => {
      cpu0 = cpuSeconds(target.pid);
    }, WARMUP * 1000);
    const t1 = setTimeout(
      () => {
        cpu1 = cpuSeconds(target.pid);
      },
      (WARMUP + DURATION) * 1000,
    );
    const kill = setTimeout(() => child.kill('SIGKILL'), (WARMUP + DURATION + 30) * 1000);
    child.on('close', (code, signal) => {
      for (const t of [t0, t1, kill]) clearTimeout(t);
      if (Number.isNaN(cpu1)) cpu1 = cpuSeconds(target.pid);
      children.splice(children.indexOf(child), 1);
      if (session.stopping) return; // shutting down: the run is over
      if (code !== 0) {
        reject(new Error(`h2load against ${target.name} ${proto} failed (${code ?? signal}): ${err}${out}`));
        return;
      }
      const clientCpu = cpuSeconds(process.pid, true) - clientBefore;
      try {
        resolve(parse(out, readFileSync(log, 'utf8'), proto, cpu1 - cpu0, clientCpu));
      } catch (e) {
        reject(new Error(`${target.name} ${proto}: ${e.message}\n${out}`));
      } finally {
        rmSync(log, { force: true });
      }
    });
  });
}

/** h2load's summary and per-request log → one measure; `problems` lists what makes the row invalid. */
function parse(out, log, proto, proxyCpu, clientCpu) {
  const num = (re) => {
    const m = re.exec(out);
    if (!m) throw new Error(`no ${re} in h2load's output`);
    return Number(m[1]);
  };
  const rps = num(/finished in [\d.]+\w*, ([\d.]+) req\/s/);
  const done = num(/requests: \d+ total, \d+ started, (\d+) done/);
  const succeeded = num(/(\d+) succeeded/);
  const failed = num(/(\d+) failed/);
  const errored = num(/(\d+) errored/);
  const timeout = num(/(\d+) timeout/);
  // "status codes" counts responses whose headers came in the measured
  // phase, including those still in flight when it ended: it can exceed "done".
  const non2xx = num(/status codes: \d+ 2xx, (\d+) 3xx/) + num(/(\d+) 4xx/) + num(/(\d+) 5xx/);
  const alpn = /Application protocol: (\S+)/.exec(out)?.[1] ?? '?';
  const problems = [];
  if (failed + errored + timeout > 0) problems.push(`${failed} failed, ${errored} errored, ${timeout} timed out`);
  if (succeeded !== done) problems.push(`${done - succeeded} of ${done} done did not succeed`);
  if (non2xx > 0) problems.push(`${non2xx} non-2xx responses`);
  if (alpn !== VARIANTS[proto].alpn) problems.push(`protocol ${alpn}, not ${VARIANTS[proto].alpn}`);
  if (done === 0) problems.push('no request done');
  // The log: start µs since epoch, status, µs to the end of the response,
  // one line per request that ended in the measured phase (as many as
  // "done"), in the order they ended. Status 0: the response headers came
  // in the warm-up (h2load records statuses only in the measured phase);
  // -1: a failed stream. Latency counts only the requests that also started
  // in the measured phase, which began about when the first logged one ended.
  const lines = log.split('\n').filter((l) => l !== '');
  const first = lines[0]?.split('\t').map(Number);
  const mainStart = first ? first[0] + first[2] : 0;
  const us = new Float64Array(lines.length);
  let n = 0;
  let failedInLog = 0;
  for (const line of lines) {
    const [start, status, micros] = line.split('\t').map(Number);
    if (status < 0) failedInLog++;
    if (start >= mainStart) us[n++] = micros;
  }
  const sorted = us.subarray(0, n).sort();
  if (failedInLog > 0) problems.push(`${failedInLog} failed streams in the log`);
  return {
    rps,
    done,
    succeeded,
    logged: lines.length,
    timed: n,
    p50: quantile(sorted, 0.5) / 1000,
    p99: quantile(sorted, 0.99) / 1000,
    cpuUs: (proxyCpu * 1e6) / (rps * DURATION),
    proxyCore: proxyCpu / DURATION,
    clientCore: clientCpu / (WARMUP + DURATION),
    problems,
  };
}

// --- upstream: one nginx worker, a 30-byte body for every path ----------------
writeFileSync(path.join(dir, 'small'), `${'x'.repeat(29)}\n`);
const upPort = await freePort();
const upConf = path.join(dir, 'upstream.conf');
writeFileSync(
  upConf,
  `daemon off;
worker_processes 1;
pid ${dir}/upstream.pid;
error_log ${dir}/upstream.err warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/upstream-body;
  proxy_temp_path ${dir}/upstream-proxy;
  fastcgi_temp_path ${dir}/upstream-fcgi;
  uwsgi_temp_path ${dir}/upstream-uwsgi;
  scgi_temp_path ${dir}/upstream-scgi;
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:${upPort};
    root ${dir};
    location / { default_type text/plain; try_files /small =404; }
  }
}
`,
);
start('upstream', 'taskset', ['-c', LOAD_CORE, 'nginx', '-c', upConf, '-p', dir]);
await poll('upstream', () => plainGet(upPort));

// --- the proxies, each pinned to PROXY_CORE ------------------------------------
const targets = [];
async function addTarget(name, port, child) {
  const facts = await poll(`${name} on https port ${port}`, () => tlsGet(port), child);
  facts.alpn = await alpnChoice(port);
  if (facts.alpn !== 'h2') throw new Error(`${name} picked ALPN ${facts.alpn} when offered h2, http/1.1`);
  targets.push({ name, port, child, pid: child.pid, facts });
}

// Caddy: `tls internal` (its local CA), in a temp HOME/XDG dir, never
// touching the machine's trust stores. HTTP/2 is on by default.
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
// start; the probe waits until a handshake for HOST succeeds. Its TLS
// listener serves h2 and http/1.1 by ALPN.
async function addProxyd(name, main, node) {
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
    { PROXY_LOG: 'warn', PROXY_ADMIN_TOKEN: 'bench' },
  );
  await addTarget(name, httpsPort, child);
}
await addProxyd('proxyd', PROXYD, process.env.PROXYD_NODE ?? process.execPath);
if (process.env.BASELINE) {
  const main = path.resolve(process.env.BASELINE, 'apps/proxyd/dist/main.js');
  if (!existsSync(main)) {
    console.error(`BASELINE: no built daemon at ${main}`);
    await shutdown(2);
  }
  await addProxyd('proxyd base', main, process.env.BASELINE_NODE ?? process.execPath);
}

console.log(`proxyd: ${PROXYD}`);
for (const t of targets) {
  const f = t.facts;
  console.log(
    `${t.name.padEnd(11)} ${f.protocol} ${f.cipher}, leaf ${f.key} from "${f.issuer}", ALPN h2 offered: ${f.alpn}`,
  );
}

// --- measure, in alternation --------------------------------------------------
const rows = [];
for (const t of targets) for (const proto of PROTOCOLS) rows.push({ name: `${t.name} ${proto}`, target: t, proto });
const chosen = ONLY ? rows.filter((r) => ONLY.includes(r.name) || ONLY.includes(r.target.name)) : rows;
if (chosen.length === 0) throw new Error(`ONLY matches no row; have: ${rows.map((r) => r.name).join(', ')}`);
const results = new Map();
const bad = new Set();
console.log(
  `h2: h2load -c${CONNECTIONS} -m${STREAMS}; h1: h2load --h1 -c${CONNECTIONS} -m1; h2-m1: h2load -c${CONNECTIONS} -m1; ${WARMUP} s warm-up + ${DURATION} s per measure, proxies on core ${PROXY_CORE}, h2load + upstream on core ${LOAD_CORE}, ${ROUNDS} rounds, 30-byte body`,
);
for (let round = 1; round <= ROUNDS; round++) {
  for (const row of chosen) {
    if (row.target.child.exitCode !== null) throw new Error(`${row.target.name} is gone`);
    const r = await h2load(row.target, row.proto);
    const list = results.get(row.name) ?? [];
    list.push(r);
    results.set(row.name, list);
    if (r.problems.length > 0) {
      bad.add(row.name);
      console.error(`  !!! ${row.name}, round ${round}: ${r.problems.join('; ')} !!!`);
    }
    if (r.logged !== r.done)
      console.error(`  ! ${row.name}: the log has ${r.logged} requests, h2load counted ${r.done}`);
    console.log(
      `  round ${round} ${row.name.padEnd(15)} ${r.rps.toFixed(0).padStart(6)}/s  p50 ${r.p50.toFixed(2)} ms  p99 ${r.p99.toFixed(2)} ms  cpu ${r.cpuUs.toFixed(1)} µs/req  proxy ${(r.proxyCore * 100).toFixed(0)}% client ${(r.clientCore * 100).toFixed(0)}% of a core`,
    );
  }
}

// Medians over the rounds: one disturbed round does not move them.
const summary = (name) => {
  const list = results.get(name);
  if (!list) return null;
  const out = {};
  for (const k of ['rps', 'p50', 'p99', 'cpuUs', 'proxyCore', 'clientCore']) out[k] = median(list.map((r) => r[k]));
  return out;
};
const pct = (x) => `${(x * 100).toFixed(0)}%`;
console.log(`\nmedians of ${ROUNDS} rounds (peak RSS: the proxy process, over the whole run)`);
console.log(
  'row               req/s   p50 ms   p99 ms   CPU µs/req  proxy core  client core  peak RSS MB   ×Caddy h2 rate   ×Caddy h2 CPU',
);
const caddyH2 = summary('caddy h2');
for (const row of chosen) {
  const s = summary(row.name);
  const mark = bad.has(row.name) ? ' !!! FAILED REQUESTS' : '';
  console.log(
    `${row.name.padEnd(15)} ${s.rps.toFixed(0).padStart(7)}   ${s.p50.toFixed(2).padStart(6)}   ${s.p99.toFixed(2).padStart(6)}   ${s.cpuUs.toFixed(1).padStart(10)}  ${pct(s.proxyCore).padStart(10)}  ${pct(s.clientCore).padStart(11)}  ${peakRssMb(row.target.pid).toFixed(1).padStart(11)}   ${(caddyH2 ? (s.rps / caddyH2.rps).toFixed(2) : '-').padStart(14)}   ${(caddyH2 ? (caddyH2.cpuUs / s.cpuUs).toFixed(2) : '-').padStart(13)}${mark}`,
  );
}

// The goals are on req/s and p99; CPU per request (what one core can serve,
// whatever set the rate) is printed beside them.
const p2 = summary('proxyd h2');
const p1 = summary('proxyd h1');
const verdict = (ok) => (ok ? 'met' : 'missed');
console.log('\ngoals: proxyd h2 ≥ 1.00× proxyd h1 req/s, ≥ 1.10× Caddy h2 req/s, p99 ≤ proxyd h1');
if (p2 && p1) {
  const rate = p2.rps / p1.rps;
  console.log(
    `  proxyd h2 vs proxyd h1: ${rate.toFixed(2)}× req/s (${(p1.cpuUs / p2.cpuUs).toFixed(2)}× by CPU per request): ${verdict(rate >= 1.0)}`,
  );
}
if (p2 && caddyH2) {
  const rate = p2.rps / caddyH2.rps;
  console.log(
    `  proxyd h2 vs Caddy h2:  ${rate.toFixed(2)}× req/s (${(caddyH2.cpuUs / p2.cpuUs).toFixed(2)}× by CPU per request): ${verdict(rate >= 1.1)}`,
  );
}
if (p2 && p1) {
  console.log(
    `  proxyd h2 p99 vs h1:    ${p2.p99.toFixed(2)} vs ${p1.p99.toFixed(2)} ms (${STREAMS * CONNECTIONS} vs ${CONNECTIONS} requests in flight): ${verdict(p2.p99 <= p1.p99)}`,
  );
  const m1 = summary('proxyd h2-m1');
  if (m1)
    console.log(
      `  (context) proxyd h2-m1 p99 vs h1: ${m1.p99.toFixed(2)} vs ${p1.p99.toFixed(2)} ms, both ${CONNECTIONS} in flight; ${m1.rps.toFixed(0)} vs ${p1.rps.toFixed(0)} req/s`,
    );
}
for (const proto of PROTOCOLS) {
  const b = results.get(`proxyd base ${proto}`);
  const list = results.get(`proxyd ${proto}`);
  if (!b || !list) continue;
  // Pairwise per round: the two builds ran back to back, so machine drift cancels.
  const ratios = list.map((r, i) => r.rps / (b[i]?.rps ?? Number.NaN));
  const cpuRatios = list.map((r, i) => (b[i]?.cpuUs ?? Number.NaN) / r.cpuUs);
  console.log(
    `  proxyd ${proto} vs base: ${median(ratios).toFixed(3)}× req/s (rounds ${ratios.map((x) => x.toFixed(3)).join(' ')}), ${median(cpuRatios).toFixed(3)}× by CPU`,
  );
}
if (bad.size > 0) {
  console.error(`\n!!! failed or non-2xx requests in: ${[...bad].join(', ')}: these rows do not count !!!`);
  await shutdown(1);
}
await shutdown(0);
