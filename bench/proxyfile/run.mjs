// Parse + compile speed of a large config, proxyd vs Caddy, as whole processes.
//
// Generates a 10,000-site Proxyfile and the equivalent Caddyfile (same site
// blocks, directives and upstreams; `basic_auth` is written `basicauth` for
// Caddy 2.6, and the bcrypt hashes are base64-wrapped as Caddy 2.6 wants, a
// form proxyd also reads), then times, alternating, in the same run:
//   node apps/proxyd/dist/main.js validate --config <Proxyfile>
//   caddy adapt --config <Caddyfile> --adapter caddyfile
// Each sample is one process from spawn to exit (startup included). Prints
// both medians and the ratio proxyd / caddy (below 1: proxyd is faster).
//
// Run: pnpm build && node bench/proxyfile/run.mjs
//   env BENCH_SITES (default 10000), BENCH_RUNS (samples per tool, default 9),
//   CADDY (default /usr/bin/caddy or caddy on PATH).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const SITES = Number(process.env.BENCH_SITES ?? 10_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 9);
const main = fileURLToPath(new URL('../../apps/proxyd/dist/main.js', import.meta.url));
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
      '\t\t\theader_up X-Site-Id "' + i + '"',
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

function time(cmd, args) {
  const start = process.hrtime.bigint();
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 1 << 30 });
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (r.status !== 0) {
    console.error(`${cmd} ${args.join(' ')} failed (${r.status}):\n${r.stderr.slice(0, 2000)}`);
    process.exit(1);
  }
  return { ms, stdout: r.stdout };
}

const proxydArgs = [main, 'validate', '--config', proxyfile];
const caddyArgs = ['adapt', '--config', caddyfile, '--adapter', 'caddyfile'];

// One warm-up each (page cache, lazy OS work), checked for the right output.
const first = time(process.execPath, proxydArgs);
const expected = `Valid configuration: ${SITES} sites, ${countUpstreams()} upstreams\n`;
if (first.stdout !== expected) {
  console.error(`unexpected proxyd output: ${JSON.stringify(first.stdout)}, expected ${JSON.stringify(expected)}`);
  process.exit(1);
}
time(caddy, caddyArgs);

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

const samples = { proxyd: [], caddy: [] };
for (let r = 0; r < RUNS; r++) {
  // Alternate which goes first so neither always runs on a warmer machine.
  const order = r % 2 === 0 ? ['proxyd', 'caddy'] : ['caddy', 'proxyd'];
  for (const who of order) {
    samples[who].push(who === 'proxyd' ? time(process.execPath, proxydArgs).ms : time(caddy, caddyArgs).ms);
  }
}
rmSync(dir, { recursive: true, force: true });

const median = (xs) => {
  const s = [...xs].sort((x, y) => x - y);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const p = median(samples.proxyd);
const c = median(samples.caddy);
const lines = generate(false).split('\n').length;
console.log(`Proxyfile: ${SITES} sites (${lines} lines), ${RUNS} runs each, alternating, whole processes`);
console.log(
  `  proxyd validate  median ${p.toFixed(0)} ms   (samples ${samples.proxyd.map((x) => x.toFixed(0)).join(' ')})`,
);
console.log(
  `  caddy adapt      median ${c.toFixed(0)} ms   (samples ${samples.caddy.map((x) => x.toFixed(0)).join(' ')})`,
);
console.log(`  ratio proxyd/caddy: ${(p / c).toFixed(2)}  (${p <= c ? 'proxyd no slower' : 'proxyd SLOWER'})`);
