// bench/history: what analytics history costs the proxy, and how fast the
// stats API answers a 90-day range for a busy site.
//
//   pnpm build && node bench/history/run.mjs        (or: pnpm bench history)
//   ROUNDS=3 DURATION=10 PARTS=query node bench/history/run.mjs
//
// Part "throughput" (PARTS=throughput): two built daemons, `--workers 1`
// (one process: the flush shares the event loop that serves; the worst case
// for history), the same Proxyfile but one says `history off`, in front of
// one nginx worker serving a 2 KB HTML page for every path. wrk (a Lua
// script: 1,000 paths, 300 referrers, 5 browsers, UTM tags) drives them in
// alternation, ROUNDS rounds of DURATION s each; each proxy pinned to
// PROXY_CORE, wrk and nginx to LOAD_CORE. Req/s and CPU per request are
// medians over rounds; the ratio on/off is the result (goal: ≥ 0.98). The
// "on" daemon logs each flush (`proxy::history=debug`): how many it wrote
// during the run and how long each held the event loop.
//
// Part "query" (PARTS=query): 90 days of a busy site (bench/history/busy-site.mjs:
// ~10,000 page views a minute over 1,000 pages, 300 referrers, …) written
// into a history database the way the daemon would have (day by day, hours
// compacted as they end; the last 48 hours minute by minute), then the
// built daemon started on it and the stats API asked for the last 90 days
// (and 7 days by hour, 24 hours by minute), each QUERIES times over HTTP with
// the token (under the 60-a-minute limit): client-side latency p50 and max
// (goal: < 100 ms). The same queries in-process (the store alone), and the
// write of one busy minute into that database.
//
// Loopback only; every child is stopped and the temp dir removed.
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { openHistory } from '@proxyd/history';
import { benchSession, cpuSeconds, median } from '../lib/session.mjs';
import { busyRollup, prng, seedBusySite } from './busy-site.mjs';

const MAIN = fileURLToPath(new URL('../../apps/proxyd/dist/main.js', import.meta.url));
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const DURATION = Number(process.env.DURATION ?? 20);
const CONNECTIONS = Number(process.env.CONNECTIONS ?? 50);
const PROXY_CORE = process.env.PROXY_CORE ?? '1';
const LOAD_CORE = process.env.LOAD_CORE ?? '0';
const QUERIES = Number(process.env.QUERIES ?? 5);
const DAYS = Number(process.env.DAYS ?? 90);
const PARTS = (process.env.PARTS ?? 'query,throughput').split(',');
const HOST = 'bench.local';
const DOMAIN = 'busy.example';
const TOKEN = 'bench-history-token-0123456789abcdef';
const MINUTE = 60_000;
const DAY = 86_400_000;

if (!existsSync(MAIN)) {
  console.error('build first: pnpm build');
  process.exit(2);
}
for (const bin of ['wrk', 'nginx', 'taskset']) {
  try {
    execFileSync('sh', ['-c', `command -v ${bin}`], { stdio: 'ignore' });
  } catch {
    console.error(`bench/history needs ${bin} (apt-get install wrk nginx util-linux)`);
    process.exit(2);
  }
}

const session = benchSession('history');
const { dir } = session;
const fmt = (ms) => (ms < 10 ? ms.toFixed(2) : ms.toFixed(1));

function get(port, p) {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = http.request(
      { host: '127.0.0.1', port, path: p, headers: { authorization: `Bearer ${TOKEN}` } },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c) => {
          body += c;
        });
        res.on('end', () => resolve({ status: res.statusCode, body, ms: performance.now() - started }));
      },
    );
    req.setTimeout(30_000, () => req.destroy(new Error(`GET ${p}: no answer in 30 s`)));
    req.on('error', reject);
    req.end();
  });
}

