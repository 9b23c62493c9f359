// bench/memory: what proxyd costs in memory (PSS over its whole process
// tree) idle and after 10 s of load, with default workers and with
// --workers 1, and Caddy beside it (issue 32).
//
//   pnpm build && node bench/memory/run.mjs      (or: pnpm bench memory)
//   ONLY="proxyd,caddy" node bench/memory/run.mjs
//   PROXYD_ARGS="--spare" node bench/memory/run.mjs        extra flags for both proxyd targets
//   PROXYD_NODE_ARGS="--max-semi-space-size=1" node bench/memory/run.mjs   Node flags for proxyd (its workers inherit them)
//
// Needs the built daemon, wrk, nginx (the upstream) and caddy. Each target
// runs alone (started, measured, stopped before the next), so no two
// targets share pages and PSS is what the target's own tree costs. Idle:
// IDLE_MS (3000) after the first request answered. After load: right after
// `wrk -t1 -c50 -d10s` on a 30-byte body through the target. Per process:
// PSS and USS (Private_Clean + Private_Dirty) from /proc/<pid>/smaps_rollup;
// proxyd's processes are told apart by their log lines (primary, each
// serving worker, the spare when there is one).
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchSession, treePids } from '../lib/session.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
// PROXYD_MAIN: another build of the daemon, e.g. the npm package's bundle (dist/npm/dist/main.js).
const PROXYD = process.env.PROXYD_MAIN ?? path.join(root, 'apps/proxyd/dist/main.js');
const IDLE_MS = Number(process.env.IDLE_MS ?? 3000);
const LOAD_S = Number(process.env.LOAD_S ?? 10);
const ONLY = process.env.ONLY?.split(',');
const PROXYD_ARGS = (process.env.PROXYD_ARGS ?? '').split(' ').filter(Boolean);
const NODE_ARGS = (process.env.PROXYD_NODE_ARGS ?? '').split(' ').filter(Boolean);
const HOST = 'bench.local';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const run = benchSession('memory');
const { dir } = run;
// nginx workers may run as nobody: they must read the file served.
chmodSync(dir, 0o755);

/** PSS and USS of one process, MB; null once it is gone. */
function smaps(pid) {
  try {
    const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    const kb = (field) => Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? 0);
    return { pss: kb('Pss') / 1024, uss: (kb('Private_Clean') + kb('Private_Dirty')) / 1024 };
  } catch {
    return null;
  }
}

/** CPU seconds (user + system) used so far by each live process of the tree. */
function treeCpu(pid) {
  const m = new Map();
  for (const p of treePids(pid)) {
    try {
      const s = readFileSync(`/proc/${p}/stat`, 'utf8');
      const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
      m.set(p, (Number(f[11]) + Number(f[12])) / 100);
    } catch {}
  }
  return m;
}

/** Every process of the target's tree with its role and memory. */
function reading(target) {
  const procs = [];
  for (const pid of treePids(target.child.pid)) {
    const m = smaps(pid);
    if (m === null) continue;
    const role = pid === target.child.pid ? 'root' : (target.roles.get(pid) ?? 'spare');
    procs.push({ pid, role, ...m });
  }
  const sum = (k) => procs.reduce((a, p) => a + p[k], 0);
  return { procs, pss: sum('pss'), uss: sum('uss') };
}

/** Whether `GET /small` with the bench Host answers 200 (fetch would not send that Host). */
function answers(port) {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/small', headers: { host: HOST }, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode === 200));
    });
    req.setTimeout(5000, () => req.destroy());
    req.on('error', () => resolve(false));
  });
}

async function waitFor(name, port, child, ms = 60_000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await answers(port)) return;
    if (child.exitCode !== null) break;
    await sleep(200);
  }
  throw new Error(`${name} does not answer on ${port}:\n${child.output().slice(-2000)}`);
}

function wrk(port) {
  return new Promise((resolve, reject) => {
    const p = run.start('wrk', 'wrk', [
      '-t1',
      '-c50',
      `-d${LOAD_S}s`,
      '-H',
      `Host: ${HOST}`,
      `http://127.0.0.1:${port}/small`,
    ]);
    p.removeAllListeners('exit'); // the session's "exited early" report: wrk is meant to end
    p.on('exit', (code) => {
      const out = p.output();
      if (code !== 0) return reject(new Error(`wrk exited ${code}:\n${out}`));
      resolve({
        rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? Number.NaN),
        requests: Number(/(\d+) requests in/.exec(out)?.[1] ?? Number.NaN),
      });
    });
  });
}

async function stop(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.removeAllListeners('exit'); // the session's "exited early" report: this stop is planned
  const gone = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await gone;
  clearTimeout(timer);
}

// --- the upstream: one nginx worker serving a 30-byte file ----------------------
const upPort = await run.freePort();
writeFileSync(path.join(dir, 'small'), `${'x'.repeat(29)}\n`);
writeFileSync(
  path.join(dir, 'upstream.conf'),
  `daemon off; worker_processes 1; pid ${dir}/upstream.pid; error_log ${dir}/upstream.err warn;
events { worker_connections 4096; }
http { access_log off; client_body_temp_path ${dir}/b; proxy_temp_path ${dir}/p; fastcgi_temp_path ${dir}/f;
  uwsgi_temp_path ${dir}/u; scgi_temp_path ${dir}/s; keepalive_requests 1000000;
  server { listen 127.0.0.1:${upPort}; root ${dir}; location / { default_type text/plain; } } }
`,
);
const upstream = run.start('upstream', 'nginx', ['-c', path.join(dir, 'upstream.conf'), '-p', dir]);
await waitFor('upstream', upPort, upstream);

