// Fleet routes (issue 31): the time from a POST /routes on one node to the
// route being served on every node of a three-node fleet on one Redis.
//
// Usage (one command, bounded: ~30 s plus the three starts; nothing off loopback):
//
//   pnpm build && nice -n 19 node bench/fleet/write-reach.mjs      (env WRITES, default 60, at most 150)
//
// Starts Debian's redis-server (nothing persisted) and three built proxyd
// nodes (apps/proxyd/dist/main.js), each bound to its own loopback address
// (127.0.0.2, .3, .4) with the same HTTP port, `auto_https off`, and
// `storage redis` with the same key prefix: the layout of
// tests-e2e/fleet-routes.test.ts. One upstream on 127.0.0.1. Write i goes to
// node i % 3 (alternately over its admin TCP listener and its Unix socket:
// each has its own 60-a-minute window, spec §8), one write at a time; from
// the moment it is sent, each of the three nodes is asked for the new
// domain every ~1 ms (keep-alive) until it answers 200 from the upstream.
// Reported, p50 / p99 / max over the writes:
//   - ack:    the write's 201 (the writer routes it then: Redis, then its own data plane);
//   - others: the later of the two other nodes serving it;
//   - all:    every node serving it (the number the "within a second" is about).
// Goal (issue 31): every node serves a write within 1 s, so `all`'s max under 1,000 ms; the run prints whether
// it is met. This is the speed target: tests-e2e/fleet-routes.test.ts checks only that the nodes follow the
// log blocked in XREAD (Redis wakes them) and bounds a reach by a hang, as a starved machine takes seconds.
//
// Latest numbers (28 Nov 2026, the shared 2-core VM at load average ~5.5,
// Node 24.21, `nice -n 19`, WRITES=150; the run with WRITES=60 gave p50 8-12 ms,
// p99 ~155 ms):
//
//   | measure | p50     | p99     | max      |
//   | ------- | ------- | ------- | -------- |
//   | ack     | 11.4 ms | 80.3 ms | 89.2 ms  |
//   | others  | 13.2 ms | 91.9 ms | 157.6 ms |
//   | all     | 14.1 ms | 91.9 ms | 157.6 ms |
//
// The tail is the shared machine (the three nodes, Redis and this loop on two
// cores beside other runs), not Redis: a write is one EVALSHA and each
// follower wakes from XREAD BLOCK at once.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchSession } from '../lib/session.mjs';

const WRITES = Math.min(Number(process.env.WRITES ?? 60), 150);
const MAIN = fileURLToPath(new URL('../../apps/proxyd/dist/main.js', import.meta.url));
const TOKEN = 'bench-fleet-admin-token-0123456789';
const NODES = ['127.0.0.2', '127.0.0.3', '127.0.0.4'];
/** Issue 31's goal: a write served by every node within this, ms. */
const GOAL_MS = 1000;
/** A poll or write that takes longer than this fails the run (bounded). */
const GIVE_UP_MS = 10_000;

const session = benchSession('fleet');

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function request(options, body) {
  return new Promise((resolve, reject) => {
    const req = http.request(options, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => {
        text += c;
      });
      res.on('end', () => resolve({ status: res.statusCode, body: text }));
    });
    req.setTimeout(GIVE_UP_MS, () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(body);
  });
}

/** The admin call of write `i`: TCP with the token on even rounds of its node, the Unix socket on odd ones. */
function adminWrite(node, i, method, urlPath, payload) {
  const body = payload === undefined ? undefined : JSON.stringify(payload);
  const headers = body === undefined ? {} : { 'content-type': 'application/json' };
  const viaSocket = Math.floor(i / 3) % 2 === 1;
  return request(
    viaSocket
      ? { socketPath: node.socket, method, path: urlPath, headers }
      : {
          host: '127.0.0.1',
          port: node.adminPort,
          method,
          path: urlPath,
          headers: { ...headers, authorization: `Bearer ${TOKEN}` },
        },
    body,
  );
}

async function startRedis() {
  const port = await session.freePort();
  session.start('redis-server', 'redis-server', [
    ...['--port', String(port), '--bind', '127.0.0.1', '--dir', session.dir],
    ...['--save', '', '--appendonly', 'no'],
  ]);
  for (let i = 0; ; i++) {
    try {
      if (
        execFileSync('redis-cli', ['-p', String(port), 'PING'], {
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'ignore'],
        }).trim() === 'PONG'
      )
        return port;
    } catch {}
    if (i > 100) throw new Error('redis-server did not answer within 10 s');
    await sleep(100);
  }
}

