// bench/cache: what a response-cache hit costs, in memory (one process, or
// a baseline build whose workers keep their own caches) and from the node's
// shared cache (issue 32: workers read bodies from files, the index in the
// primary).
//
//   pnpm build && node bench/cache/run.mjs
//   BASELINE=/path/to/other/checkout node bench/cache/run.mjs   (adds "w2 base": its build, same flags)
//   ROUNDS=3 DURATION=5 SIZES=30,4096,102400 node bench/cache/run.mjs
//   ONLY=micro node bench/cache/run.mjs                         (the in-process part alone)
//
// Needs the built daemon and wrk. Two parts:
// - micro: one hit's lookup and body in this process, ns: ResponseCache (a
//   Buffer in memory) against SharedCache (a file in /dev/shm, read at once
//   up to 64 KiB, asynchronously above), 200,000 hits per size.
// - e2e: wrk -t1 -c50 through the built daemon, every request a HIT
//   (checked), req/s and CPU µs per request of the daemon's process tree
//   (utime + stime over the run), medians over ROUNDS. Nothing is pinned: on
//   a shared machine compare within one run only.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../lib/session.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const DURATION = Number(process.env.DURATION ?? 5);
const SIZES = (process.env.SIZES ?? '30,4096,102400').split(',').map(Number);
const ONLY = process.env.ONLY?.split(',');
const TICKS = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim());

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

async function micro() {
  const { CacheRegistry, SharedCache } = await import('@proxyd/proxy-core');
  const dir = mkdtempSync(path.join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'bench-cache-'));
  const rows = [];
  try {
    for (const size of SIZES) {
      const config = { max_size_bytes: 64 * 1024 * 1024, ttl_ms: 600_000 };
      const site = { cache: config };
      const body = Buffer.alloc(size, 120);
      const now = Date.now();
      const response = {
        status: 200,
        headers: { 'content-type': 'text/plain', 'content-length': String(size) },
        body,
        storedAt: now,
        baseAge: 0,
        expiresAt: now + 600_000,
        size: size + 600,
      };
      const memory = new CacheRegistry().forSite(site, config);
      memory.set('bench.local/x', response);
      const open = (hotBytes) => {
        const shared = new SharedCache({
          dir,
          prefix: `bench${hotBytes}`,
          siteNumber: () => 1,
          link: { stored() {}, touched() {}, released() {} },
          hotBytes,
        });
        shared.retain(new Set([site]));
        const one = shared.forSite(site, config);
        one.set('bench.local/x', response);
        return { shared, one };
      };
      const { shared, one: sharedSite } = open(8 * 1024 * 1024);
      // No body kept in memory: every hit reads the file.
      const { shared: cold, one: coldSite } = open(0);
      // Wait for an asynchronous write (bodies over 64 KiB).
      for (let i = 0; i < 100 && coldSite.get('bench.local/x') === undefined; i++) {
        await new Promise((r) => setTimeout(r, 10));
      }
      const n = size > 64 * 1024 ? 20_000 : 200_000;
      const time = async (cache) => {
        const start = process.hrtime.bigint();
        for (let i = 0; i < n; i++) {
          const entry = cache.get('bench.local/x');
          const got = cache.body(entry);
          if (got === undefined) await new Promise((resolve) => cache.readBody(entry, resolve));
          else if (got === null) throw new Error('miss');
        }
        return Number(process.hrtime.bigint() - start) / n;
      };
      const m = [];
      const s = [];
      const c = [];
      for (let r = 0; r < 3; r++) {
        m.push(await time(memory));
        s.push(await time(sharedSite));
        c.push(await time(coldSite));
      }
      shared.close();
      cold.close();
      rows.push({ size, memory: median(m), shared: median(s), cold: median(c) });
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  console.log('\nmicro: one hit (lookup + body), ns, median of 3');
  console.log(
    '| body | memory (ResponseCache) | shared, as served (hot ≤ 16 KiB) | shared, from the file every time |',
  );
  console.log('| ---: | ---: | ---: | ---: |');
  for (const r of rows) {
    console.log(`| ${r.size} B | ${r.memory.toFixed(0)} | ${r.shared.toFixed(0)} | ${r.cold.toFixed(0)} |`);
  }
}

/** utime + stime (ticks) of `pid` and its descendants. */
function treeTicks(pid) {
  const parents = new Map();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      parents.set(Number(name), { ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]) });
    } catch {}
  }
  let total = 0;
  const walk = (p) => {
    total += parents.get(p)?.ticks ?? 0;
    for (const [child, info] of parents) if (info.ppid === p) walk(child);
  };
  walk(pid);
  return total;
}