// --- the targets -------------------------------------------------------------------
async function caddy() {
  const port = await run.freePort();
  writeFileSync(
    path.join(dir, 'Caddyfile'),
    `{\n\tadmin off\n\tauto_https off\n}\n\nhttp://:${port} {\n\tbind 127.0.0.1\n\treverse_proxy 127.0.0.1:${upPort}\n}\n`,
  );
  const child = run.start(
    'caddy',
    'caddy',
    ['run', '--config', path.join(dir, 'Caddyfile'), '--adapter', 'caddyfile'],
    {
      HOME: dir,
      XDG_DATA_HOME: dir,
      XDG_CONFIG_HOME: dir,
    },
  );
  return { child, port, roles: new Map() };
}

async function proxyd(name, workers) {
  const port = await run.freePort();
  const admin = await run.freePort();
  const conf = path.join(dir, name.replaceAll(' ', '-'));
  const file = `${conf}.Proxyfile`;
  writeFileSync(
    file,
    `{\n\thttp_port ${port}\n\tauto_https off\n\tadmin 127.0.0.1:${admin}\n}\n\nhttp://${HOST} {\n\treverse_proxy 127.0.0.1:${upPort}\n}\n`,
  );
  const args = ['run', '--config', file, '--state-dir', `${conf}-state`, '--cert-dir', `${conf}-certs`, '--no-docker'];
  if (workers !== null) args.push('--workers', String(workers));
  const env = { PROXY_ADMIN_TOKEN: 'bench-token-bench-token-bench-token' };
  const child = run.start(name, process.execPath, [...NODE_ARGS, PROXYD, ...args, ...PROXYD_ARGS], env);
  // Which child serves: "worker N serving" names its pid (the pool's spare, if any, never says it).
  const roles = new Map();
  let partial = '';
  child.stdout.on('data', (d) => {
    const lines = (partial + d).split('\n');
    partial = lines.pop();
    for (const line of lines) {
      const m = /"worker":(\d+),"pid":(\d+).*"msg":"worker \d+ serving"/.exec(line);
      if (m) roles.set(Number(m[2]), `worker ${m[1]}`);
    }
  });
  const end = Date.now() + 60_000;
  while (!child.output().includes('proxyd ready') && Date.now() < end && child.exitCode === null) await sleep(100);
  return { child, port, roles };
}

const TARGETS = [
  ['caddy', caddy],
  [`proxyd`, () => proxyd('proxyd', null)],
  ['proxyd w1', () => proxyd('proxyd w1', 1)],
].filter(([name]) => !ONLY || ONLY.includes(name));

const fmt = (x) => x.toFixed(1);
const results = [];
for (const [name, startTarget] of TARGETS) {
  const target = await startTarget();
  await waitFor(name, target.port, target.child);
  await sleep(IDLE_MS);
  const idle = reading(target);
  const before = treeCpu(target.child.pid);
  const { rps, requests } = await wrk(target.port);
  const after = treeCpu(target.child.pid);
  const loaded = reading(target);
  let cpu = 0;
  for (const [p, t] of after) cpu += t - (before.get(p) ?? t);
  const cpuUs = (cpu * 1e6) / requests;
  await stop(target.child);
  results.push({ name, idle, loaded, rps, cpuUs });
  const per = (r) =>
    r.procs.map((p) => `${p.role === 'root' ? 'primary' : p.role} ${fmt(p.pss)}/${fmt(p.uss)}`).join(', ');
  console.log(
    `${name}: idle ${fmt(idle.pss)} MB PSS (${per(idle)}); after load ${fmt(loaded.pss)} (${per(loaded)}); ${Math.round(rps)} req/s, ${fmt(cpuUs)} µs CPU a request`,
  );
}

console.log(
  `\nNode ${process.version}, ${availableParallelism()} CPUs; PSS / USS in MB over the process tree; idle ${IDLE_MS} ms after the first answer, after load: right after wrk -t1 -c50 -d${LOAD_S}s${PROXYD_ARGS.length ? `; proxyd ${PROXYD_ARGS.join(' ')}` : ''}${NODE_ARGS.length ? `; node ${NODE_ARGS.join(' ')}` : ''}\n`,
);
console.log(
  '| target | processes | PSS idle | PSS after load | USS idle | USS after load | largest process idle / after load (PSS) | CPU µs/request |',
);
console.log('| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const { name, idle, loaded, cpuUs } of results) {
  const roles = idle.procs.map((p) => (p.role === 'root' ? 'primary' : p.role.replace(/ \d+$/, ''))).join('+');
  const big = (r) => Math.max(...r.procs.map((p) => p.pss));
  console.log(
    `| ${name} | ${idle.procs.length > 1 ? roles : '1'} | ${fmt(idle.pss)} | ${fmt(loaded.pss)} | ${fmt(idle.uss)} | ${fmt(loaded.uss)} | ${fmt(big(idle))} / ${fmt(big(loaded))} | ${fmt(cpuUs)} |`,
  );
}
await run.shutdown(0);
