// Runs every benchmark in bench/<name>/run.mjs in turn, or only those named:
//   pnpm bench            all of them
//   pnpm bench proxy      just bench/proxy
//   pnpm bench tls        just bench/tls (full TLS handshakes and keep-alive HTTPS)
//   pnpm bench labels     just bench/labels (container start → first answer, proxyd CPU per container event)
//   pnpm bench encode     just bench/encode (compressing a 100 KB HTML page: proxyd's encode vs Caddy's, per encoding)
//   pnpm bench h2         just bench/h2 (HTTP/2 vs HTTPS/1.1 keep-alive on proxyd's TLS listener, and vs Caddy's HTTP/2, by h2load)
//   pnpm bench workers    just bench/workers (proxyd --workers <cores> vs --workers 1, nginx, Caddy, a Node cluster; nothing pinned)
//   pnpm bench routes     just bench/routes (admin write latency and the worst data-plane stall at 1k, 10k, 100k routes; start and RSS)
//   pnpm bench history    just bench/history (proxy throughput with analytics history on vs off; the stats API on 90 days of a busy site)
//   pnpm bench shutdown   just bench/shutdown (SIGTERM under wrk load: failed requests, a download in flight, time to exit)
//   pnpm bench names      just bench/names (1k/10k/100k API routes with automatic HTTPS: start, writes, stall, PSS, fds, certificates; vs Caddy)
//   pnpm bench dashboard  just bench/dashboard (the dashboard's API on 90 days of a busy site: each route, the whole view)
//   pnpm bench memory     just bench/memory (PSS of proxyd's process tree idle and after 10 s of load, default workers and --workers 1, vs Caddy)
//   pnpm bench fleet      just bench/fleet (storage redis on vs off per request, fleet-wide rate_limit, handshake on a certificate miss)
//   pnpm bench hotpath    just bench/hotpath (candidate HTTP/1.1 data planes vs nginx, Caddy, proxyd: req/s, CPU/req, PSS)
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const wanted = process.argv.slice(2);
const all = readdirSync(here, { withFileTypes: true })
  .filter((e) => e.isDirectory() && existsSync(path.join(here, e.name, 'run.mjs')))
  .map((e) => e.name)
  .sort();
const chosen = wanted.length > 0 ? wanted : all;
let failed = 0;
for (const name of chosen) {
  if (!all.includes(name)) {
    console.error(`no benchmark "${name}"; have: ${all.join(', ')}`);
    process.exit(2);
  }
  console.log(`\n=== bench/${name} ===`);
  const { status } = spawnSync(process.execPath, [path.join(here, name, 'run.mjs')], { stdio: 'inherit' });
  if (status !== 0) failed++;
}
process.exit(failed > 0 ? 1 : 0);
