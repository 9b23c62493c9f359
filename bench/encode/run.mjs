// bench/encode: what compressing a 100 KB HTML page costs proxyd's `encode`
// against Caddy's `encode`, per encoding, in one run: throughput, latency,
// the proxy's CPU per request and the bytes saved.
//
//   node bench/encode/run.mjs            (or: pnpm bench encode)
//   ROUNDS=3 DURATION=5 node bench/encode/run.mjs
//   ONLY="caddy,proxyd" ENCODINGS="identity,gzip" node bench/encode/run.mjs   (a subset)
//   PROXYD_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" ONLY=proxyd node bench/encode/run.mjs
//
// One upstream (an nginx worker serving page.mjs's page as text/html) and,
// in front of it, on free loopback ports in a temp dir:
// - Caddy 2.6 (GOMAXPROCS=1), one site per encoding by Host name:
//   `encode gzip`, `encode zstd`, none (identity). Caddy 2.6 has no brotli
//   encoder (checked below with `caddy adapt`).
// - proxyd (the built daemon), one process, one `http://` site per encoding
//   and per analytics setting: `proxyd` = `analytics off` (the same work as
//   Caddy), `proxyd+analytics` = the default (analytics on: the script tag
//   is injected into the page before it is compressed).
// Each request carries `Accept-Encoding: <that encoding>` (none for
// identity). The proxies are pinned to core 1, wrk and the upstream share
// core 0 (`taskset -c 0 wrk -t1 -c16 -d5s --latency`). Targets run in
// alternation, ROUNDS times; medians over rounds of req/s, p50/p99 and the
// proxy's CPU µs per request (utime+stime of every thread from /proc over the
// measure / requests). Bytes come from one curl per target with its
// Accept-Encoding, decoded and checked against the page. Then levels.mjs
// (node:zlib alone, pinned to the proxy core) gives bytes and CPU per level.
//
// Needs: the built daemon (pnpm build), wrk, nginx, caddy, taskset, curl.
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import zlib from 'node:zlib';
import { benchSession, median, toMs } from '../lib/session.mjs';
import { buildPage } from './page.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const PROXYD = path.join(path.resolve(process.env.PROXYD_CHECKOUT ?? root), 'apps/proxyd/dist/main.js');
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const DURATION = Number(process.env.DURATION ?? 5);
const CONNECTIONS = Number(process.env.CONNECTIONS ?? 16);
const PROXY_CORE = process.env.PROXY_CORE ?? '1';
const LOAD_CORE = process.env.LOAD_CORE ?? '0';
const ONLY = process.env.ONLY?.split(',');
const ENCODINGS = process.env.ENCODINGS?.split(',') ?? ['identity', 'gzip', 'zstd', 'br'];
const SERVERS = ['caddy', 'proxyd', 'proxyd+analytics'];
/** What Caddy 2.6 can encode (`caddy list-modules`: http.encoders.gzip, http.encoders.zstd). */
const CADDY_ENCODINGS = ['identity', 'gzip', 'zstd'];
const CLK_TCK = 100; // /proc/<pid>/stat times are in clock ticks (USER_HZ, 100 on Linux)

for (const [bin, pkg] of [
  ['wrk', 'wrk'],
  ['nginx', 'nginx'],
  ['caddy', 'caddy'],
  ['taskset', 'util-linux'],
  ['curl', 'curl'],
]) {
  try {
    execFileSync('sh', ['-c', `command -v ${bin}`], { stdio: 'ignore' });
  } catch {
    console.error(`bench/encode needs ${bin} (apt-get install ${pkg})`);
    process.exit(2);
  }
}
if (!existsSync(PROXYD)) {
  console.error('build first: pnpm build');
  process.exit(2);
}

const session = benchSession('encode');
const { dir, children, shutdown, freePort, start } = session;
// nginx workers may run as nobody: they must read the files served.
chmodSync(dir, 0o755);

// Ports handed out stay reserved: a server not listening yet must not get its port handed out again.

/** Runs a command to its end without blocking the event loop (a SIGINT stops the run at once). */
function run(cmd, args, timeoutS) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    const out = [];
    let err = '';
    child.stdout.on('data', (d) => out.push(d));
    child.stderr.on('data', (d) => {
      err += d;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutS * 1000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      children.splice(children.indexOf(child), 1);
      if (code === 0) resolve(Buffer.concat(out));
      else reject(new Error(`${cmd} ${args.join(' ')} → ${code}\n${err}`));
    });
  });
}

