import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import net, { type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { emptySite, type RouteSpec, type Site } from '@proxyd/model';
import bcrypt from 'bcryptjs';
import { describe, expect, it } from 'vitest';
import {
  get,
  heldVerifier,
  onCleanup,
  type Reply,
  site,
  siteProxy,
  until,
  upstream,
  wait,
} from './loopback.test-helpers.js';

// The data plane end to end on loopback: the real ProxyServer with
// compileSite in front of real upstream servers.

function route(host: string, edit: (s: Site) => void): RouteSpec {
  const s = emptySite([{ scheme: 'http', host, port: null }]);
  edit(s);
  return { domain: host, origin: 'proxyfile', source: null, site: s };
}

describe('route swaps', () => {
  it('finishes a request in flight on the table it started with; the next request uses the new one', async () => {
    let release: () => void = () => {};
    const old = await upstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('old-start;');
      release = () => res.end('old-end');
    });
    const fresh = await upstream((_req, res) => res.end('new'));
    const { server, port } = await siteProxy([site('app.test', [old.port])]);
    const inFlight = get(port, 'app.test', '/slow');
    await until(() => old.seen.length === 1, 5_000);
    // A new Site object for the same domain: a new compiled site and pool; the old one is dropped.
    server.setRoutes({ routes: [site('app.test', [fresh.port])], version: 2, changes: null });
    const next = await get(port, 'app.test', '/after');
    expect(next.body).toBe('new');
    expect(fresh.urls).toEqual(['/after']);
    release();
    const first = await inFlight;
    expect(first.status).toBe(200);
    expect(first.body).toBe('old-start;old-end');
    expect(old.urls).toEqual(['/slow']);
  });
});

/**
 * A TCP listener nobody accepts from: it listens with a backlog of 1 in a
 * worker thread whose event loop is then blocked (Atomics.wait, no CPU), and
 * its accept queue is filled, so the kernel drops further SYNs and a connect
 * hangs until the client gives up — a real connect timeout on loopback.
 */
async function blackHole(): Promise<number> {
  const signal = new Int32Array(new SharedArrayBuffer(4));
  const worker = new Worker(
    `const { workerData, parentPort } = require('node:worker_threads');
const server = require('node:net').createServer();
server.listen({ port: 0, host: '127.0.0.1', backlog: 1 }, () => {
  parentPort.postMessage(server.address().port);
  Atomics.wait(workerData, 0, 0, 60000);
  server.close();
});`,
    { eval: true, workerData: signal },
  );
  const port = await new Promise<number>((resolve) => worker.once('message', resolve));
  const held: Socket[] = [];
  onCleanup(async () => {
    for (const s of held) s.destroy();
    Atomics.store(signal, 0, 1);
    Atomics.notify(signal, 0);
    await worker.terminate();
  });
  for (let i = 0; i < 16; i++) {
    const s = net.connect(port, '127.0.0.1');
    held.push(s);
    s.on('error', () => {});
    const connected = await Promise.race([
      new Promise<boolean>((r) => s.once('connect', () => r(true))),
      wait(300).then(() => false),
    ]);
    if (!connected) return port;
  }
  throw new Error('the accept queue never filled');
}

