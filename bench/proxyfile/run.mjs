// Parse + compile speed of a large config, proxyd vs Caddy, as whole processes.
//
// Generates a 10,000-site Proxyfile and the equivalent Caddyfile (same site
// blocks, directives and upstreams; `basic_auth` is written `basicauth` for
// Caddy 2.6, and the bcrypt hashes are base64-wrapped as Caddy 2.6 wants, a
// form proxyd also reads), then times, alternating, in the same run:
//   node apps/proxyd/dist/main.js validate --config <Proxyfile>
//   node bench/proxyfile/adapt.mjs <Proxyfile>      (parse, then the model as JSON on stdout)
//   caddy adapt --config <Caddyfile> --adapter caddyfile
// Each sample is one process from spawn to exit (startup included).
//
// Same I/O for both: `caddy adapt` writes the whole adapted config (JSON, tens
// of MB here) to stdout, `proxyd validate` one line. In the timed runs every
// stdout goes to /dev/null, so no tool is charged for the benchmark reading a
// pipe; the warm-up runs capture and check each output. Caddy still builds
// and writes its JSON (adapt has no quiet mode), which validate does not:
// adapt.mjs is the like-for-like row (parse, compile, schema check, then
// JSON.stringify of the model to stdout). Prints the medians and both ratios
// (below 1: proxyd is faster).
//
// Run: pnpm build && node bench/proxyfile/run.mjs
//   env BENCH_SITES (default 10000), BENCH_RUNS (samples per tool, default 9),
//   CADDY (default /usr/bin/caddy or caddy on PATH).
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const SITES = Number(process.env.BENCH_SITES ?? 10_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 9);
const main = fileURLToPath(new URL('../../apps/proxyd/dist/main.js', import.meta.url));
const adapt = fileURLToPath(new URL('./adapt.mjs', import.meta.url));
const caddy = process.env.CADDY ?? (existsSync('/usr/bin/caddy') ? '/usr/bin/caddy' : 'caddy');

if (!existsSync(main)) {
  console.error(`missing ${main}: run pnpm build first`);
  process.exit(1);
}
if (spawnSync(caddy, ['version']).status !== 0) {
  console.error(`caddy not found (${caddy}); install it (apt-get install caddy) or set CADDY`);
  process.exit(1);
}

// bcrypt of "secret", cost 10, wrapped in base64 (Caddy 2.6's basicauth form).
const HASH = Buffer.from('$2b$10$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy').toString('base64');

/** One config text; `caddy` switches the two spellings that differ. */
function generate(forCaddy) {
  const out = ['{', '\thttp_port 8080', '\thttps_port 8443', '\temail ops@example.com', '}', ''];
  for (let i = 0; i < SITES; i++) {
    const a = (i >> 8) & 255;
    const b = i & 255;
    out.push(`site${i}.example.com, www.site${i}.example.com {`);
    if (i % 7 === 0) out.push('\ttls internal');
    out.push('\theader {', `\t\tX-Site site${i}`, '\t\t-Server', '\t}');
    if (i % 10 === 0) {
      out.push(`\t${forCaddy ? 'basicauth' : 'basic_auth'} bcrypt "Site ${i}" {`, `\t\tadmin ${HASH}`, '\t}');
    }
    out.push('\tredir /old/* /new/{http.request.uri.path.remainder} 301');
    out.push(
      '\thandle /api/* {',
      `\t\treverse_proxy 10.${a}.${b}.1:8080 10.${a}.${b}.2:8080 {`,
      '\t\t\tlb_policy least_conn',
      '\t\t\thealth_uri /health',
      '\t\t\thealth_interval 10s',
      `\t\t\theader_up X-Site-Id "${i}"`,
      '\t\t}',
      '\t}',
    );
    out.push('\thandle {', `\t\treverse_proxy 127.0.0.1:${3000 + (i % 1000)}`, '\t}', '}', '');
  }
  return out.join('\n');
}

const dir = mkdtempSync(path.join(tmpdir(), 'proxyd-bench-proxyfile-'));
const proxyfile = path.join(dir, 'Proxyfile');
const caddyfile = path.join(dir, 'Caddyfile');
writeFileSync(proxyfile, generate(false));
writeFileSync(caddyfile, generate(true));

