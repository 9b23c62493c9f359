// bench/shutdown: SIGTERM under wrk load (issue 20).
//
//   pnpm build && node bench/shutdown/run.mjs        (or: pnpm bench shutdown)
//   ROUNDS=1 WORKERS=1 GRACE=5 node bench/shutdown/run.mjs
//   PROXYD_CHECKOUT=../before node bench/shutdown/run.mjs   (another checkout's build: a before/after)
//
// For each worker mode (`--workers 1`, then the daemon's default of one per
// CPU) and each round, it starts the built daemon on free loopback ports in
// front of an upstream (in this process) that answers after UPSTREAM_DELAY_MS,
// so that ~50 requests are in flight at any moment; puts it under
// `wrk -t2 -c50` for LOAD s; LEAD s in, starts one 20 MB download that the
// upstream streams at 10 MB/s, then sends SIGTERM to the daemon, and reads:
//
// - failed requests: wrk's read and timeout errors and non-2xx answers,
//   over the whole run: a request that was sent and not answered (a read
//   error is a connection that closed or reset while wrk waited for its
//   answer). wrk's connect and write errors are not failures: they are the
//   connections it opens, as fast as it can, after the listener closed; the
//   kernel refuses them before any request is sent (wrk connects without
//   blocking, so most refusals surface on its first write), as with nginx's
//   and Caddy's graceful stops;
// - the download: whether all of its bytes arrived;
// - exit: SIGTERM → the daemon's exit, and its exit code.
//
// Goals (issue 20): zero failed requests, the download whole, exit within
// grace + 1 s (GRACE, the Proxyfile's `grace_period`, default 5 s). A goal
// missed: exit 1. Loopback only; every process is stopped and the temp dir
// removed however the run ends; each phase has a time bound.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchSession } from '../lib/session.mjs';

const MAIN = process.env.PROXYD_CHECKOUT
  ? path.join(path.resolve(process.env.PROXYD_CHECKOUT), 'apps/proxyd/dist/main.js')
  : fileURLToPath(new URL('../../apps/proxyd/dist/main.js', import.meta.url));
const ROUNDS = Number(process.env.ROUNDS ?? 3);
// 0: the daemon's default (one worker per CPU).
const WORKERS = (process.env.WORKERS ?? '1,0').split(',').map(Number);
const GRACE = Number(process.env.GRACE ?? 5);
const LOAD = Number(process.env.LOAD ?? GRACE + 6);
const LEAD = Number(process.env.LEAD ?? 3);
const UPSTREAM_DELAY_MS = Number(process.env.UPSTREAM_DELAY_MS ?? 10);
const DOWNLOAD_BYTES = 20 * 1024 * 1024;
const DOWNLOAD_RATE = 10 * 1024 * 1024; // bytes per second
const START_TIMEOUT_MS = 60_000;

for (const [what, ok] of [
  ['the built daemon (pnpm build)', existsSync(MAIN)],
  ['wrk (apt-get install wrk)', spawnOk('wrk', ['-v'])],
]) {
  if (!ok) {
    console.error(`bench/shutdown needs ${what}`);
    process.exit(2);
  }
}

function spawnOk(cmd, args) {
  return spawnSync(cmd, args, { stdio: 'ignore' }).error === undefined;
}

const session = benchSession('shutdown');

