// bench/dashboard: how fast the dashboard's own API answers the 90-day view
// of a busy site, as the page asks for it.
//
//   pnpm build && node bench/dashboard/run.mjs        (or: pnpm bench dashboard)
//   DAYS=30 VIEWS=10 node bench/dashboard/run.mjs
//
// 90 days of bench/history's busy site (bench/history/busy-site.mjs: ~10,000
// page views a minute over 1,000 pages, 300 referrers, …) written into a
// history database the way the daemon would have (an hour rollup per hour,
// the last 48 hours minute by minute), the built daemon started on it
// (`--workers 1`) with `dashboard { basic_auth }`, then the page's requests
// for the last DAYS days, over HTTP with the credentials:
//   - each route alone, ROUTE_RUNS times (client-side latency p50 and max);
//   - the whole view as the page loads it (totals, the series by day, the
//     ten breakdowns and the vitals: 13 requests at once over 6 keep-alive
//     connections, as a browser does), VIEWS times: wall time p50 and max.
// Goal: every 90-day answer < 100 ms. The dashboard reads the store
// in-process: these requests never touch the admin API or its rate limit.
//
// Loopback only; every child is stopped and the temp dir removed.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { openHistory } from '@proxyd/history';
import { prng, seedBusySite } from '../history/busy-site.mjs';
import { benchSession, median } from '../lib/session.mjs';

const MAIN = fileURLToPath(new URL('../../apps/proxyd/dist/main.js', import.meta.url));
const DAYS = Number(process.env.DAYS ?? 90);
const ROUTE_RUNS = Number(process.env.ROUTE_RUNS ?? 20);
const VIEWS = Number(process.env.VIEWS ?? 20);
const DOMAIN = 'busy.example';
// bcrypt (cost 10, the usual) of "correct horse": a verified header is remembered, so only the first request pays it.
const HASH = '$2b$10$P8UdM2vOpsVNXRhjUAGkU.zn5N0SwkcHGpgCgh8kAmC6feu6gEaRq';
const AUTH = `Basic ${Buffer.from('alice:correct horse').toString('base64')}`;
const DIMENSIONS = [
  'pages',
  'entry_pages',
  'referrers',
  'countries',
  'browsers',
  'os',
  'devices',
  'utm_source',
  'utm_medium',
  'utm_campaign',
];
const MINUTE = 60_000;
const DAY = 86_400_000;

if (!existsSync(MAIN)) {
  console.error('build first: pnpm build');
  process.exit(2);
}

const session = benchSession('dashboard');
const { dir } = session;
const fmt = (ms) => (ms < 10 ? ms.toFixed(2) : ms.toFixed(1));
const agent = new http.Agent({ keepAlive: true, maxSockets: 6 });

function get(port, p) {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = http.request({ host: '127.0.0.1', port, path: p, agent, headers: { authorization: AUTH } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => {
        body += c;
      });
      res.on('end', () => resolve({ status: res.statusCode, body, ms: performance.now() - started }));
    });
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

// --- 90 days of a busy site -------------------------------------------------
const stateDir = path.join(dir, 'state');
mkdirSync(stateDir, { recursive: true, mode: 0o700 });
const end = Math.floor(Date.now() / MINUTE) * MINUTE;
const first = Math.floor((end - DAYS * DAY) / DAY) * DAY;
const random = prng(22);
let clock = first;
const store = await openHistory({ file: path.join(stateDir, 'history.db'), now: () => clock });
const seeding = performance.now();
seedBusySite(store, DOMAIN, {
  first,
  end,
  random,
  setClock: (ms) => {
    clock = ms;
  },
});
console.log(
  `seeded ${DAYS} days of ${DOMAIN} in ${((performance.now() - seeding) / 1000).toFixed(0)} s: history.db ${(store.sizeBytes() / 1e6).toFixed(1)} MB`,
);
store.close();

// --- the built daemon with the dashboard on ----------------------------------
const [httpPort, adminPort, dashboardPort] = [
  await session.freePort(),
  await session.freePort(),
  await session.freePort(),
];
const proxyfile = path.join(dir, 'Proxyfile');
writeFileSync(
  proxyfile,
  `{\n\thttp_port ${httpPort}\n\tadmin 127.0.0.1:${adminPort}\n\tauto_https off\n\tdashboard 127.0.0.1:${dashboardPort} {\n\t\tbasic_auth alice ${HASH}\n\t}\n}\n\nhttp://${DOMAIN} {\n\trespond "ok"\n}\n`,
);
session.start(
  'proxyd',
  process.execPath,
  [MAIN, 'run', '--config', proxyfile, '--state-dir', stateDir, '--workers', '1', '--no-docker'],
  {
    PROXY_LOG: 'warn',
  },
);
await waitUntil(async () => (await get(dashboardPort, '/api/stats')).status === 200, 'dashboard ready');

const to = end;
const from = to - DAYS * DAY;
const q = `from=${from}&to=${to}`;
const routes = [
  ['totals', `/api/stats/${DOMAIN}/totals?${q}`],
  ['timeseries by day', `/api/stats/${DOMAIN}/timeseries?${q}&interval=day`],
  ...DIMENSIONS.map((d) => [`breakdown ${d}`, `/api/stats/${DOMAIN}/breakdown/${d}?${q}&limit=10`]),
  ['vitals', `/api/stats/${DOMAIN}/vitals?${q}&limit=20`],
];
for (const [label, url] of routes) {
  const warm = await get(dashboardPort, url);
  if (warm.status !== 200) throw new Error(`${label}: ${warm.status} ${warm.body}`);
}
console.log(`\nthe dashboard's API on ${DAYS} days of ${DOMAIN} (built daemon, --workers 1; ms, client side)`);
console.log('route                          p50       max');
const perRoute = [];
for (const [label, url] of routes) {
  const times = [];
  for (let i = 0; i < ROUTE_RUNS; i++) times.push((await get(dashboardPort, url)).ms);
  perRoute.push(Math.max(...times));
  console.log(`${label.padEnd(26)} ${fmt(median(times)).padStart(8)} ${fmt(Math.max(...times)).padStart(9)}`);
}
const views = [];
for (let i = 0; i < VIEWS; i++) {
  const started = performance.now();
  const answers = await Promise.all(routes.map(([, url]) => get(dashboardPort, url)));
  views.push(performance.now() - started);
  if (answers.some((a) => a.status !== 200)) throw new Error('a view request failed');
}
console.log(
  `\nthe ${DAYS}-day view (${routes.length} requests at once, 6 connections): p50 ${fmt(median(views))} ms, max ${fmt(Math.max(...views))} ms`,
);
const slowest = Math.max(...perRoute);
console.log(
  `slowest ${DAYS}-day answer alone: ${fmt(slowest)} ms (goal < 100 ms): ${slowest < 100 ? 'met' : 'NOT met'}`,
);
agent.destroy();
await session.shutdown(0);