const devNull = openSync('/dev/null', 'w');

/** One process, spawn to exit. `capture`: read stdout through a pipe (warm-up checks); else stdout is /dev/null. */
function time(cmd, args, capture = false) {
  const start = process.hrtime.bigint();
  const r = spawnSync(cmd, args, {
    encoding: 'utf8',
    maxBuffer: 1 << 30,
    stdio: ['ignore', capture ? 'pipe' : devNull, 'pipe'],
  });
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (r.status !== 0) {
    console.error(`${cmd} ${args.join(' ')} failed (${r.status}):\n${r.stderr.slice(0, 2000)}`);
    process.exit(1);
  }
  return { ms, stdout: r.stdout };
}

const tools = {
  proxyd: [process.execPath, [main, 'validate', '--config', proxyfile]],
  'proxyd-json': [process.execPath, [adapt, proxyfile]],
  caddy: [caddy, ['adapt', '--config', caddyfile, '--adapter', 'caddyfile']],
};

// One warm-up each (page cache, lazy OS work), checked for the right output.
const first = time(...tools.proxyd, true);
const expected = `Valid configuration: ${SITES} sites, ${countUpstreams()} upstreams\n`;
if (first.stdout !== expected) {
  console.error(`unexpected proxyd output: ${JSON.stringify(first.stdout)}, expected ${JSON.stringify(expected)}`);
  process.exit(1);
}
const model = JSON.parse(time(...tools['proxyd-json'], true).stdout);
const caddyJson = time(...tools.caddy, true).stdout;
const caddyRoutes = JSON.parse(caddyJson).apps.http.servers.srv0.routes.length;
if (model.sites.length !== SITES) {
  console.error(`adapt.mjs printed ${model.sites.length} sites, expected ${SITES}`);
  process.exit(1);
}
const outputBytes = {
  proxyd: Buffer.byteLength(first.stdout),
  'proxyd-json': Buffer.byteLength(JSON.stringify(model)),
  caddy: Buffer.byteLength(caddyJson),
};

function countUpstreams() {
  const set = new Set();
  for (let i = 0; i < SITES; i++) {
    const a = (i >> 8) & 255;
    const b = i & 255;
    set
      .add(`10.${a}.${b}.1:8080`)
      .add(`10.${a}.${b}.2:8080`)
      .add(`127.0.0.1:${3000 + (i % 1000)}`);
  }
  return set.size;
}

const samples = { proxyd: [], 'proxyd-json': [], caddy: [] };
const names = Object.keys(samples);
for (let r = 0; r < RUNS; r++) {
  // Rotate which goes first so none always runs on a warmer machine.
  const order = names.map((_, i) => names[(i + r) % names.length]);
  for (const who of order) samples[who].push(time(...tools[who]).ms);
}
closeSync(devNull);
rmSync(dir, { recursive: true, force: true });

const median = (xs) => {
  const s = [...xs].sort((x, y) => x - y);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const lines = generate(false).split('\n').length;
const labels = {
  proxyd: 'proxyd validate           ',
  'proxyd-json': 'proxyd parse + JSON stdout',
  caddy: 'caddy adapt               ',
};
const medians = Object.fromEntries(names.map((n) => [n, median(samples[n])]));
console.log(`Proxyfile: ${SITES} sites (${lines} lines), ${RUNS} runs each, rotating order, whole processes`);
console.log(`  (caddy adapt: ${caddyRoutes} routes; stdout to /dev/null in timed runs)`);
for (const n of names) {
  console.log(
    `  ${labels[n]}  median ${medians[n].toFixed(0)} ms  stdout ${(outputBytes[n] / 1e6).toFixed(2)} MB  (samples ${samples[n].map((x) => x.toFixed(0)).join(' ')})`,
  );
}
const c = medians.caddy;
for (const n of ['proxyd', 'proxyd-json']) {
  const ratio = medians[n] / c;
  console.log(`  ratio ${n}/caddy: ${ratio.toFixed(2)}  (${ratio <= 1 ? 'proxyd no slower' : 'proxyd SLOWER'})`);
}