/** One GET with the target's Host; whether it answered 200. */
function get200(port, host) {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1', () => {
      s.write(`GET /page.html HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
    });
    let data = '';
    s.on('data', (d) => {
      data += d;
    });
    s.on('end', () => resolve(data.startsWith('HTTP/1.1 200')));
    s.on('error', () => resolve(false));
    s.setTimeout(2000, () => s.destroy());
  });
}

async function poll(what, port, host, child) {
  const end = Date.now() + 30_000;
  while (Date.now() < end) {
    if (await get200(port, host)) return;
    if (child && child.exitCode !== null) break;
    await new Promise((res) => setTimeout(res, 200));
  }
  throw new Error(`${what}: no 200 within 30 s${child ? `\n${child.output().slice(-2000)}` : ''}`);
}

/** CPU seconds (user, system; every thread) a process has used so far. */
function cpuSeconds(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { user: Number(fields[11]) / CLK_TCK, sys: Number(fields[12]) / CLK_TCK };
}

const acceptHeader = (enc) => (enc === 'identity' ? [] : ['-H', `Accept-Encoding: ${enc}`]);

async function wrk(t, seconds) {
  const out = (
    await run(
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
        `Host: ${t.host}`,
        ...acceptHeader(t.enc),
        `http://127.0.0.1:${t.port}/page.html`,
      ],
      seconds + 30,
    )
  ).toString();
  const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? Number.NaN);
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? Number.NaN);
  const p50 = toMs(/\n\s+50%\s+(\S+)/.exec(out)?.[1] ?? '');
  const p99 = toMs(/\n\s+99%\s+(\S+)/.exec(out)?.[1] ?? '');
  const errors = /Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1];
  if (errors) console.error(`  ! ${errors} non-2xx responses from ${t.name}`);
  return { requests, rps, p50, p99 };
}

// --- the page and the upstream -------------------------------------------------
const page = buildPage();
writeFileSync(path.join(dir, 'page.html'), page);
const gzip6 = zlib.gzipSync(page, { level: 6 }).length;
console.log(
  `page: ${page.length} bytes of HTML (page.mjs); gzip -6: ${gzip6} bytes (${((gzip6 / page.length) * 100).toFixed(1)} %)`,
);

// Caddy 2.6 has gzip and zstd only: say so from the binary, not from memory.
writeFileSync(path.join(dir, 'Caddyfile.br'), 'http://:1 {\n\tencode br\n}\n');
try {
  execFileSync('caddy', ['adapt', '--config', path.join(dir, 'Caddyfile.br'), '--adapter', 'caddyfile'], {
    stdio: 'pipe',
    env: { ...process.env, HOME: dir, XDG_DATA_HOME: dir, XDG_CONFIG_HOME: dir },
  });
  console.log('caddy: `encode br` adapts: this Caddy has brotli, yet the bench does not measure it');
} catch (err) {
  const why = /module not registered: \S+/.exec(String(err.stderr))?.[0] ?? 'refused';
  const version = execFileSync('caddy', ['version']).toString().trim().split(' ')[0];
  console.log(`caddy ${version}: \`encode br\` → ${why} (no brotli in Caddy 2.6)`);
}

const upPort = await freePort();
writeFileSync(
  path.join(dir, 'upstream.conf'),
  `daemon off;
worker_processes 1;
pid ${dir}/upstream.pid;
error_log ${dir}/upstream.err warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/up-body;
  proxy_temp_path ${dir}/up-proxy;
  fastcgi_temp_path ${dir}/up-fcgi;
  uwsgi_temp_path ${dir}/up-uwsgi;
  scgi_temp_path ${dir}/up-scgi;
  keepalive_requests 1000000;
  types { text/html html; }
  server {
    listen 127.0.0.1:${upPort};
    root ${dir};
  }
}
`,
);
const upstream = start('upstream', 'taskset', [
  '-c',
  LOAD_CORE,
  'nginx',
  '-c',
  path.join(dir, 'upstream.conf'),
  '-p',
  dir,
]);
await poll('upstream', upPort, 'upstream', upstream);

// --- the proxies, each pinned to PROXY_CORE ----------------------------------
const hostOf = (server, enc) => `${enc}.${server.replace('+', '-')}.bench.local`;

const caddyPort = await freePort();
writeFileSync(
  path.join(dir, 'Caddyfile'),
  `{
\tadmin off
\tauto_https off
}
${CADDY_ENCODINGS.map(
  (enc) => `
http://${hostOf('caddy', enc)}:${caddyPort} {
${enc === 'identity' ? '' : `\tencode ${enc}\n`}\treverse_proxy 127.0.0.1:${upPort}
}
`,
).join('')}`,
);
const caddy = start(
  'caddy',
  'taskset',
  ['-c', PROXY_CORE, 'caddy', 'run', '--config', path.join(dir, 'Caddyfile'), '--adapter', 'caddyfile'],
  { GOMAXPROCS: '1', HOME: dir, XDG_DATA_HOME: dir, XDG_CONFIG_HOME: dir },
);

