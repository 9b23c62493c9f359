// bench/names, the start alone (issue 30): spawn the built daemon on a state
// file of N API routes and time GET /health and the first HTTPS answer, with
// the process tree's PSS at /health and at the end. Quicker than run.mjs (no
// writes, no coverage, no Caddy), for a before/after of the start path.
//
//   pnpm build && node bench/names/start.mjs                  # 100,000 routes, auto_https on
//   N=100000 AUTO_HTTPS=off WORKERS=1 node bench/names/start.mjs
//   PROXYD_CHECKOUT=../main node bench/names/start.mjs         # another build, for a before/after
//   HOLD_S=60 node bench/names/start.mjs                       # sample PSS for 60 s more (issuance)
//
// Every route proxies to 127.0.0.1:9 (nothing listens: the start does not
// need an upstream); the HTTPS probe accepts any status and any certificate
// (the first handshake served, not a verified chain: run.mjs checks that).
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';

const N = Number(process.env.N ?? 100_000);
const AUTO_HTTPS = process.env.AUTO_HTTPS ?? 'on';
const WORKERS = process.env.WORKERS;
const BOUND_MS = Number(process.env.BOUND_MS ?? 180_000);
/** Seconds to keep sampling after the start (the issuance going on), default 3. */
const HOLD_S = Number(process.env.HOLD_S ?? 3);
const CHECKOUT = process.env.PROXYD_CHECKOUT ?? path.resolve(import.meta.dirname, '../..');
const PROXYD = path.resolve(CHECKOUT, 'apps/proxyd/dist/main.js');
const [HTTP, HTTPS, ADMIN] = [
  20_080 + (process.pid % 1000),
  21_080 + (process.pid % 1000),
  22_080 + (process.pid % 1000),
];

const dir = mkdtempSync(path.join(tmpdir(), 'proxyd-start-'));
const stateDir = path.join(dir, 'state');
mkdirSync(stateDir, { mode: 0o700 });
const names = Array.from({ length: N }, (_, i) => `s${i}.names.test`).sort();
const lines = names.map((domain) => JSON.stringify({ domain, upstream: '127.0.0.1:9', tls: false, source: null }));
writeFileSync(path.join(stateDir, 'routes.json'), `{"format":"proxyd-routes/1","routes":[\n${lines.join(',\n')}\n]}\n`);
const auto = AUTO_HTTPS === 'on' ? '' : `\tauto_https ${AUTO_HTTPS}\n`;
writeFileSync(
  path.join(dir, 'Proxyfile'),
  `{\n\thttp_port ${HTTP}\n\thttps_port ${HTTPS}\n\tadmin 127.0.0.1:${ADMIN}\n${auto}}\n`,
);

/** PSS of `pid` and its descendants, MB. */
function pss(pid) {
  return perProcess(pid).reduce((a, b) => a + b, 0);
}

/** PSS of `pid` and of each descendant, MB (the primary first). */
function perProcess(pid) {
  const mbs = [];
  const visit = (p) => {
    try {
      mbs.push(
        Math.round(Number(/^Pss:\s+(\d+)/m.exec(readFileSync(`/proc/${p}/smaps_rollup`, 'utf8'))?.[1] ?? 0) / 1024),
      );
      for (const t of readdirSync(`/proc/${p}/task`)) {
        for (const c of readFileSync(`/proc/${p}/task/${t}/children`, 'utf8').split(' ').filter(Boolean)) visit(c);
      }
    } catch {}
  };
  visit(pid);
  return mbs;
}

const readdirSafe = (folder) => {
  try {
    return readdirSync(folder).length;
  } catch {
    return 0;
  }
};

const status = (mod, options) =>
  new Promise((resolve) => {
    const req = mod.get({ ...options, timeout: 2000 }, (res) => {
      res.resume();
      resolve(res.statusCode);
    });
    req.on('error', () => resolve(null));
    req.on('timeout', () => req.destroy());
  });

const t0 = performance.now();
const child = spawn(
  process.execPath,
  [
    PROXYD,
    'run',
    '--config',
    path.join(dir, 'Proxyfile'),
    '--state-dir',
    stateDir,
    '--cert-dir',
    path.join(dir, 'certs'),
    '--no-docker',
    ...(WORKERS ? ['--workers', WORKERS] : []),
  ],
  {
    env: { ...process.env, PROXY_ADMIN_TOKEN: 'bench-token-0123456789', PROXY_LOG: 'warn' },
    stdio: ['ignore', 'ignore', 'inherit'],
  },
);
const seconds = () => ((performance.now() - t0) / 1000).toFixed(1);
const wait = (ms) => new Promise((r) => setTimeout(r, ms));
let peak = 0;
let peakAt = [];
const sampler = setInterval(() => {
  const now = perProcess(child.pid);
  const sum = now.reduce((a, b) => a + b, 0);
  if (sum > peak) [peak, peakAt] = [sum, now];
}, 500);
try {
  while ((await status(http, { host: '127.0.0.1', port: ADMIN, path: '/health' })) !== 200) {
    if (child.exitCode !== null || performance.now() - t0 > BOUND_MS)
      throw new Error(`no /health (exit ${child.exitCode})`);
    await wait(50);
  }
  console.log(
    `${N} routes, auto_https ${AUTO_HTTPS}, workers ${WORKERS ?? 'default'}: GET /health at ${seconds()} s, PSS ${pss(child.pid)} MB`,
  );
  if (AUTO_HTTPS !== 'off') {
    const probe = {
      host: '127.0.0.1',
      port: HTTPS,
      path: '/',
      servername: names[0],
      headers: { host: names[0] },
      rejectUnauthorized: false,
    };
    while ((await status(https, probe)) === null) {
      if (child.exitCode !== null || performance.now() - t0 > BOUND_MS) throw new Error('no HTTPS answer');
      await wait(200);
    }
    console.log(`first HTTPS answer (${names[0]}) at ${seconds()} s`);
  }
  await wait(HOLD_S * 1000);
  const issued = path.join(dir, 'certs/certificates/local');
  if (AUTO_HTTPS !== 'off') console.log(`${readdirSafe(issued)} certificates issued at ${seconds()} s`);
  console.log(
    `PSS now ${pss(child.pid)} MB (${perProcess(child.pid).join(' + ')}), peak ${peak} MB (${peakAt.join(' + ')})`,
  );
} finally {
  clearInterval(sampler);
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  rmSync(dir, { recursive: true, force: true });
}