async function waitUntil(check, what, ms = 20_000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what}: not within ${ms} ms`);
}

/** Starts the built daemon on free ports; resolves its ports once GET /health answers. */
async function startDaemon(name, { stateDir, global = '', site = '', pin = null, env = {} }) {
  const [httpPort, adminPort] = [await session.freePort(), await session.freePort()];
  const confDir = path.join(dir, name);
  mkdirSync(confDir, { recursive: true });
  writeFileSync(
    path.join(confDir, 'Proxyfile'),
    `{\n\thttp_port ${httpPort}\n\tadmin 127.0.0.1:${adminPort}\n\tauto_https off\n${global}}\n\n${site}`,
  );
  const args = [MAIN, 'run', '--config', path.join(confDir, 'Proxyfile'), '--state-dir', stateDir, '--workers', '1'];
  const child =
    pin === null
      ? session.start(name, process.execPath, args, { PROXY_ADMIN_TOKEN: TOKEN, PROXY_LOG: 'warn', ...env })
      : session.start(name, 'taskset', ['-c', pin, process.execPath, ...args], {
          PROXY_ADMIN_TOKEN: TOKEN,
          PROXY_LOG: 'warn',
          ...env,
        });
  await waitUntil(async () => (await get(adminPort, '/health')).status === 200, `${name} ready`);
  return { name, child, httpPort, adminPort };
}

async function stopDaemon(d) {
  d.child.removeAllListeners('exit');
  const gone = new Promise((resolve) => d.child.once('exit', resolve));
  d.child.kill('SIGTERM');
  await gone;
}

// --- part 1: 90 days of a busy site, and the 90-day query -------------------
async function queryPart() {
  const stateDir = path.join(dir, 'query-state');
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  const file = path.join(stateDir, 'history.db');
  const end = Math.floor(Date.now() / MINUTE) * MINUTE;
  const first = Math.floor((end - DAYS * DAY) / DAY) * DAY;
  const random = prng(22);
  let clock = first;
  const store = await openHistory({ file, now: () => clock });
  const seeding = performance.now();
  seedBusySite(store, DOMAIN, {
    first,
    end,
    random,
    setClock: (ms) => {
      clock = ms;
    },
  });
  const seedSeconds = (performance.now() - seeding) / 1000;
  clock = end;
  const size = store.sizeBytes();
  console.log(
    `seeded ${DAYS} days of ${DOMAIN} in ${seedSeconds.toFixed(0)} s: history.db ${(size / 1e6).toFixed(1)} MB (bound ${store.maxBytes / 1e6} MB)`,
  );

  const range = { from: end - DAYS * DAY, to: end };
  const queries = [
    [
      `timeseries, ${DAYS} days by day`,
      `/timeseries?from=${range.from}&to=${range.to}&interval=day`,
      () => store.timeseries(DOMAIN, range, 'day'),
    ],
    [`totals, ${DAYS} days`, `/totals?from=${range.from}&to=${range.to}`, () => store.totals(DOMAIN, range)],
    [
      `breakdown pages, ${DAYS} days`,
      `/breakdown/pages?from=${range.from}&to=${range.to}`,
      () => store.breakdown(DOMAIN, 'pages', range, 10),
    ],
    [
      `breakdown referrers, ${DAYS} days`,
      `/breakdown/referrers?from=${range.from}&to=${range.to}`,
      () => store.breakdown(DOMAIN, 'referrers', range, 10),
    ],
    [`vitals, ${DAYS} days`, `/vitals?from=${range.from}&to=${range.to}`, () => store.vitals(DOMAIN, range, 20)],
    [
      'timeseries, 7 days by hour',
      `/timeseries?from=${end - 7 * DAY}&to=${end}&interval=hour`,
      () => store.timeseries(DOMAIN, { from: end - 7 * DAY, to: end }, 'hour'),
    ],
    [
      'timeseries, 24 hours by minute',
      `/timeseries?from=${end - DAY}&to=${end}&interval=minute`,
      () => store.timeseries(DOMAIN, { from: end - DAY, to: end }, 'minute'),
    ],
    [
      'breakdown pages, 24 hours',
      `/breakdown/pages?from=${end - DAY}&to=${end}`,
      () => store.breakdown(DOMAIN, 'pages', { from: end - DAY, to: end }, 10),
    ],
  ];
  const inProcess = new Map();
  for (const [label, , run] of queries) {
    run();
    const times = [];
    for (let i = 0; i < 30; i++) {
      const t = performance.now();
      run();
      times.push(performance.now() - t);
    }
    inProcess.set(label, times);
  }
  // One busy minute written into the 90-day database (the flush's cost, in the thread that runs it).
  const writes = [];
  for (let i = 0; i < 10; i++) {
    const minute = end + i * MINUTE;
    clock = minute + MINUTE + 2_000;
    writes.push(store.write([busyRollup(DOMAIN, minute, 1, random)], clock).ms);
  }
  store.close();
  // The built daemon on a copy of the seeded database (the writes above are in it too).
  const daemonState = path.join(dir, 'daemon-state');
  mkdirSync(daemonState, { recursive: true, mode: 0o700 });
  copyFileSync(file, path.join(daemonState, 'history.db'));
  const daemon = await startDaemon('query', { stateDir: daemonState });
  const overHttp = new Map();
  for (const [label, url] of queries) {
    const warm = await get(daemon.adminPort, `/stats/${DOMAIN}${url}`);
    if (warm.status !== 200) throw new Error(`${label}: ${warm.status} ${warm.body}`);
    const times = [];
    for (let i = 0; i < QUERIES; i++) times.push((await get(daemon.adminPort, `/stats/${DOMAIN}${url}`)).ms);
    overHttp.set(label, times);
  }
  await stopDaemon(daemon);
  console.log(`\nthe stats API on ${DAYS} days of ${DOMAIN} (built daemon, --workers 1; ms)`);
  console.log('query                                 HTTP p50   HTTP max   store p50   store max');
  const rows = [];
  for (const [label] of queries) {
    const h = overHttp.get(label);
    const s = inProcess.get(label);
    const row = { label, httpP50: median(h), httpMax: Math.max(...h), storeP50: median(s), storeMax: Math.max(...s) };
    rows.push(row);
    console.log(
      `${label.padEnd(36)} ${fmt(row.httpP50).padStart(9)} ${fmt(row.httpMax).padStart(10)} ${fmt(row.storeP50).padStart(11)} ${fmt(row.storeMax).padStart(11)}`,
    );
  }
  const slowest = Math.max(...rows.filter((r) => r.label.includes(`${DAYS} days`)).map((r) => r.httpMax));
  console.log(
    `\nslowest ${DAYS}-day answer over HTTP: ${fmt(slowest)} ms (goal < 100 ms): ${slowest < 100 ? 'met' : 'NOT met'}`,
  );
  console.log(`write of one busy minute into it: p50 ${fmt(median(writes))} ms, max ${fmt(Math.max(...writes))} ms`);
}

// --- part 2: proxy throughput, history on vs off ----------------------------
function wrk(port, script, seconds) {
  const out = execFileSync(
    'taskset',
    ['-c', LOAD_CORE, 'wrk', '-t1', `-c${CONNECTIONS}`, `-d${seconds}s`, '-s', script, `http://127.0.0.1:${port}/`],
    { encoding: 'utf8' },
  );
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? Number.NaN);
  const errors = /Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1];
  if (errors) console.error(`  ! ${errors} non-2xx responses on port ${port}`);
  return rps;
}

