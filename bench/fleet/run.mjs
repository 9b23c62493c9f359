// bench/fleet: what `storage redis` (issue 31) costs a node, against the same node without it, in one run.
//
//   nice -n 19 node bench/fleet/run.mjs           (or: pnpm bench fleet)
//   ROUNDS=5 DURATION=5 CLIENTS=1000 NAMES=50 node bench/fleet/run.mjs
//
// 1. The request path. proxyd --workers 1 (one process: its CPU is the node's), a `respond` site, analytics and
//    history on, `wrk -t1 -c20` for DURATION s after a 1 s warm-up, the targets in alternation (the order turned
//    each round), ROUNDS rounds, medians. Targets:
//    - off:      no storage (the cert dir);
//    - redis:    `storage redis` (certificates, history exchange, ticket keys through Redis);
//    - rl node:  `storage redis`, the site with `rate_limit 1000000/s` (nothing refused), counted per node;
//    - rl fleet: the same with `rate_limit_scope fleet` (synced to Redis every 100 ms);
//    - off again: off once more, elsewhere in the order (the null row);
//    - off wN, redis wN: off and redis at the default workers (WORKERS, one per CPU): the data plane in worker
//      processes, the Redis client in the primary only; CPU is the whole process tree's.
//    The clients: CLIENTS addresses in X-Forwarded-For (trusted from 127.0.0.1), a different one per request,
//    so the fleet limiter syncs that many keys a second, not one. CPU µs per request: the proxyd process's
//    (user + system, /proc) over the requests wrk counted; Redis's CPU likewise. Goal: redis ≤ 2 % over off.
// 2. The handshake on a certificate miss. NAMES `.test` names issued by the local CA into Redis by a first node;
//    then two nodes on that Redis: `miss` with PROXY_CERT_CACHE=1 (every handshake to the next name reads its
//    certificate and key from Redis and builds the context), `hit` with the default cache (all cached after a
//    warm-up pass). New TLS connections one at a time from this process, the names in turn, ROUNDS passes in
//    alternation: handshake ms (client side, connect to secureConnect) and the node's CPU ms per handshake.
// 3. bench/fleet/write-reach.mjs (time for a route write to reach every node), when that file exists: run
//    after, its output printed as it is.
//
// Needs: the built daemon (pnpm build), wrk, redis-server, redis-cli. Loopback only.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { fileURLToPath } from 'node:url';
import { benchSession, cpuSeconds, cpuSecondsOf, median, treePids } from '../lib/session.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const PROXYD = path.join(root, 'apps/proxyd/dist/main.js');
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const DURATION = Number(process.env.DURATION ?? 5);
const CONNECTIONS = Number(process.env.CONNECTIONS ?? 20);
const CLIENTS = Number(process.env.CLIENTS ?? 1000);
const NAMES = Number(process.env.NAMES ?? 50);
const HOST = 'bench.localhost';
const WORKERS = Number(process.env.WORKERS ?? os.availableParallelism());

for (const bin of ['wrk', 'redis-server', 'redis-cli']) {
  try {
    execFileSync('sh', ['-c', `command -v ${bin}`], { stdio: 'ignore' });
  } catch {
    console.error(`bench/fleet needs ${bin} (apt-get install wrk redis-server redis-tools)`);
    process.exit(2);
  }
}
if (!existsSync(PROXYD)) {
  console.error('build first: pnpm build');
  process.exit(2);
}

const session = benchSession('fleet');
const { dir, freePort, start } = session;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const load = () => execFileSync('cat', ['/proc/loadavg'], { encoding: 'utf8' }).split(' ').slice(0, 3).join(' ');
const loadBefore = load();
/** Stops a node of the run before its end (no "exited early" line). */
async function stop(n) {
  n.child.removeAllListeners('exit');
  const gone = new Promise((resolve) => n.child.once('exit', resolve));
  n.child.kill('SIGTERM');
  await gone;
}

// --- Redis ---------------------------------------------------------------------
const redisPort = await freePort();
const redis = start('redis-server', 'redis-server', [
  '--port',
  String(redisPort),
  '--bind',
  '127.0.0.1',
  '--dir',
  dir,
  '--save',
  '',
  '--appendonly',
  'no',
]);
const cli = (...args) =>
  execFileSync('redis-cli', ['-p', String(redisPort), ...args], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  }).trim();
for (let i = 0; ; i++) {
  try {
    if (cli('PING') === 'PONG') break;
  } catch {}
  if (i > 100) throw new Error('redis-server did not answer');
  await sleep(50);
}
const REDIS_URL = `redis://127.0.0.1:${redisPort}`;