const proxydPort = await freePort();
const adminPort = await freePort();
const proxydSites = [];
for (const server of ['proxyd', 'proxyd+analytics']) {
  for (const enc of ['identity', 'gzip', 'zstd', 'br']) {
    proxydSites.push(`
http://${hostOf(server, enc)} {
\treverse_proxy 127.0.0.1:${upPort}
${enc === 'identity' ? '' : `\tencode ${enc}\n`}${server === 'proxyd' ? '\tanalytics off\n' : ''}}
`);
  }
}
writeFileSync(
  path.join(dir, 'Proxyfile'),
  `{
\thttp_port ${proxydPort}
\tadmin 127.0.0.1:${adminPort}
}
${proxydSites.join('')}`,
);
const proxyd = start(
  'proxyd',
  'taskset',
  [
    '-c',
    PROXY_CORE,
    process.env.PROXYD_NODE ?? process.execPath,
    ...(process.env.PROXYD_NODE_ARGS ? process.env.PROXYD_NODE_ARGS.split(' ') : []),
    PROXYD,
    'run',
    '--config',
    path.join(dir, 'Proxyfile'),
    '--state-dir',
    path.join(dir, 'state'),
    '--no-docker',
  ],
  { PROXY_LOG: 'warn', PROXY_ADMIN_TOKEN: 'bench' },
);

const targets = [];
for (const enc of ENCODINGS) {
  for (const server of SERVERS) {
    if (server === 'caddy' && !CADDY_ENCODINGS.includes(enc)) continue;
    if (ONLY && !ONLY.includes(server)) continue;
    const child = server === 'caddy' ? caddy : proxyd;
    const port = server === 'caddy' ? caddyPort : proxydPort;
    targets.push({ name: `${server} ${enc}`, server, enc, host: hostOf(server, enc), port, pid: child.pid, child });
  }
}
for (const t of targets) await poll(t.name, t.port, t.host, t.child);

// --- bytes: one curl per target, decoded and checked ------------------------
const TAG = /<script src="\/_proxyd\/a\.js[^>]*><\/script>/;
const decode = {
  identity: (b) => b,
  gzip: (b) => zlib.gunzipSync(b),
  br: (b) => zlib.brotliDecompressSync(b),
  zstd: (b) => zlib.zstdDecompressSync(b),
};
for (const t of targets) {
  const body = path.join(dir, 'body');
  const meta = (
    await run(
      'curl',
      [
        '-sS',
        '-o',
        body,
        '-D',
        path.join(dir, 'head'),
        '-w',
        '%{http_code} %{size_download} %{size_header}',
        '-H',
        `Host: ${t.host}`,
        ...acceptHeader(t.enc),
        `http://127.0.0.1:${t.port}/page.html`,
      ],
      30,
    )
  )
    .toString()
    .split(' ')
    .map(Number);
  const head = readFileSync(path.join(dir, 'head'), 'utf8');
  const coding = /^content-encoding:\s*(\S+)/im.exec(head)?.[1]?.toLowerCase() ?? 'identity';
  if (meta[0] !== 200 || coding !== t.enc) {
    throw new Error(`${t.name}: status ${meta[0]}, Content-Encoding ${coding} (wanted ${t.enc})`);
  }
  const decoded = decode[coding](readFileSync(body));
  // With analytics on, proxyd injects its script tag before </head>: the page otherwise.
  const text = decoded.toString('utf8');
  const injected = TAG.exec(text)?.[0] ?? '';
  const same = Buffer.from(text.replace(TAG, ''), 'utf8').equals(page);
  if (!same) throw new Error(`${t.name}: decoded body (${decoded.length} bytes) is not the page`);
  if ((t.server === 'proxyd+analytics') !== (injected !== '')) {
    throw new Error(`${t.name}: analytics tag ${injected ? 'present' : 'absent'}, not as configured`);
  }
  t.bodyBytes = meta[1];
  t.headerBytes = meta[2];
  t.decodedBytes = decoded.length;
}

// --- measure, in alternation -------------------------------------------------
const results = new Map();
console.log(
  `wrk -t1 -c${CONNECTIONS} -d${DURATION}s, proxies on core ${PROXY_CORE}, wrk + upstream on core ${LOAD_CORE}, ${ROUNDS} rounds, ${targets.length} targets`,
);
for (let round = 1; round <= ROUNDS; round++) {
  for (const t of targets) {
    await wrk(t, 1); // warm-up (JIT, keep-alive pools, compressor state)
    const before = cpuSeconds(t.pid);
    const r = await wrk(t, DURATION);
    const after = cpuSeconds(t.pid);
    // CPU time per request: robust to other load on the machine, unlike req/s.
    r.cpuUs = ((after.user - before.user + after.sys - before.sys) * 1e6) / r.requests;
    r.sysUs = ((after.sys - before.sys) * 1e6) / r.requests;
    const list = results.get(t.name) ?? [];
    list.push(r);
    results.set(t.name, list);
    console.log(
      `  round ${round} ${t.name.padEnd(25)} ${r.rps.toFixed(0).padStart(6)} req/s  p50 ${r.p50.toFixed(2)} ms  p99 ${r.p99.toFixed(2)} ms  cpu ${r.cpuUs.toFixed(1)} µs/req (sys ${r.sysUs.toFixed(1)})`,
    );
  }
}