describe('upstream timeouts', () => {
  it('answers 504 "gateway timeout" when the upstream never completes the TCP handshake', async () => {
    const port = await blackHole();
    const { port: proxyPort } = await siteProxy([site('app.test', [port])], { connectTimeoutMs: 300 });
    const started = Date.now();
    const reply = await get(proxyPort, 'app.test');
    expect(reply.status).toBe(504);
    expect(reply.body).toBe('gateway timeout\n');
    expect(Date.now() - started).toBeGreaterThanOrEqual(280);
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it('answers 504 "gateway timeout" when the upstream accepts and never answers', async () => {
    const silent = await upstream(() => {});
    const { port } = await siteProxy([site('app.test', [silent.port])], { idleTimeoutMs: 300 });
    const reply = await get(port, 'app.test');
    expect(reply.status).toBe(504);
    expect(reply.body).toBe('gateway timeout\n');
    expect(silent.urls).toEqual(['/']);
  });
});

describe('active health checks', () => {
  it('takes a member whose process is down out within one interval and brings it back when it listens again', async () => {
    const a = await upstream((req, res) => res.end(req.url === '/health' ? 'ok' : 'A'));
    let b = await upstream((req, res) => res.end(req.url === '/health' ? 'ok' : 'B'));
    const bPort = b.port;
    const interval = 200;
    const { port } = await siteProxy([
      site('app.test', [a.port, bPort], (s) => {
        if (s.handler?.kind === 'reverse_proxy') {
          // Passive checks off: only the active probe may take B out.
          s.handler.health = { uri: '/health', interval_ms: interval, timeout_ms: 150, fail_duration_ms: 0 };
        }
      }),
    ]);
    const bodies = async (n: number) => {
      const out: string[] = [];
      for (let i = 0; i < n; i++) out.push((await get(port, 'app.test')).body);
      return out;
    };
    expect(new Set(await bodies(4))).toEqual(new Set(['A', 'B']));
    // B's process goes away: its port refuses connections.
    await b.close();
    await wait(interval + 150);
    expect(await bodies(6)).toEqual(['A', 'A', 'A', 'A', 'A', 'A']);
    // B comes back on the same port.
    b = await upstream((req, res) => res.end(req.url === '/health' ? 'ok' : 'B'), bPort);
    await wait(interval + 150);
    expect(await bodies(6)).toContain('B');
  });
});

describe('least_conn with real upstreams', () => {
  it('sends fewer new requests to a slow member than to a fast one', async () => {
    const slow = await upstream((_req, res) => {
      setTimeout(() => res.end('slow'), 250);
    });
    const fast = await upstream((_req, res) => res.end('fast'));
    const { port } = await siteProxy([
      site('app.test', [slow.port, fast.port], (s) => {
        if (s.handler?.kind === 'reverse_proxy') s.handler.lb_policy = 'least_conn';
      }),
    ]);
    const replies: Promise<Reply>[] = [];
    for (let i = 0; i < 20; i++) {
      replies.push(get(port, 'app.test', `/${i}`));
      await wait(15);
    }
    const bodies = (await Promise.all(replies)).map((r) => r.body);
    const toSlow = bodies.filter((b) => b === 'slow').length;
    expect(toSlow + bodies.filter((b) => b === 'fast').length).toBe(20);
    // Round robin would give the slow member 10; least_conn keeps it at the few that arrive while it is idle or tied.
    expect(toSlow).toBeGreaterThanOrEqual(1);
    expect(toSlow).toBeLessThanOrEqual(4);
  });
});

describe('rate_limit with distinct clients over a real listener', () => {
  const limited = (n: number) =>
    route('app.test', (s) => {
      s.rate_limit = n;
      s.handler = { kind: 'respond', status: 200, body: 'ok' };
    });

  it('admits n per second per forwarded client, exactly at the window edges', async () => {
    const clock = { t: 50_000 };
    const { port } = await siteProxy([limited(2)], { trustedProxies: ['127.0.0.1'] }, { now: () => clock.t });
    const from = async (ip: string) => (await get(port, 'app.test', '/', { 'x-forwarded-for': ip })).status;
    expect([await from('198.51.100.1'), await from('198.51.100.1'), await from('198.51.100.1')]).toEqual([
      200, 200, 429,
    ]);
    // Another client has its own allowance; the peer (127.0.0.1) itself is a third client.
    expect([await from('198.51.100.2'), await from('198.51.100.2'), await from('198.51.100.2')]).toEqual([
      200, 200, 429,
    ]);
    clock.t = 50_999; // last ms of the window
    expect(await from('198.51.100.1')).toBe(429);
    clock.t = 51_000; // next window: the previous one weighs 1 → 2 + 0 + 1 > 2
    expect(await from('198.51.100.1')).toBe(429);
    clock.t = 51_499; // 2 × 0.501 + 0 + 1 > 2
    expect(await from('198.51.100.1')).toBe(429);
    clock.t = 51_500; // 2 × 0.5 + 0 + 1 = 2
    expect(await from('198.51.100.1')).toBe(200);
    expect(await from('198.51.100.1')).toBe(429);
    clock.t = 53_000; // two windows later: forgotten
    expect([await from('198.51.100.1'), await from('198.51.100.1'), await from('198.51.100.1')]).toEqual([
      200, 200, 429,
    ]);
  });
});

describe('basic_auth under a flood of wrong passwords', () => {
  it('runs at most 2 verifications at once and 18 in all for 40 wrong passwords; the rest get 503 at once', async () => {
    const held = heldVerifier();
    const { port } = await siteProxy(
      [
        route('app.test', (s) => {
          s.basic_auth = {
            realm: 'r',
            users: [{ user: 'alice', hash: bcrypt.hashSync('wonderland', 4) }],
          };
          s.handler = { kind: 'respond', status: 200, body: 'secret' };
        }),
      ],
      {},
      { verifyPassword: held.verify },
    );
    const answered: Reply[] = [];
    const flood = Array.from({ length: 40 }, (_, i) =>
      get(port, 'app.test', '/', {
        authorization: `Basic ${Buffer.from(`alice:guess-${i}`).toString('base64')}`,
      }).then((r) => {
        answered.push(r);
        return r;
      }),
    );
    // Those beyond 2 running and 16 waiting are answered without any verification.
    await until(() => answered.length === 22, 5_000);
    expect(held.calls).toBe(2);
    while (answered.length < 40) {
      held.releaseOne();
      await wait(5);
    }
    const replies = await Promise.all(flood);
    expect(held.calls).toBe(18);
    expect(held.peak).toBe(2);
    expect(replies.some((r) => r.status === 200 || r.body === 'secret')).toBe(false);
    // Checked and wrong: 401. Never checked (the gate was full): 503 with Retry-After, not a verdict.
    expect(replies.filter((r) => r.status === 401)).toHaveLength(18);
    const busy = replies.filter((r) => r.status === 503);
    expect(busy).toHaveLength(22);
    expect(busy.every((r) => r.headers['retry-after'] === '1' && r.headers['www-authenticate'] === undefined)).toBe(
      true,
    );
  });
});

// A regression test for the file_server open redirect, end to end through compileSite.
describe('file_server through compileSite', () => {
  it('redirects //evil.example (a directory under root) to /evil.example/, never off-site', async () => {
    const root = mkdtempSync(join(tmpdir(), 'proxyd-loopback-fs-'));
    onCleanup(() => rmSync(root, { recursive: true, force: true }));
    mkdirSync(join(root, 'evil.example'));
    const { port } = await siteProxy([route('app.test', (s) => (s.handler = { kind: 'file_server', root }))]);
    const reply = await get(port, 'app.test', '//evil.example');
    expect(reply.status).toBe(308);
    expect(reply.headers.location).toBe('/evil.example/');
  });
});