/** The upstream: `/` after UPSTREAM_DELAY_MS; `/download` streams DOWNLOAD_BYTES at DOWNLOAD_RATE. */
async function startUpstream() {
  const chunk = Buffer.alloc(64 * 1024, 'x');
  const server = http.createServer((req, res) => {
    if (req.url === '/download') {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': DOWNLOAD_BYTES });
      let sent = 0;
      const perTick = Math.round(DOWNLOAD_RATE / 50); // every 20 ms
      const timer = setInterval(() => {
        let budget = perTick;
        while (budget > 0 && sent < DOWNLOAD_BYTES) {
          const n = Math.min(chunk.length, budget, DOWNLOAD_BYTES - sent);
          res.write(n === chunk.length ? chunk : chunk.subarray(0, n));
          sent += n;
          budget -= n;
        }
        if (sent >= DOWNLOAD_BYTES) {
          clearInterval(timer);
          res.end();
        }
      }, 20);
      res.on('close', () => clearInterval(timer));
      return;
    }
    setTimeout(() => res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n'), UPSTREAM_DELAY_MS);
  });
  server.keepAliveTimeout = 120_000;
  const port = await session.freePort();
  await new Promise((resolve) => server.listen(port, '127.0.0.1', resolve));
  return { port, close: () => new Promise((resolve) => server.close(resolve)) };
}

async function startProxyd(workers, upstreamPort) {
  const httpPort = await session.freePort();
  const httpsPort = await session.freePort();
  const adminPort = await session.freePort();
  const dir = path.join(session.dir, `proxyd-${Date.now()}`);
  const config = path.join(session.dir, `Proxyfile-${httpPort}`);
  await writeFile(
    config,
    `{\n\thttp_port ${httpPort}\n\thttps_port ${httpsPort}\n\tadmin 127.0.0.1:${adminPort}\n\tauto_https off\n\tdocker off\n\tgrace_period ${GRACE}s\n\tdefault_bind 127.0.0.1\n}\n\nhttp://shutdown.bench.test {\n\tanalytics off\n\treverse_proxy 127.0.0.1:${upstreamPort}\n}\n`,
  );
  const args = [MAIN, 'run', '--config', config, '--state-dir', dir, '--cert-dir', path.join(dir, 'certs')];
  if (workers > 0) args.push('--workers', String(workers));
  const child = session.start('proxyd', process.execPath, args, { PROXY_LOG: 'warn' });
  const exited = new Promise((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal, at: performance.now() })),
  );
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    if (Date.now() > deadline) throw new Error(`proxyd did not start:\n${child.output()}`);
    const ok = await get(httpPort, '/').then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return { child, httpPort, exited };
}