function get(port, p) {
  return new Promise((resolve, reject) => {
    const req = http.get({ port, path: p, headers: { host: 'bench.local', connection: 'close' } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.headers['x-cache']));
    });
    req.on('error', reject);
  });
}

async function e2e() {
  const upstream = http.createServer((req, res) => {
    const size = Number(new URL(req.url, 'http://x').searchParams.get('size'));
    res.writeHead(200, { 'content-type': 'text/plain', 'cache-control': 'public, max-age=3600' });
    res.end(Buffer.alloc(size, 120));
  });
  await new Promise((r) => upstream.listen(0, '127.0.0.1', r));
  const upstreamPort = upstream.address().port;
  const targets = [
    { name: 'w1 memory', main: path.join(root, 'apps/proxyd/dist/main.js'), workers: 1 },
    { name: 'w2 shared', main: path.join(root, 'apps/proxyd/dist/main.js'), workers: 2 },
  ];
  if (process.env.BASELINE) {
    targets.push({
      name: 'w2 base',
      main: path.join(path.resolve(process.env.BASELINE), 'apps/proxyd/dist/main.js'),
      workers: 2,
    });
  }
  const results = new Map();
  for (let round = 0; round < ROUNDS; round++) {
    for (const target of targets) {
      const dir = mkdtempSync(path.join(tmpdir(), 'bench-cache-'));
      const port = await freePort();
      const admin = await freePort();
      const config = path.join(dir, 'Proxyfile');
      writeFileSync(
        config,
        `{\n\tauto_https off\n\thttp_port ${port}\n\tadmin 127.0.0.1:${admin}\n}\n\nhttp://bench.local {\n\tcache\n\treverse_proxy 127.0.0.1:${upstreamPort}\n}\n`,
      );
      const child = spawn(
        process.execPath,
        [
          target.main,
          'run',
          '--config',
          config,
          '--state-dir',
          path.join(dir, 'state'),
          '--cert-dir',
          path.join(dir, 'certs'),
          '--no-docker',
          '--workers',
          String(target.workers),
        ],
        { env: { ...process.env, PROXY_LOG: 'warn' }, stdio: 'ignore' },
      );
      try {
        for (let i = 0; i < 200; i++) {
          try {
            await get(port, '/ready?size=0');
            break;
          } catch {
            await new Promise((r) => setTimeout(r, 50));
          }
        }
        for (const size of SIZES) {
          const p = `/x?size=${size}`;
          // Filled on every worker (a baseline's workers each keep their own).
          for (let i = 0; i < 40; i++) await get(port, p);
          if ((await get(port, p)) !== 'HIT') throw new Error(`${target.name}: ${p} is not a HIT`);
          const before = treeTicks(child.pid);
          const out = execFileSync('wrk', ['-t1', '-c50', `-d${DURATION}s`, `http://127.0.0.1:${port}${p}`], {
            encoding: 'utf8',
          });
          const ticks = treeTicks(child.pid) - before;
          const total = Number(/(\d+) requests in/.exec(out)?.[1] ?? 0);
          const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? 0);
          const key = `${target.name} ${size}`;
          const list = results.get(key) ?? [];
          list.push({ rps, cpu: ((ticks / TICKS) * 1e6) / total });
          results.set(key, list);
        }
      } finally {
        if (child.exitCode === null && child.signalCode === null) {
          child.kill('SIGTERM');
          await new Promise((r) => child.once('exit', r));
        }
        rmSync(dir, { recursive: true, force: true });
      }
    }
  }
  upstream.close();
  console.log(`\ne2e: wrk -t1 -c50 -d${DURATION}s, every request a HIT, medians of ${ROUNDS}`);
  console.log(`| body | ${targets.map((t) => `${t.name} req/s | ${t.name} CPU µs/req`).join(' | ')} |`);
  console.log(`| ---: |${targets.map(() => ' ---: | ---: |').join('')}`);
  for (const size of SIZES) {
    const cells = targets.map((t) => {
      const list = results.get(`${t.name} ${size}`) ?? [];
      return `${median(list.map((r) => r.rps)).toFixed(0)} | ${median(list.map((r) => r.cpu)).toFixed(1)}`;
    });
    console.log(`| ${size} B | ${cells.join(' | ')} |`);
  }
}

if (!ONLY || ONLY.includes('micro')) await micro();
if (!ONLY || ONLY.includes('e2e')) await e2e();