// --- proxyd nodes ----------------------------------------------------------------
/** Starts proxyd (`--workers 1` unless `workers`) with `global` lines and `sites`; resolves once GET /health answers. */
async function node(name, global, sites, env = {}, workers = 1) {
  const httpPort = await freePort();
  const httpsPort = await freePort();
  const adminPort = await freePort();
  const home = path.join(dir, name.replace(/\W/g, '-'));
  mkdirSync(home, { recursive: true });
  writeFileSync(
    path.join(home, 'Proxyfile'),
    `{\n\thttp_port ${httpPort}\n\thttps_port ${httpsPort}\n\tadmin 127.0.0.1:${adminPort}\n${global}}\n\n${sites}`,
  );
  const child = start(
    name,
    process.execPath,
    [
      PROXYD,
      'run',
      '--workers',
      String(workers),
      '--config',
      path.join(home, 'Proxyfile'),
      '--state-dir',
      path.join(home, 'state'),
      '--cert-dir',
      path.join(home, 'certs'),
    ],
    { PROXY_LOG: 'warn', PROXY_ADMIN_TOKEN: 'bench', ...env },
  );
  for (let i = 0; ; i++) {
    const ok = await fetch(`http://127.0.0.1:${adminPort}/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (child.exitCode !== null || i > 600) throw new Error(`${name} did not start:\n${child.output().slice(-2000)}`);
    await sleep(100);
  }
  // Its processes (with workers: the primary and every worker), read once they all run.
  let pids = [child.pid];
  for (let i = 0; workers > 1 && i < 100; i++) {
    pids = treePids(child.pid);
    if (pids.length > workers) break;
    await sleep(100);
  }
  return { name, child, httpPort, httpsPort, pids };
}

// --- 1. the request path ----------------------------------------------------------
const xff = path.join(dir, 'clients.lua');
writeFileSync(
  xff,
  `local n = 0
request = function()
  n = (n + 1) % ${CLIENTS}
  local ip = "10." .. math.floor(n / 65536) .. "." .. (math.floor(n / 256) % 256) .. "." .. (n % 256)
  return wrk.format(nil, nil, { ["X-Forwarded-For"] = ip })
end
`,
);
const trust = '\ttrusted_proxies 127.0.0.1/32\n';
const storage = (prefix, extra = '') => `\tstorage redis ${REDIS_URL} {\n\t\tkey_prefix ${prefix}\n${extra}\t}\n`;
const site = (lines = '') => `http://${HOST} {\n${lines}\trespond "ok"\n}\n`;
const limited = site('\trate_limit 1000000/s\n');
const targets = [
  await node('off', trust, site()),
  await node('redis', trust + storage('b-redis'), site()),
  await node('rl node', trust + storage('b-node'), limited),
  await node('rl fleet', trust + storage('b-fleet', '\t\trate_limit_scope fleet\n'), limited),
  // The null row: `off` again, in another place of the order. Its distance from `off` is the bench's own noise
  // and order effect, the band any other row's difference must leave.
  await node('off again', trust, site()),
  // At the default workers (one per CPU; WORKERS), the data plane is in worker processes that never load the Redis
  // client: the node's CPU is the whole tree's.
  await node(`off w${WORKERS}`, trust, site(), {}, WORKERS),
  await node(`redis w${WORKERS}`, trust + storage('b-redis-w'), site(), {}, WORKERS),
];

function wrk(port, seconds) {
  const out = execFileSync(
    'wrk',
    ['-t1', `-c${CONNECTIONS}`, `-d${seconds}s`, '-s', xff, '-H', `Host: ${HOST}`, `http://127.0.0.1:${port}/`],
    { encoding: 'utf8' },
  );
  const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? Number.NaN);
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? Number.NaN);
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
  return { requests, rps, non2xx };
}

const rows = new Map(targets.map((t) => [t.name, { rps: [], cpuUs: [], redisUs: [], non2xx: 0 }]));
console.log(`request path: ${ROUNDS} rounds × ${targets.length} targets × ${DURATION} s, ${CLIENTS} client addresses`);
for (let round = 0; round < ROUNDS; round++) {
  const order = targets.map((_, i) => targets[(i + round) % targets.length]);
  for (const t of order) {
    wrk(t.httpPort, 1);
    const cpu0 = cpuSecondsOf(t.pids);
    const redis0 = cpuSeconds(redis.pid);
    const r = wrk(t.httpPort, DURATION);
    const row = rows.get(t.name);
    row.rps.push(r.rps);
    row.cpuUs.push(((cpuSecondsOf(t.pids) - cpu0) / r.requests) * 1e6);
    row.redisUs.push(((cpuSeconds(redis.pid) - redis0) / r.requests) * 1e6);
    row.non2xx += r.non2xx;
  }
  process.stdout.write(`  round ${round + 1} done\n`);
}
const wName = (name) => `${name} w${WORKERS}`;
/** Each row against the `off` of its own process layout: `off` for --workers 1, `off wN` for the workers rows. */
const baseOf = (name) => (name.endsWith(` w${WORKERS}`) ? wName('off') : 'off');
/** Per round, `of` against `to` in the same round (the targets ran back to back): median and range. */
const paired = (of, to, f) => {
  const xs = of.map((v, i) => f(v, to[i])).sort((x, y) => x - y);
  return { median: median(xs), min: xs[0], max: xs[xs.length - 1] };
};
const signed = (v, unit) => `${v >= 0 ? '+' : ''}${v.toFixed(1)}${unit}`;
const range = (r, unit) => `${signed(r.median, unit)} [${signed(r.min, unit)}, ${signed(r.max, unit)}]`;
const pct = (a, b) => ((a - b) / b) * 100;
console.log(
  '\n| target | req/s | CPU µs/req (proxyd) | vs its off, per round: median [min, max] | Redis CPU µs/req | non-2xx |',
);
console.log('| --- | --: | --: | --: | --: | --: |');
for (const [name, row] of rows) {
  const vs = name === baseOf(name) ? '—' : range(paired(row.cpuUs, rows.get(baseOf(name)).cpuUs, pct), ' %');
  console.log(
    `| ${name} | ${Math.round(median(row.rps))} | ${median(row.cpuUs).toFixed(1)} | ${vs} | ${median(row.redisUs).toFixed(2)} | ${row.non2xx} |`,
  );
}
const rl = paired(rows.get('rl fleet').cpuUs, rows.get('rl node').cpuUs, (a, b) => a - b);
console.log(`\nrate_limit_scope fleet over node, per round: ${range(rl, ' µs')} CPU per request (proxyd)`);
for (const [layout, on, off] of [
  ['one process (--workers 1)', 'redis', 'off'],
  [`the default workers (--workers ${WORKERS})`, wName('redis'), wName('off')],
]) {
  const onOff = paired(rows.get(on).cpuUs, rows.get(off).cpuUs, pct);
  console.log(
    `goal, ${layout}: storage redis ≤ 2 % CPU per request over off (median of rounds): ${signed(onOff.median, ' %')}, ${onOff.median <= 2 ? 'met' : 'MISSED'}`,
  );
}
await Promise.all(targets.map(stop));

// --- 2. the handshake on a certificate miss -------------------------------------------
const names = Array.from({ length: NAMES }, (_, i) => `n${i}.fleet.test`);
const sites = names.map((n) => `${n} {\n\trespond "ok"\n}\n`).join('');
const hsStorage = storage('b-hs');
const issuer = await node('issuer', hsStorage, sites);
for (let i = 0; ; i++) {
  const keys = cli('ZRANGE', 'b-hs:keys', '0', '-1').split('\n');
  if (names.every((n) => keys.includes(`certificates/local/${n}/${n}.crt`))) break;
  if (i > 1200) throw new Error('the names were not issued within 120 s');
  await sleep(100);
}
await stop(issuer);
const miss = await node('miss', hsStorage, sites, { PROXY_CERT_CACHE: '1' });
const hit = await node('hit', hsStorage, sites);

function handshake(port, servername) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const socket = tls.connect({ port, host: '127.0.0.1', servername, rejectUnauthorized: false }, () => {
      const ms = performance.now() - t0;
      const alt = socket.getPeerCertificate().subjectaltname ?? '';
      socket.destroy();
      if (!alt.includes(`DNS:${servername}`)) reject(new Error(`${servername}: served ${alt}`));
      else resolve(ms);
    });
    socket.setTimeout(10_000, () => socket.destroy(new Error(`${servername}: handshake timed out`)));
    socket.on('error', reject);
  });
}
async function pass(n) {
  const ms = [];
  const cpu0 = cpuSeconds(n.child.pid);
  for (const name of names) ms.push(await handshake(n.httpsPort, name));
  return { ms, cpuMs: ((cpuSeconds(n.child.pid) - cpu0) / names.length) * 1000 };
}
// Warm-up: every name once on both (the hit node's cache fills; the miss node's keeps one).
await pass(hit);
await pass(miss);
const hs = { miss: { ms: [], cpu: [] }, hit: { ms: [], cpu: [] } };
for (let round = 0; round < ROUNDS; round++) {
  for (const n of round % 2 ? [hit, miss] : [miss, hit]) {
    const r = await pass(n);
    hs[n.name].ms.push(...r.ms);
    hs[n.name].cpu.push(r.cpuMs);
  }
}
const p = (xs, q) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * q))];
console.log(`\nhandshakes: ${NAMES} names × ${ROUNDS} passes per node, one at a time`);
console.log('| node | handshake ms p50 | p90 | node CPU ms/handshake |');
console.log('| --- | --: | --: | --: |');
for (const [name, r] of Object.entries(hs)) {
  console.log(`| ${name} | ${median(r.ms).toFixed(2)} | ${p(r.ms, 0.9).toFixed(2)} | ${median(r.cpu).toFixed(2)} |`);
}
console.log(
  `a miss costs ${(median(hs.miss.ms) - median(hs.hit.ms)).toFixed(2)} ms more per handshake (read from Redis, context built)`,
);
console.log(`\nload average: ${loadBefore} before, ${load()} after; ${new Date().toISOString()}`);
await Promise.all([stop(miss), stop(hit)]);

// --- 3. write reach (another engineer's bench, when it is there) -----------------------
const reach = path.join(here, 'write-reach.mjs');
if (existsSync(reach)) {
  console.log('\nbench/fleet/write-reach.mjs:');
  const code = await new Promise((resolve) => {
    const child = spawn(process.execPath, [reach], { stdio: 'inherit' });
    child.on('exit', (c) => resolve(c ?? 1));
  });
  if (code !== 0) console.error(`write-reach.mjs exited ${code}`);
}
await session.shutdown(0);