function get(port, p) {
  return new Promise((resolve, reject) => {
    const req = http.get(
      { host: '127.0.0.1', port, path: p, headers: { host: 'shutdown.bench.test' }, agent: false },
      (res) => {
        let bytes = 0;
        res.on('data', (c) => {
          bytes += c.length;
        });
        res.on('end', () => resolve({ status: res.statusCode, bytes, complete: res.complete }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.setTimeout(60_000, () => req.destroy(new Error('timeout')));
  });
}

/** wrk's summary: requests, errors by kind, non-2xx. */
function wrk(port) {
  return new Promise((resolve, reject) => {
    const p = spawn(
      'wrk',
      ['-t2', '-c50', `-d${LOAD}s`, '--timeout', '10s', '-H', 'Host: shutdown.bench.test', `http://127.0.0.1:${port}/`],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    session.children.push(p);
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (out += d));
    p.on('exit', (code, signal) => {
      if (code !== 0) return reject(new Error(`wrk exited ${code ?? signal}:\n${out}`));
      const n = (re) => Number(re.exec(out)?.[1] ?? 0);
      const errors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
      resolve({
        requests: n(/(\d+) requests in/),
        connect: Number(errors?.[1] ?? 0),
        read: Number(errors?.[2] ?? 0),
        write: Number(errors?.[3] ?? 0),
        timeout: Number(errors?.[4] ?? 0),
        non2xx: n(/Non-2xx or 3xx responses: (\d+)/),
        out,
      });
    });
  });
}

// Linux resets the connections queued on a closing SO_REUSEPORT listener
// unless net.ipv4.tcp_migrate_req hands them to the group's others: with
// several workers that is the difference (see the README). MIGRATE=1 turns
// it on for this run (root), MIGRATE=0 off; it is put back at the end.
const MIGRATE_FILE = '/proc/sys/net/ipv4/tcp_migrate_req';
const migrateBefore = existsSync(MIGRATE_FILE) ? readFileSync(MIGRATE_FILE, 'utf8').trim() : 'n/a';
if (process.env.MIGRATE !== undefined && migrateBefore !== 'n/a') {
  writeFileSync(MIGRATE_FILE, `${process.env.MIGRATE}\n`);
  process.on('exit', () => writeFileSync(MIGRATE_FILE, `${migrateBefore}\n`));
}
const migrate = existsSync(MIGRATE_FILE) ? readFileSync(MIGRATE_FILE, 'utf8').trim() : 'n/a';

const upstream = await startUpstream();
console.log(
  `bench/shutdown: wrk -t2 -c50 -d${LOAD}s, SIGTERM at ${LEAD} s, grace_period ${GRACE}s, upstream answers after ${UPSTREAM_DELAY_MS} ms; ` +
    `a ${DOWNLOAD_BYTES / 1024 / 1024} MB download at ${DOWNLOAD_RATE / 1024 / 1024} MB/s in flight; ${ROUNDS} round(s); ` +
    `net.ipv4.tcp_migrate_req = ${migrate}`,
);
const rows = [];
let missed = 0;
for (const workers of WORKERS) {
  for (let round = 1; round <= ROUNDS; round++) {
    const proxyd = await startProxyd(workers, upstream.port);
    const load = wrk(proxyd.httpPort);
    await new Promise((r) => setTimeout(r, (LEAD - 0.5) * 1000));
    const download = get(proxyd.httpPort, '/download').catch((err) => ({ status: 0, bytes: 0, error: err.message }));
    await new Promise((r) => setTimeout(r, 500));
    const signalled = performance.now();
    proxyd.child.kill('SIGTERM');
    const exit = await Promise.race([
      proxyd.exited,
      new Promise((r) => setTimeout(() => r(null), (GRACE + 10) * 1000)),
    ]);
    if (exit === null) proxyd.child.kill('SIGKILL');
    const [w, d] = await Promise.all([load, download]);
    const exitMs = exit === null ? Number.POSITIVE_INFINITY : exit.at - signalled;
    const failed = w.read + w.timeout + w.non2xx;
    const row = {
      mode: workers === 0 ? 'default workers' : `--workers ${workers}`,
      round,
      requests: w.requests,
      failed,
      refused: w.connect + w.write,
      download: d.bytes === DOWNLOAD_BYTES ? 'whole' : `${(d.bytes / 1024 / 1024).toFixed(1)} MB`,
      exitMs,
      code: exit?.code ?? 'killed',
    };
    rows.push(row);
    const ok = failed === 0 && d.bytes === DOWNLOAD_BYTES && exitMs <= (GRACE + 1) * 1000 && exit?.code === 0;
    if (!ok) {
      missed++;
      console.log(`  missed: ${JSON.stringify(row)}\n${w.out}`);
    }
    console.log(
      `  ${row.mode.padEnd(16)} round ${round}: ${w.requests} requests, ${failed} failed ` +
        `(read ${w.read}, timeout ${w.timeout}, non-2xx ${w.non2xx}), ${w.connect + w.write} connects refused after close, ` +
        `download ${row.download}, exit ${exitMs.toFixed(0)} ms after SIGTERM (code ${row.code})`,
    );
  }
}
await upstream.close();

console.log('\n| mode | round | requests | failed | refused after close | 20 MB download | SIGTERM → exit |');
console.log('|---|---|---|---|---|---|---|');
for (const r of rows) {
  console.log(
    `| ${r.mode} | ${r.round} | ${r.requests} | ${r.failed} | ${r.refused} | ${r.download} | ${r.exitMs.toFixed(0)} ms (exit ${r.code}) |`,
  );
}
console.log(
  `\ngoals: 0 failed requests, the download whole, exit ≤ ${(GRACE + 1) * 1000} ms: ${missed === 0 ? 'met' : `missed in ${missed} run(s)`}`,
);
await session.shutdown(missed === 0 ? 0 : 1);
