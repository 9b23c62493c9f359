import http from 'node:http';
import net, { type Socket } from 'node:net';
import { Transform } from 'node:stream';
import { describe, expect, it, vi } from 'vitest';
import type { RequestRecord } from '../hooks.js';
import { get, onCleanup, proxy, site, until, upstream, wait } from '../loopback.test-helpers.js';
import { ProxyServer } from './proxy-server.js';

describe('routing', () => {
  it('answers an unknown host with 404 and contacts no upstream', async () => {
    const up = await upstream();
    const { port } = await proxy([site('a.test', [up.port])]);
    const reply = await get(port, 'nope.test');
    expect(reply.status).toBe(404);
    expect(reply.body).toBe('no route for host\n');
    expect(up.seen).toHaveLength(0);
  });

  it('swaps tables atomically: new routes apply, old ones are gone', async () => {
    const a = await upstream((_q, s) => s.end('A'));
    const b = await upstream((_q, s) => s.end('B'));
    const { server, port } = await proxy([site('a.test', [a.port])]);
    expect((await get(port, 'a.test')).body).toBe('A');
    server.setRoutes({ routes: [site('b.test', [b.port])], version: 2, changes: null });
    expect((await get(port, 'b.test')).body).toBe('B');
    expect((await get(port, 'a.test')).status).toBe(404);
  });
});