// --- node:zlib alone, per level, on the proxy core ---------------------------
const levels = JSON.parse(
  (await run('taskset', ['-c', PROXY_CORE, process.execPath, path.join(here, 'levels.mjs')], 120)).toString(),
).rows;

// --- summary -----------------------------------------------------------------
// Medians over the rounds: one disturbed round (other load on a shared machine) does not move them.
const byName = new Map(targets.map((t) => [t.name, t]));
for (const t of targets) {
  const list = results.get(t.name);
  for (const k of ['rps', 'p50', 'p99', 'cpuUs', 'sysUs']) t[k] = median(list.map((r) => r[k]));
}
const fmt = (n, d = 0) => n.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });
console.log(
  `\n100 KB HTML page (${page.length} bytes), medians of ${ROUNDS} rounds; "saved" against the same server's identity answer; ×Caddy: proxyd / Caddy, same encoding`,
);
console.log(
  '| target | encoding | req/s | p50 ms | p99 ms | CPU µs/req | of which sys | Δ CPU vs identity | body bytes | saved | CPU ×Caddy | bytes ×Caddy |',
);
console.log('| --- | --- | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: |');
for (const t of targets) {
  const id = byName.get(`${t.server} identity`);
  const c = byName.get(`caddy ${t.enc}`);
  const delta = id && t.enc !== 'identity' ? `+${fmt(t.cpuUs - id.cpuUs, 1)}` : '–';
  const saved = id && t.enc !== 'identity' ? `${fmt((1 - t.bodyBytes / id.bodyBytes) * 100, 1)} %` : '–';
  const vsCpu = c && t.server !== 'caddy' ? fmt(t.cpuUs / c.cpuUs, 2) : '–';
  const vsBytes = c && t.server !== 'caddy' ? fmt(t.bodyBytes / c.bodyBytes, 3) : '–';
  console.log(
    `| ${t.server} | ${t.enc} | ${fmt(t.rps)} | ${fmt(t.p50, 2)} | ${fmt(t.p99, 2)} | ${fmt(t.cpuUs, 1)} | ${fmt(t.sysUs, 1)} | ${delta} | ${fmt(t.bodyBytes)} | ${saved} | ${vsCpu} | ${vsBytes} |`,
  );
}

// At equal output size: which node:zlib level matches Caddy's bytes, and what it costs.
console.log(`\nnode:zlib alone (levels.mjs, 16 KiB chunks, core ${PROXY_CORE}): CPU µs per page`);
const proxydLevel = { gzip: 5, br: 4, zstd: 3 };
for (const enc of ['gzip', 'zstd', 'br']) {
  const rows = levels.filter((r) => r.coding === enc);
  const mine = rows.find((r) => r.level === proxydLevel[enc]);
  const c = byName.get(`caddy ${enc}`);
  const p = byName.get(`proxyd ${enc}`);
  let line = `  ${enc}: proxyd's level ${mine.level}: ${fmt(mine.bytes)} bytes, ${fmt(mine.cpuUs)} µs (16 at once: ${fmt(mine.cpuUs16)} µs, sys ${fmt(mine.sysUs16)})`;
  if (c) {
    // The cheapest level whose output is no larger than Caddy's (else the smallest output).
    const fit = rows.filter((r) => r.bytes <= c.bodyBytes).sort((a, b) => a.cpuUs - b.cpuUs)[0];
    line += `; Caddy's ${enc}: ${fmt(c.bodyBytes)} bytes`;
    if (fit)
      line += `, cheapest node level at ≤ that size: ${fit.level} (${fmt(fit.bytes)} bytes, ${fmt(fit.cpuUs)} µs)`;
    const cId = byName.get('caddy identity');
    const pId = byName.get('proxyd identity');
    if (cId && pId && p) {
      line += `; end to end Δ CPU/req: proxyd +${fmt(p.cpuUs - pId.cpuUs)} µs, Caddy +${fmt(c.cpuUs - cId.cpuUs)} µs`;
    }
  }
  console.log(line);
}
console.log('\nlevel table (coding level bytes CPU µs/page):');
for (const enc of ['gzip', 'br', 'zstd']) {
  console.log(
    `  ${enc.padEnd(4)} ${levels
      .filter((r) => r.coding === enc)
      .map((r) => `${r.level}:${r.bytes}/${r.cpuUs.toFixed(0)}`)
      .join('  ')}`,
  );
}
await shutdown(0);
