import http from 'node:http';
import net, { type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, adminCall } from './support/admin.js';
import { type RunningProxyd, request, startProxyd, startUpstream } from './support/proxyd.js';

// The built daemon in front of real loopback upstreams: routing, X-Forwarded-*,
// pools with active health checks, the response cache and PURGE through the
// admin API, WebSockets.
describe('data plane (built daemon)', () => {
  let proxyd: RunningProxyd;
  let bHealthy = true;
  /** What upstream A received, health checks included. */
  const seen: { url: string; headers: http.IncomingHttpHeaders }[] = [];
  const ups: Awaited<ReturnType<typeof startUpstream>>[] = [];
  const upgraded = new Set<Socket>();

  beforeAll(async () => {
    const a = await startUpstream((req, res) => {
      seen.push({ url: req.url ?? '', headers: req.headers });
      if (req.url === '/health') return void res.end('ok');
      if (req.url?.startsWith('/cached')) {
        res.writeHead(200, { 'cache-control': 'public, max-age=60', 'content-type': 'text/plain' });
        return void res.end(`cached ${Date.now()}`);
      }
      res.end('A');
    });
    const b = await startUpstream((req, res) => {
      if (req.url === '/health') return void res.writeHead(bHealthy ? 200 : 503).end();
      res.end('B');
    });
    a.server.on('upgrade', (_req, socket: Socket) => {
      upgraded.add(socket);
      socket.write('HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\n\r\n');
      socket.on('data', (d) => socket.write(`echo:${d}`));
    });
    ups.push(a, b);
    proxyd = await startProxyd({
      env: { PROXY_ADMIN_TOKEN: ADMIN_TOKEN },
      sites: `http://app.test {
\treverse_proxy 127.0.0.1:${a.port}
\tcache
}

http://pool.test {
\treverse_proxy 127.0.0.1:${a.port} 127.0.0.1:${b.port} {
\t\thealth_uri /health
\t\thealth_interval 200ms
\t\thealth_timeout 150ms
\t}
}
`,
    });
  });

  afterAll(async () => {
    await proxyd?.stop();
    // The upstream's upgraded socket is no longer tracked by its HTTP server.
    for (const socket of upgraded) socket.destroy();
    for (const up of ups) await up.close();
  });

  it('answers an unknown host with 404 "no route for host"', async () => {
    const before = seen.length;
    const res = await request(proxyd.httpPort, { headers: { host: 'nobody.test' } });
    expect(res.status).toBe(404);
    expect(res.body).toBe('no route for host\n');
    // Not the count of requests: pool.test's health checks reach the same upstream every 200 ms.
    expect(seen.slice(before).filter((s) => s.headers.host === 'nobody.test')).toEqual([]);
  });

  it('forwards with X-Forwarded-* and the default security headers', async () => {
    const res = await request(proxyd.httpPort, {
      path: '/x',
      headers: { host: 'APP.test', 'x-forwarded-for': '6.6.6.6', connection: 'close' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toBe('A');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['x-frame-options']).toBeDefined();
    const h = seen.filter((s) => s.url === '/x').at(-1)?.headers ?? {};
    expect(h['x-forwarded-for']).toBe('127.0.0.1');
    expect(h['x-forwarded-proto']).toBe('http');
    expect(h['x-forwarded-host']).toBe('APP.test');
    expect(h.connection).toBe('keep-alive');
  });

  it('caches a public response and PURGE through the admin API evicts it', async () => {
    const first = await request(proxyd.httpPort, { path: '/cached?v=1', headers: { host: 'app.test' } });
    expect(first.headers['x-cache']).toBe('MISS');
    const second = await request(proxyd.httpPort, { path: '/cached?v=1', headers: { host: 'app.test' } });
    expect(second.headers['x-cache']).toBe('HIT');
    expect(second.body).toBe(first.body);
    const purge = await adminCall(proxyd.adminPort, 'PURGE', '/cache/app.test/cached?v=1');
    expect(purge.status).toBe(200);
    expect(JSON.parse(purge.body)).toEqual({ purged: true });
    const again = await adminCall(proxyd.adminPort, 'PURGE', '/cache/app.test/cached?v=1');
    expect(again.status).toBe(404);
    const third = await request(proxyd.httpPort, { path: '/cached?v=1', headers: { host: 'app.test' } });
    expect(third.headers['x-cache']).toBe('MISS');
  });

  it('takes a failing pool member out within one health interval and brings it back', async () => {
    const bodies = async () => {
      const out: string[] = [];
      for (let i = 0; i < 6; i++) out.push((await request(proxyd.httpPort, { headers: { host: 'pool.test' } })).body);
      return out;
    };
    expect(new Set(await bodies())).toEqual(new Set(['A', 'B']));
    bHealthy = false;
    await new Promise((r) => setTimeout(r, 350));
    expect(new Set(await bodies())).toEqual(new Set(['A']));
    bHealthy = true;
    await new Promise((r) => setTimeout(r, 350));
    expect(await bodies()).toContain('B');
  });

  it('relays a WebSocket upgrade', async () => {
    const socket = await new Promise<Socket>((resolve, reject) => {
      const req = http.request({
        port: proxyd.httpPort,
        headers: { host: 'app.test', connection: 'Upgrade', upgrade: 'websocket' },
      });
      req.on('upgrade', (_res, s: Socket) => resolve(s));
      req.on('error', reject);
      req.end();
    });
    const echoed = new Promise<string>((r) => socket.once('data', (d) => r(d.toString())));
    socket.write('ping');
    expect(await echoed).toBe('echo:ping');
    socket.destroy();
  });

  it('issue 28: answers a pipelined request before the 400 of a malformed one behind it, then closes', async () => {
    const reply = await rawExchange(
      proxyd.httpPort,
      'GET /pipelined HTTP/1.1\r\nhost: app.test\r\n\r\nGET /bad HTTP/1.1\r\nhost: app.test\r\nbad header: x\r\n\r\n',
    );
    expect(reply.closed).toBe(true);
    expect(reply.data).toMatch(
      /^HTTP\/1\.1 200 OK\r\n[\s\S]*?\r\n\r\nAHTTP\/1\.1 400 Bad Request\r\n[\s\S]*?connection: close\r\n\r\n$/i,
    );
    expect(seen.filter((s) => s.url === '/bad')).toEqual([]);
  });

  it('issue 28: refuses Transfer-Encoding gzip, chunked with 501 without reaching the upstream', async () => {
    const reply = await rawExchange(
      proxyd.httpPort,
      'POST /coded HTTP/1.1\r\nhost: app.test\r\ntransfer-encoding: gzip, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n',
    );
    expect(reply.closed).toBe(true);
    expect(reply.data).toMatch(/^HTTP\/1\.1 501 Not Implemented\r\n/);
    expect(seen.filter((s) => s.url === '/coded')).toEqual([]);
  });
});

/** Writes `bytes` in one write and reads until the daemon closes the connection (or 10 s pass). */
function rawExchange(port: number, bytes: string): Promise<{ data: string; closed: boolean }> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(bytes));
    let data = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ data, closed: false });
    }, 10_000);
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => {
      data += d;
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ data, closed: true });
    });
  });
}