describe('forwarding', () => {
  it('sets X-Forwarded-* from the real peer and ignores a spoofed X-Forwarded-For', async () => {
    const up = await upstream();
    const { port } = await proxy([site('a.test', [up.port])]);
    await get(port, 'A.test:1234', '/x?q=1', { 'x-forwarded-for': '6.6.6.6', 'x-forwarded-proto': 'https' });
    const h = up.seen[0]?.headers ?? {};
    expect(up.seen[0]?.url).toBe('/x?q=1');
    expect(h['x-forwarded-for']).toBe('127.0.0.1');
    expect(h['x-forwarded-proto']).toBe('http');
    expect(h['x-forwarded-host']).toBe('A.test:1234');
    expect(h.host).toBe('A.test:1234');
  });

  it('appends to X-Forwarded-For from a trusted proxy and reports its client IP', async () => {
    const up = await upstream();
    const records: RequestRecord[] = [];
    const { port } = await proxy([site('a.test', [up.port])], {
      trustedProxies: ['127.0.0.0/8'],
      hooks: { onRequest: (r) => records.push(r) },
    });
    await get(port, 'a.test', '/', { 'x-forwarded-for': '198.51.100.7' });
    expect(up.seen[0]?.headers['x-forwarded-for']).toBe('198.51.100.7, 127.0.0.1');
    await until(() => records.length === 1);
    expect(records[0]?.clientIp).toBe('198.51.100.7');
  });

  it('drops hop-by-hop headers both ways and keeps the upstream connection on Connection: close', async () => {
    const up = await upstream((_q, s) => {
      s.setHeader('keep-alive', 'timeout=99');
      s.setHeader('x-drop-me', '1');
      s.setHeader('connection', 'x-drop-me');
      s.end('ok');
    });
    const { port } = await proxy([site('a.test', [up.port])]);
    const first = await get(port, 'a.test', '/', { connection: 'close, x-secret', 'x-secret': 's', te: 'trailers' });
    expect(first.headers['x-drop-me']).toBeUndefined();
    expect(first.headers['keep-alive']).toBeUndefined();
    expect(first.headers.connection).toBe('close');
    await get(port, 'a.test', '/', { connection: 'close' });
    const [one, two] = up.seen;
    expect(one?.headers.connection).toBe('keep-alive');
    expect(one?.headers['x-secret']).toBeUndefined();
    expect(one?.headers.te).toBeUndefined();
    expect(two?.socket).toBe(one?.socket);
  });

  it('streams request and response bodies', async () => {
    const up = await upstream((req, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      req.pipe(res);
    });
    const { port } = await proxy([site('a.test', [up.port])]);
    const body = Buffer.alloc(3 * 1024 * 1024, 7);
    const echoed = await new Promise<number>((resolve, reject) => {
      const req = http.request({ port, method: 'POST', headers: { host: 'a.test' }, agent: false }, (res) => {
        let n = 0;
        res.on('data', (c: Buffer) => {
          n += c.length;
        });
        res.on('end', () => resolve(n));
      });
      req.on('error', reject);
      req.write(body.subarray(0, 1024));
      req.end(body.subarray(1024));
    });
    expect(echoed).toBe(body.length);
  });

  it('applies the transformResponse hook to the upstream body and editResponseHeaders first', async () => {
    const up = await upstream((_q, s) => {
      s.writeHead(200, { 'content-type': 'text/html', 'content-length': '13' });
      s.end('<body></body>');
    });
    const seenHeaders: http.OutgoingHttpHeaders[] = [];
    const { port } = await proxy([site('a.test', [up.port])], {
      hooks: {
        transformResponse(_ctx, _req, status, headers) {
          seenHeaders.push({ ...headers });
          if (status !== 200 || !String(headers['content-type']).startsWith('text/html')) return null;
          delete headers['content-length'];
          return new Transform({
            transform(chunk: Buffer, _e, cb) {
              cb(null, chunk.toString().replace('</body>', '<script>x</script></body>'));
            },
          });
        },
      },
    });
    const reply = await get(port, 'a.test');
    expect(reply.body).toBe('<body><script>x</script></body>');
    expect(reply.headers['x-content-type-options']).toBe('nosniff');
    expect(seenHeaders[0]?.['x-frame-options']).toBe('SAMEORIGIN');
  });

  it('hands one request record per finished request with status and bytes', async () => {
    const up = await upstream((_q, s) => s.writeHead(201, { 'content-type': 'text/plain' }).end('x'.repeat(1000)));
    const records: RequestRecord[] = [];
    const { port } = await proxy([site('a.test', [up.port])], { hooks: { onRequest: (r) => records.push(r) } });
    await get(port, 'a.test', '/p?x=1', { referer: 'http://r/', 'user-agent': 'ua' });
    await get(port, 'unknown.test');
    await until(() => records.length === 2);
    const [ok, unknown] = records;
    expect(ok).toMatchObject({ host: 'a.test', domain: 'a.test', path: '/p', status: 201, bytesSent: 1000 });
    expect(ok?.analytics).toBe(true);
    expect(ok).toMatchObject({ method: 'GET', referer: 'http://r/', userAgent: 'ua', contentType: 'text/plain' });
    expect(unknown).toMatchObject({ host: 'unknown.test', domain: null, analytics: false, status: 404, bytesSent: 18 });
  });

  it('answers 502 when the upstream is unreachable', async () => {
    const up = await upstream();
    await up.close();
    const { port } = await proxy([site('a.test', [up.port])]);
    const reply = await get(port, 'a.test');
    expect(reply.status).toBe(502);
    expect(reply.body).toBe('bad gateway\n');
  });

  it('answers 504 when the upstream does not answer in time', async () => {
    const up = await upstream(() => {});
    const { port } = await proxy([site('a.test', [up.port])], { idleTimeoutMs: 200 });
    const reply = await get(port, 'a.test');
    expect(reply.status).toBe(504);
    expect(reply.body).toBe('gateway timeout\n');
  });

  it('answers 504 on a reused keep-alive upstream socket too', async () => {
    let n = 0;
    const up = await upstream((_q, s) => {
      if (n++ === 0) s.end('first');
    });
    const { port } = await proxy([site('a.test', [up.port])], { idleTimeoutMs: 200 });
    expect((await get(port, 'a.test')).body).toBe('first');
    const second = await get(port, 'a.test');
    expect(second.status).toBe(504);
    expect(new Set(up.seen.map((s) => s.socket)).size).toBe(1);
  });

  it('answers 503 with Retry-After when no pool member is healthy', async () => {
    const up = await upstream();
    await up.close();
    const { port } = await proxy([site('a.test', [up.port])]);
    expect((await get(port, 'a.test')).status).toBe(502);
    const reply = await get(port, 'a.test');
    expect(reply.status).toBe(503);
    expect(Number(reply.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  });
});

describe('no socket leaks', () => {
  it('destroys the upstream socket when the client aborts mid-response', async () => {
    const up = await upstream((_q, s) => {
      s.writeHead(200);
      s.write('partial');
    });
    const { server, port } = await proxy([site('a.test', [up.port])]);
    for (let i = 0; i < 5; i++) {
      await new Promise<void>((resolve) => {
        const req = http.request({ port, headers: { host: 'a.test' }, agent: false }, (res) => {
          res.once('data', () => {
            req.destroy();
            resolve();
          });
        });
        req.on('error', () => {});
        req.end();
      });
    }
    await until(() => up.connections.size === 0 && server.forwarder.upstreamSocketCount() === 0);
  });

  it('destroys the client response when the upstream resets mid-body, and keeps no socket', async () => {
    const up = await upstream((req, res) => {
      res.writeHead(200, { 'content-length': '100' });
      res.write('0123456789');
      setTimeout(() => req.socket.destroy(), 20);
    });
    const { server, port } = await proxy([site('a.test', [up.port])]);
    for (let i = 0; i < 3; i++) {
      const outcome = await new Promise<string>((resolve) => {
        const req = http.request({ port, headers: { host: 'a.test' }, agent: false }, (res) => {
          res.on('data', () => {});
          res.on('end', () => resolve('end'));
          res.on('error', () => resolve('error'));
          res.on('aborted', () => resolve('aborted'));
        });
        req.on('error', () => resolve('error'));
        req.end();
      });
      expect(outcome).not.toBe('end');
    }
    await until(() => up.connections.size === 0 && server.forwarder.upstreamSocketCount() === 0);
  });

  it('reuses one upstream connection across sequential keep-alive requests', async () => {
    const up = await upstream();
    const { server, port } = await proxy([site('a.test', [up.port])]);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    onCleanup(() => agent.destroy());
    for (let i = 0; i < 20; i++) await get(port, 'a.test', '/', {}, agent);
    expect(new Set(up.seen.map((s) => s.socket)).size).toBe(1);
    expect(server.forwarder.upstreamSocketCount()).toBe(1);
  });
});

describe('websockets', () => {
  it('forwards an upgrade and relays bytes both ways', async () => {
    const up = await upstream();
    up.server.on('upgrade', (req, socket: Socket) => {
      socket.write(
        `HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\nx-saw-xff: ${req.headers['x-forwarded-for']}\r\n\r\n`,
      );
      socket.on('data', (d) => socket.write(`echo:${d}`));
    });
    const { port } = await proxy([site('a.test', [up.port])]);
    const { socket, headers } = await new Promise<{ socket: Socket; headers: http.IncomingHttpHeaders }>(
      (resolve, reject) => {
        const req = http.request({
          port,
          headers: { host: 'a.test', connection: 'Upgrade', upgrade: 'websocket' },
          agent: false,
        });
        req.on('upgrade', (res, s: Socket) => resolve({ socket: s, headers: res.headers }));
        req.on('error', reject);
        req.end();
      },
    );
    onCleanup(() => void socket.destroy());
    expect(headers['x-saw-xff']).toBe('127.0.0.1');
    const echoed = new Promise<string>((r) => socket.once('data', (d) => r(d.toString())));
    socket.write('ping');
    expect(await echoed).toBe('echo:ping');
  });

  it('refuses an upgrade for an unknown host', async () => {
    const { port } = await proxy([]);
    const status = await new Promise<number>((resolve) => {
      const req = http.request({ port, headers: { host: 'x.test', connection: 'Upgrade', upgrade: 'websocket' } });
      req.on('response', (res) => resolve(res.statusCode ?? 0));
      req.on('error', () => resolve(-1));
      req.end();
    });
    expect(status).toBe(404);
  });
});

describe('pools', () => {
  it('round-robins across members', async () => {
    const a = await upstream((_q, s) => s.end('A'));
    const b = await upstream((_q, s) => s.end('B'));
    const { port } = await proxy([site('a.test', [a.port, b.port])]);
    const bodies: string[] = [];
    for (let i = 0; i < 4; i++) bodies.push((await get(port, 'a.test')).body);
    expect(bodies).toEqual(['A', 'B', 'A', 'B']);
  });

  it('takes a dead member out within one health interval and brings it back', async () => {
    let bHealthy = true;
    const a = await upstream((q, s) => s.end(q.url === '/health' ? 'ok' : 'A'));
    const b = await upstream((q, s) => {
      if (q.url === '/health') s.writeHead(bHealthy ? 200 : 503).end();
      else s.end('B');
    });
    const interval = 150;
    const { port } = await proxy([
      site('a.test', [a.port, b.port], (s) => {
        if (s.handler?.kind === 'reverse_proxy') {
          s.handler.health = { uri: '/health', interval_ms: interval, timeout_ms: 100, fail_duration_ms: 10_000 };
        }
      }),
    ]);
    bHealthy = false;
    await wait(interval + 80);
    const out: string[] = [];
    for (let i = 0; i < 4; i++) out.push((await get(port, 'a.test')).body);
    expect(out).toEqual(['A', 'A', 'A', 'A']);
    bHealthy = true;
    await wait(interval + 80);
    const back: string[] = [];
    for (let i = 0; i < 4; i++) back.push((await get(port, 'a.test')).body);
    expect(back).toContain('B');
  });

  it('passively drops a member whose connection fails for fail_duration', async () => {
    const a = await upstream((_q, s) => s.end('A'));
    const dead = await upstream();
    await dead.close();
    const { port } = await proxy([
      site('a.test', [dead.port, a.port], (s) => {
        if (s.handler?.kind === 'reverse_proxy') s.handler.lb_policy = 'first';
      }),
    ]);
    expect((await get(port, 'a.test')).status).toBe(502);
    for (let i = 0; i < 3; i++) expect((await get(port, 'a.test')).body).toBe('A');
  });

  it('ip_hash keeps a client on one member; least_conn picks the idle one', async () => {
    const a = await upstream((_q, s) => s.end('A'));
    const b = await upstream((_q, s) => s.end('B'));
    const { port } = await proxy([
      site('h.test', [a.port, b.port], (s) => {
        if (s.handler?.kind === 'reverse_proxy') s.handler.lb_policy = 'ip_hash';
      }),
    ]);
    const seen = new Set<string>();
    for (let i = 0; i < 6; i++) seen.add((await get(port, 'h.test')).body);
    expect(seen.size).toBe(1);
  });
});

describe('reusePort', () => {
  it('lets two servers (two workers) bind one port; the kernel spreads connections over both', async () => {
    const up = await upstream((_req, res) => res.end('ok'));
    const first = await proxy([site('a.test', [up.port])], { reusePort: true, hooks: {} });
    const served = { first: 0, second: 0 };
    const second = new ProxyServer({
      routes: [site('a.test', [up.port])],
      reusePort: true,
      hooks: { onRequest: () => served.second++ },
    });
    onCleanup(() => second.close());
    await second.listen(first.port);
    // A third one without the option is refused the port, as before.
    const plain = new ProxyServer({ routes: [] });
    onCleanup(() => plain.close());
    await expect(plain.listen(first.port)).rejects.toMatchObject({ code: 'EADDRINUSE' });
    for (let i = 0; i < 40; i++) {
      const reply = await get(first.port, 'a.test');
      expect(reply.body).toBe('ok');
    }
    served.first = 40 - served.second;
    // A new connection per request (agent: false): both get a share.
    expect(served.second).toBeGreaterThan(0);
    expect(served.first).toBeGreaterThan(0);
  });
});

describe('active health checks', () => {
  it('start when the route is published, before any request, and stop when it goes', async () => {
    const probes: string[] = [];
    const up = await upstream((req, res) => {
      probes.push(req.url ?? '');
      res.end('ok');
    });
    const checked = site('a.test', [up.port]);
    if (checked.site.handler?.kind !== 'reverse_proxy') throw new Error('expected reverse_proxy');
    checked.site.handler.health.uri = '/healthz';
    checked.site.handler.health.interval_ms = 50;
    const { server } = await proxy([]);
    server.setRoutes({ routes: [checked], version: 2, changes: null });
    await until(() => probes.length >= 2, 2000);
    expect(new Set(probes)).toEqual(new Set(['/healthz']));
    server.setRoutes({ routes: [], version: 3, changes: null });
    const after = probes.length;
    await wait(200);
    expect(probes.length).toBeLessThanOrEqual(after + 1);
  });
});

describe('drain (graceful stop)', () => {
  it('answers requests in flight with Connection: close, closes idle keep-alive connections, refuses new ones', async () => {
    const up = await upstream((req, res) => {
      if (req.url === '/slow') setTimeout(() => res.end('slow done'), 300);
      else res.end('quick');
    });
    const { server, port } = await proxy([site('a.test', [up.port])]);
    const idleAgent = new http.Agent({ keepAlive: true });
    const agent = new http.Agent({ keepAlive: true });
    onCleanup(() => {
      idleAgent.destroy();
      agent.destroy();
    });
    // An idle keep-alive connection, and a request in flight on another.
    expect((await get(port, 'a.test', '/', {}, idleAgent)).body).toBe('quick');
    const idle = [...Object.values(idleAgent.freeSockets).flat()][0] as Socket;
    const idleClosed = new Promise<void>((r) => idle.once('close', () => r()));
    const inFlight = get(port, 'a.test', '/slow', {}, agent);
    await wait(50);
    const started = Date.now();
    const drained = server.drain(5000);
    await idleClosed;
    // Idle connections get 250 ms in which a client may still reuse them, then end.
    expect(Date.now() - started).toBeGreaterThanOrEqual(240);
    expect(Date.now() - started).toBeLessThan(600);
    const reply = await inFlight;
    expect(reply.body).toBe('slow done');
    expect(reply.headers.connection).toBe('close');
    await drained;
    // Done once the last response went out, not after the grace period.
    expect(Date.now() - started).toBeLessThan(1000);
    await expect(get(port, 'a.test', '/', {}, false)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });

  it('answers a request that reuses an idle keep-alive connection just after the drain began, as its last', async () => {
    // The race of every keep-alive close: the client sends on a connection
    // the server is about to end. wrk counted 31 read errors of it per
    // SIGTERM (bench/shutdown) while idle connections were ended at once.
    const up = await upstream((_req, res) => res.end('answered'));
    const { server, port } = await proxy([site('a.test', [up.port])]);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    onCleanup(() => agent.destroy());
    expect((await get(port, 'a.test', '/', {}, agent)).body).toBe('answered');
    const drained = server.drain(5000);
    await wait(20);
    const reply = await get(port, 'a.test', '/again', {}, agent);
    expect(reply.body).toBe('answered');
    expect(reply.headers.connection).toBe('close');
    await drained;
  });

  it('cuts what is still running when the grace period ends', async () => {
    const up = await upstream(() => {
      // Never answers.
    });
    const { server, port } = await proxy([site('a.test', [up.port])], { idleTimeoutMs: 60_000 });
    const hung = get(port, 'a.test', '/hang', {}, false).then(
      () => 'answered',
      (err: NodeJS.ErrnoException) => err.code,
    );
    await wait(50);
    const started = Date.now();
    await server.drain(300);
    const took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(280);
    expect(took).toBeLessThan(1500);
    expect(await hung).toBe('ECONNRESET');
  });
});

describe('Host lines (RFC 9112 §3.2)', () => {
  /** Writes a raw request; resolves the status line and whether the upstream saw anything. */
  const raw = (port: number, head: string) =>
    new Promise<string>((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1', () => socket.write(head));
      let text = '';
      socket.setEncoding('utf8');
      socket.on('data', (c: string) => {
        text += c;
      });
      socket.on('close', () => resolve(text));
      socket.on('error', reject);
    });

  it('answers 400 to an HTTP/1.1 request with two Host lines, or none; the upstream sees nothing', async () => {
    const up = await upstream((_req, res) => res.end('ok'));
    const { port } = await proxy([site('a.test', [up.port]), site('b.test', [up.port])]);
    const two = await raw(port, 'GET / HTTP/1.1\r\nHost: a.test\r\nHost: b.test\r\nConnection: close\r\n\r\n');
    expect(two.split('\r\n')[0]).toBe('HTTP/1.1 400 Bad Request');
    expect(two).toContain('a request needs exactly one Host header');
    const none = await raw(port, 'GET / HTTP/1.1\r\nConnection: close\r\n\r\n');
    expect(none.split('\r\n')[0]).toBe('HTTP/1.1 400 Bad Request');
    expect(up.urls).toEqual([]);
    // One Host line: served; HTTP/1.0 without one: not refused for it (no route: 404).
    const one = await raw(port, 'GET / HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n');
    expect(one.split('\r\n')[0]).toBe('HTTP/1.1 200 OK');
    const old = await raw(port, 'GET / HTTP/1.0\r\n\r\n');
    expect(old.split('\r\n')[0]).toBe('HTTP/1.1 404 Not Found');
  });
});

describe('issue 30: a route change costs what it changes', () => {
  it('replacing a route closes only its pool: the pools of the other routes are not walked', async () => {
    const up = await upstream((_q, s) => s.end('x'));
    const routes = Array.from({ length: 200 }, (_, i) => site(`s${i}.test`, [up.port]));
    const { server, port } = await proxy(routes);
    // Traffic compiles a pool per route it reaches.
    for (let i = 0; i < 5; i++) expect((await get(port, `s${i}.test`)).status).toBe(200);
    const retain = vi.spyOn(server.forwarder, 'retain');
    const release = vi.spyOn(server.forwarder, 'release');
    const replaced = site('s1.test', [up.port]);
    const next = [...routes.filter((r) => r.domain !== 's1.test'), replaced];
    server.setRoutes({
      routes: next,
      version: 2,
      changes: { base: new WeakRef(routes), upserted: [replaced], removed: [] },
    });
    expect(retain).not.toHaveBeenCalled();
    expect(release.mock.calls.map(([handlers]) => [...handlers])).toEqual([[routes[1]?.site.handler]]);
    expect((await get(port, 's0.test')).status).toBe(200);
    expect((await get(port, 's1.test')).status).toBe(200);
  });
});