async function throughputPart() {
  const upPort = await session.freePort();
  const www = path.join(dir, 'www');
  mkdirSync(www, { recursive: true });
  // nginx workers may run as nobody: they must read the page.
  chmodSync(dir, 0o755);
  writeFileSync(
    path.join(www, 'page.html'),
    `<!doctype html><html><head><title>A page</title></head><body>${'<p>Some text of the article.</p>'.repeat(60)}</body></html>\n`,
  );
  const conf = path.join(dir, 'upstream.conf');
  writeFileSync(
    conf,
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
  server {
    listen 127.0.0.1:${upPort};
    root ${www};
    location / { default_type text/html; try_files /page.html =404; }
  }
}
`,
  );
  session.start('upstream', 'taskset', ['-c', LOAD_CORE, 'nginx', '-c', conf, '-p', dir]);
  await waitUntil(async () => (await get(upPort, '/x')).status === 200, 'upstream');
  const script = path.join(dir, 'traffic.lua');
  writeFileSync(
    script,
    `-- 1,000 paths, 300 referrers, 5 browsers, a UTM tag on one view in ten: rollups with many keys.
local uas = {
  "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36",
  "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15",
  "Mozilla/5.0 (X11; Linux x86_64; rv:127.0) Gecko/20100101 Firefox/127.0",
  "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
  "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36",
}
math.randomseed(22)
request = function()
  local path = "/articles/" .. math.random(1000)
  if math.random(10) == 1 then path = path .. "?utm_source=news" .. math.random(20) .. "&utm_medium=email" end
  return wrk.format("GET", path, {
    ["Host"] = "${HOST}",
    ["User-Agent"] = uas[math.random(#uas)],
    ["Referer"] = "https://ref" .. math.random(300) .. ".example/",
    ["Accept"] = "text/html",
  })
end
`,
  );
  const site = `http://${HOST} {\n\treverse_proxy 127.0.0.1:${upPort}\n}\n`;
  const on = await startDaemon('history on', {
    stateDir: path.join(dir, 'on-state'),
    site,
    pin: PROXY_CORE,
    env: { PROXY_LOG: 'warn,proxy::history=debug' },
  });
  const off = await startDaemon('history off', {
    stateDir: path.join(dir, 'off-state'),
    site,
    global: '\thistory off\n',
    pin: PROXY_CORE,
  });
  const targets = [on, off];
  const results = new Map(targets.map((t) => [t.name, []]));
  console.log(
    `\nwrk -t1 -c${CONNECTIONS} -d${DURATION}s (Lua: 1,000 paths, 300 referrers), proxyd --workers 1 on core ${PROXY_CORE}, wrk + nginx on core ${LOAD_CORE}, ${ROUNDS} rounds`,
  );
  const started = Date.now();
  for (let round = 1; round <= ROUNDS; round++) {
    // Alternate which goes first, so that neither always follows the other's flush.
    for (const t of round % 2 ? targets : [...targets].reverse()) {
      wrk(t.httpPort, script, 1);
      const cpu = cpuSeconds(t.child.pid);
      const rps = wrk(t.httpPort, script, DURATION);
      const cpuUs = ((cpuSeconds(t.child.pid) - cpu) * 1e6) / (rps * DURATION);
      results.get(t.name).push({ rps, cpuUs });
      console.log(
        `  round ${round} ${t.name.padEnd(12)} ${rps.toFixed(0).padStart(7)} req/s  cpu ${cpuUs.toFixed(1)} µs/req`,
      );
    }
  }
  // Let the last minute end and be written, then read the flushes the "on" daemon logged.
  await new Promise((r) => setTimeout(r, MINUTE - (Date.now() % MINUTE) + 4_000));
  const flushes = on.child
    .output()
    .split('\n')
    .filter((line) => line.includes('"history written"') || line.includes('history write took'))
    .map((line) => JSON.parse(line))
    .filter((l) => Date.parse(l.time) >= started);
  const stats = await get(on.adminPort, `/stats/${HOST}/totals?from=${started - MINUTE}`);
  for (const t of targets) await stopDaemon(t);
  const summary = (name) => ({
    rps: median(results.get(name).map((r) => r.rps)),
    cpuUs: median(results.get(name).map((r) => r.cpuUs)),
  });
  const a = summary('history on');
  const b = summary('history off');
  console.log('\ntarget        req/s (median)   CPU µs/req');
  console.log(`history on    ${a.rps.toFixed(0).padStart(14)}   ${a.cpuUs.toFixed(1).padStart(10)}`);
  console.log(`history off   ${b.rps.toFixed(0).padStart(14)}   ${b.cpuUs.toFixed(1).padStart(10)}`);
  const ratio = a.rps / b.rps;
  console.log(`on / off: ${ratio.toFixed(3)} (goal ≥ 0.98: ${ratio >= 0.98 ? 'met' : 'NOT met'})`);
  const ms = flushes.map((f) => f.ms).filter((x) => typeof x === 'number');
  const rollups = flushes.map((f) => f.rollups ?? 0);
  if (ms.length > 0) {
    console.log(
      `flushes of the "on" daemon: ${ms.length}, ${median(rollups)} rollups each (median), event-loop time p50 ${fmt(median(ms))} ms, max ${fmt(Math.max(...ms))} ms`,
    );
  }
  if (stats.status === 200) {
    const t = JSON.parse(stats.body);
    console.log(`history of the run (GET /stats/${HOST}/totals): ${t.page_views} page views, ${t.requests} requests`);
  }
}

if (PARTS.includes('query')) await queryPart();
if (PARTS.includes('throughput')) await throughputPart();
await session.shutdown(0);