async function startNode(index, httpPort, redisPort) {
  const address = NODES[index];
  const adminPort = await session.freePort();
  const dir = path.join(session.dir, `node-${index}`);
  const config = `${dir}.Proxyfile`;
  const socket = `${dir}.sock`;
  writeFileSync(
    config,
    [
      '{',
      `\thttp_port ${httpPort}`,
      `\tadmin 127.0.0.1:${adminPort}`,
      '\tauto_https off',
      `\tdefault_bind ${address}`,
      `\tstorage redis redis://127.0.0.1:${redisPort} {`,
      '\t\tkey_prefix bench',
      '\t}',
      '}',
      '',
    ].join('\n'),
  );
  const child = session.start(
    `proxyd ${address}`,
    process.execPath,
    [MAIN, 'run', '--config', config, '--state-dir', `${dir}-state`, '--admin-socket', socket, '--no-docker'],
    { PROXY_ADMIN_TOKEN: TOKEN, PROXY_LOG: 'warn' },
  );
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const started = Date.now();
  for (;;) {
    const ok = await request({ host: '127.0.0.1', port: adminPort, path: '/health' }).then(
      (res) => res.status === 200 && JSON.parse(res.body).storage?.reachable === true,
      () => false,
    );
    if (ok) break;
    if (child.exitCode !== null) throw new Error(`proxyd ${address} exited:\n${child.output()}`);
    if (Date.now() - started > 60_000) throw new Error(`proxyd ${address} not ready within 60 s`);
    await sleep(50);
  }
  return { address, adminPort, socket, agent, httpPort };
}

/** Ms from `since` until `node` answers `host` with 200 and `expected`. */
async function servedAfter(node, host, expected, since) {
  for (;;) {
    const res = await request({
      host: node.address,
      port: node.httpPort,
      path: '/',
      headers: { host },
      agent: node.agent,
    });
    if (res.status === 200 && res.body === expected) return performance.now() - since;
    if (performance.now() - since > GIVE_UP_MS) throw new Error(`${node.address} did not serve ${host}: ${res.status}`);
    await sleep(1);
  }
}

function percentile(xs, p) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
}

async function main() {
  const redisPort = await startRedis();
  const upstream = http.createServer((_req, res) => res.end('bench upstream'));
  await new Promise((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const upstreamAddress = `127.0.0.1:${upstream.address().port}`;
  const httpPort = await session.freePort();
  const nodes = [];
  for (let i = 0; i < 3; i++) nodes.push(await startNode(i, httpPort, redisPort));
  // Every node follows the log (one XREAD connection each) before the first write is timed.
  for (let i = 0; ; i++) {
    const list = execFileSync('redis-cli', ['-p', String(redisPort), 'CLIENT', 'LIST'], { encoding: 'utf8' });
    if (list.split('\n').filter((l) => l.includes('cmd=xread')).length >= 3) break;
    if (i > 200) throw new Error('the nodes do not follow the log');
    await sleep(50);
  }
  const ack = [];
  const others = [];
  const all = [];
  for (let i = 0; i < WRITES; i++) {
    const writer = nodes[i % 3];
    const host = `w${i}.reach.test`;
    const since = performance.now();
    const write = adminWrite(writer, i, 'POST', '/routes', { domain: host, upstream: upstreamAddress, tls: false });
    const reach = nodes.map((node) => servedAfter(node, host, 'bench upstream', since));
    const res = await write;
    if (res.status !== 201) throw new Error(`write ${i} on ${writer.address}: ${res.status} ${res.body}`);
    ack.push(performance.now() - since);
    const times = await Promise.all(reach);
    all.push(Math.max(...times));
    others.push(Math.max(...times.filter((_, n) => nodes[n] !== writer)));
  }
  const row = (name, xs) =>
    `| ${name.padEnd(7)} | ${percentile(xs, 50).toFixed(1).padStart(6)} ms | ${percentile(xs, 99).toFixed(1).padStart(6)} ms | ${Math.max(
      ...xs,
    )
      .toFixed(1)
      .padStart(6)} ms |`;
  console.log(`RESULTS: ${WRITES} writes, 3 nodes, one redis-server, node ${process.version}`);
  console.log('| measure | p50       | p99       | max       |');
  console.log('| ------- | --------- | --------- | --------- |');
  console.log(row('ack', ack));
  console.log(row('others', others));
  console.log(row('all', all));
  const worst = Math.max(...all);
  console.log(`goal (every node serves a write within ${GOAL_MS} ms): ${worst < GOAL_MS ? 'met' : 'missed'}`);
  upstream.close();
  for (const node of nodes) node.agent.destroy();
  await session.shutdown(0);
}

main().catch((err) => {
  console.error(err);
  session.shutdown(1);
});
