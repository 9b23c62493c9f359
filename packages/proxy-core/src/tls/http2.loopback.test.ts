import { readFileSync } from 'node:fs';
import http2 from 'node:http2';
import net, { type AddressInfo } from 'node:net';
import tls from 'node:tls';
import type { RouteSpec } from '@proxyd/model';
import { describe, expect, it } from 'vitest';
import type { ProxyServerOptions } from '../data-plane/proxy-server.js';
import type { RequestRecord } from '../hooks.js';
import { onCleanup, selfSigned, site, siteProxy, until, upstream, wait } from '../loopback.test-helpers.js';
import { MemoryCertificateStore } from './certificate-store.js';
import { h2Request, h2Session } from './tls-client.test-helpers.js';

/** A ProxyServer with an HTTPS listener holding a certificate for every route's domain; its HTTPS port. */
async function httpsProxy(
  routes: RouteSpec[],
  options: Omit<ProxyServerOptions, 'routes' | 'certificates' | 'compileSite'> = {},
) {
  const store = new MemoryCertificateStore();
  for (const route of routes) {
    const files = selfSigned([route.domain]);
    store.set(route.domain, { cert: readFileSync(files.cert), key: readFileSync(files.key) });
  }
  const { server } = await siteProxy(routes, { ...options, certificates: store });
  const { port } = await server.listenHttps(0);
  return { server, port };
}

/** An upstream that answers every request with the raw bytes `answer` and keeps the connection open. */
async function rawUpstream(answer: string): Promise<number> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    socket.on('data', (chunk) => {
      if (chunk.includes('\r\n\r\n')) socket.write(answer);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  onCleanup(
    () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  );
  return (server.address() as AddressInfo).port;
}

/** An HTTP/1.1 request over TLS (ALPN `http/1.1`) on a new connection; the raw answer. */
function h1OverTls(port: number, host: string, path = '/'): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect(
      { port, host: '127.0.0.1', servername: host, ALPNProtocols: ['http/1.1'], rejectUnauthorized: false },
      () => {
        socket.write(`GET ${path} HTTP/1.1\r\nhost: ${host}\r\nconnection: close\r\n\r\n`);
      },
    );
    let data = '';
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => {
      data += c;
    });
    socket.on('end', () => resolve(data));
    socket.on('error', reject);
  });
}

const FORBIDDEN = ['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te'];

describe('HTTP/2 on the HTTPS listener', () => {
  it('serves h2 and http/1.1 on one listener, translates :authority to Host and records the protocol', async () => {
    const up = await upstream((req, res) => res.end(`hello ${req.headers['x-forwarded-proto']} ${req.httpVersion}`));
    const records: RequestRecord[] = [];
    const { port } = await httpsProxy([site('a.test', [up.port])], {
      hooks: { onRequest: (r) => records.push(r) },
    });
    const session = h2Session(port, 'a.test');
    for (let i = 0; i < 3; i++) {
      const reply = await h2Request(port, { servername: 'a.test', path: `/p${i}?q=1`, session });
      expect(reply).toMatchObject({ status: 200, body: 'hello https 1.1', alpn: 'h2' });
      expect(reply.headers['strict-transport-security']).toMatch(/max-age=/);
    }
    const seen = up.seen[0];
    expect(seen?.url).toBe('/p0?q=1');
    expect(seen?.headers.host).toBe(`a.test:${port}`);
    expect(seen?.headers['x-forwarded-host']).toBe(`a.test:${port}`);
    expect(seen?.raw.filter((_v, i) => i % 2 === 0 && (seen.raw[i] as string).startsWith(':'))).toEqual([]);
    expect(seen?.raw[0]).toBe('host');
    // Three h2 requests, one keep-alive upstream connection.
    expect(up.connections.size).toBe(1);

    const h1 = await h1OverTls(port, 'a.test', '/old');
    expect(h1).toMatch(/^HTTP\/1\.1 200 /);
    expect(h1).toMatch(/hello https 1\.1$/);
    session.close();
    await wait(50);
    expect(records.map((r) => [r.path, r.protocol, r.status])).toEqual([
      ['/p0', 'h2', 200],
      ['/p1', 'h2', 200],
      ['/p2', 'h2', 200],
      ['/old', 'h1', 200],
    ]);
    expect(records[0]?.bytesSent).toBe('hello https 1.1'.length);
  });

  it('serves h2 on a TLS site port as on the https_port', async () => {
    const up = await upstream();
    const routes = [site('a.test', [up.port])];
    const { server } = await httpsProxy(routes);
    const probe = net.createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const sitePort = (probe.address() as AddressInfo).port;
    await new Promise<void>((r) => probe.close(() => r()));
    server.setRoutes({ routes, version: 2, changes: null }, new Map([['a.test', sitePort]]));
    await server.listenSitePort(sitePort, '127.0.0.1', true);
    expect(await h2Request(sitePort, { servername: 'a.test' })).toMatchObject({
      status: 200,
      body: 'hello',
      alpn: 'h2',
    });
  });

  it('issue 18: an upstream answering Connection: Upgrade, Upgrade: h2c, Proxy-Connection, Transfer-Encoding gives an h2 client a clean response', async () => {
    const upPort = await rawUpstream(
      'HTTP/1.1 200 OK\r\nConnection: Upgrade, Keep-Alive, X-Hop\r\nUpgrade: h2c\r\nProxy-Connection: keep-alive\r\n' +
        'Keep-Alive: timeout=5\r\nTE: gzip\r\nX-Hop: 1\r\nX-Kept: yes\r\nContent-Type: text/plain\r\n' +
        'Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n',
    );
    const { port } = await httpsProxy([site('a.test', [upPort])]);
    const reply = await h2Request(port, { servername: 'a.test' });
    expect(reply.status).toBe(200);
    expect(reply.body).toBe('hello world');
    expect(reply.headers['x-kept']).toBe('yes');
    for (const name of [...FORBIDDEN, 'x-hop']) expect(reply.headers[name]).toBeUndefined();
    // The same upstream over HTTP/1.1 on the same listener.
    const h1 = await h1OverTls(port, 'a.test');
    expect(h1).toMatch(/^HTTP\/1\.1 200 /);
    expect(h1).not.toMatch(/\r\n(upgrade|proxy-connection|x-hop):/i);
  });

  it('drops forbidden headers set by the data plane itself (502 with Connection: close, header ops)', async () => {
    const closed = net.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const deadPort = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const up = await upstream();
    const ops = site('ops.test', [up.port], (s) => {
      s.header = [
        { op: 'set', name: 'Connection', value: 'close' },
        { op: 'set', name: 'Upgrade', value: 'h2c' },
        { op: 'set', name: 'X-Site', value: 'on' },
      ];
    });
    const { port } = await httpsProxy([site('dead.test', [deadPort]), ops]);
    const bad = await h2Request(port, { servername: 'dead.test' });
    expect(bad.status).toBe(502);
    expect(bad.headers.connection).toBeUndefined();
    const reply = await h2Request(port, { servername: 'ops.test' });
    expect(reply).toMatchObject({ status: 200, body: 'hello' });
    expect(reply.headers['x-site']).toBe('on');
    for (const name of FORBIDDEN) expect(reply.headers[name]).toBeUndefined();
  });

  it('joins split cookie fields into one Cookie line upstream and leaves CONNECT to Node (405)', async () => {
    const up = await upstream();
    const { port } = await httpsProxy([site('a.test', [up.port])]);
    const reply = await h2Request(port, { servername: 'a.test', headers: { cookie: ['a=1', 'b=2'] } });
    expect(reply.status).toBe(200);
    const raw = up.seen[0]?.raw ?? [];
    const cookies = raw.filter((_v, i) => i % 2 === 1 && (raw[i - 1] as string).toLowerCase() === 'cookie');
    expect(cookies).toEqual(['a=1; b=2']);
    const session = h2Session(port, 'a.test');
    const connect = await new Promise<number>((resolve, reject) => {
      const stream = session.request({ ':method': 'CONNECT', ':authority': 'a.test:443' });
      stream.on('response', (h) => resolve(Number(h[':status'])));
      stream.on('error', reject);
    });
    // Node's compat layer answers a CONNECT stream itself (no 'connect' listener): the data plane never sees it.
    expect(connect).toBe(405);
    expect(up.seen.length).toBe(1);
  });

  it('streams an h2 request body without Content-Length upstream as chunked', async () => {
    const up = await upstream((req, res) => {
      let body = '';
      req.on('data', (c) => {
        body += c;
      });
      req.on('end', () => res.end(`${req.method} ${req.headers['transfer-encoding']} ${body}`));
    });
    const { port } = await httpsProxy([site('a.test', [up.port])]);
    const reply = await h2Request(port, { servername: 'a.test', method: 'POST', body: 'payload' });
    expect(reply).toMatchObject({ status: 200, body: 'POST chunked payload' });
    const sized = await h2Request(port, {
      servername: 'a.test',
      method: 'PUT',
      body: 'abc',
      headers: { 'content-length': '3' },
    });
    expect(sized).toMatchObject({ status: 200, body: 'PUT undefined abc' });
  });

  it('keeps WebSockets on HTTP/1.1: an upgrade over TLS (ALPN http/1.1) reaches the upstream and echoes', async () => {
    const up = await upstream();
    up.server.on('upgrade', (_req, socket: net.Socket) => {
      socket.write('HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\n\r\n');
      socket.on('data', (chunk) => socket.write(chunk));
    });
    const { port } = await httpsProxy([site('a.test', [up.port])]);
    const socket = tls.connect({
      port,
      host: '127.0.0.1',
      servername: 'a.test',
      ALPNProtocols: ['http/1.1'],
      rejectUnauthorized: false,
    });
    socket.on('error', () => {});
    onCleanup(() => {
      socket.destroy();
    });
    await new Promise<void>((r) => socket.once('secureConnect', () => r()));
    socket.write(
      'GET /ws HTTP/1.1\r\nhost: a.test\r\nconnection: Upgrade\r\nupgrade: websocket\r\n' +
        'sec-websocket-version: 13\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
    );
    let data = '';
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => {
      data += c;
    });
    await until(() => data.includes('\r\n\r\n'));
    expect(data).toMatch(/^HTTP\/1\.1 101 /);
    socket.write('ping');
    await until(() => data.endsWith('ping'));
  });

  it('refuses a header list over maxHeaderListSize on both protocols; the session goes on', async () => {
    const up = await upstream();
    const { port } = await httpsProxy([site('a.test', [up.port])], { http2: { maxHeaderListSize: 4096 } });
    const session = h2Session(port, 'a.test');
    // The limit holds once the client acknowledged the server's SETTINGS (RFC 9113 §6.5.3): one exchange first.
    expect(await h2Request(port, { servername: 'a.test', session })).toMatchObject({ status: 200 });
    const big = await new Promise<string>((resolve) => {
      const stream = session.request({ ':path': '/', ':authority': 'a.test', 'x-big': 'a'.repeat(8000) });
      stream.on('response', (h) => resolve(`status ${h[':status']}`));
      stream.on('error', () => {});
      stream.on('close', () => resolve(`closed ${stream.rstCode}`));
      stream.resume();
    });
    // The server resets the stream with ENHANCE_YOUR_CALM before the data plane sees it.
    expect(big).toBe(`closed ${http2.constants.NGHTTP2_ENHANCE_YOUR_CALM}`);
    expect(up.urls).toEqual(['/']);
    expect(await h2Request(port, { servername: 'a.test', session })).toMatchObject({ status: 200 });
    const h1 = await new Promise<string>((resolve, reject) => {
      const socket = tls.connect({ port, host: '127.0.0.1', servername: 'a.test', rejectUnauthorized: false }, () =>
        socket.write(`GET / HTTP/1.1\r\nhost: a.test\r\nx-big: ${'a'.repeat(8000)}\r\n\r\n`),
      );
      let data = '';
      socket.on('data', (c) => {
        data += c;
      });
      socket.on('close', () => resolve(data));
      socket.on('error', reject);
    });
    expect(h1).toMatch(/^HTTP\/1\.1 431 /);
    console.info(`header list over the limit: h2 ${big}, h1 ${h1.split('\r\n')[0]}`);
  });

  it('closes an idle session and cancels an idle stream', async () => {
    const up = await upstream(() => {
      // Never answers: the stream stays idle.
    });
    const { port } = await httpsProxy([site('a.test', [up.port])], {
      http2: { sessionIdleMs: 300, streamIdleMs: 300 },
      idleTimeoutMs: 10_000,
    });
    const idle = h2Session(port, 'a.test');
    const goaway = new Promise<number>((r) => idle.once('goaway', (code) => r(code)));
    await new Promise<void>((r) => idle.once('connect', () => r()));
    expect(await goaway).toBe(0);

    const session = h2Session(port, 'a.test');
    const stream = session.request({ ':path': '/slow', ':authority': 'a.test' });
    stream.on('error', () => {});
    stream.resume();
    await new Promise<void>((r) => stream.once('close', () => r()));
    expect(stream.rstCode).toBe(http2.constants.NGHTTP2_CANCEL);
  });

  it('cancels a request body still arriving after the request timeout, not a slow upstream', async () => {
    const bodies: string[] = [];
    const up = await upstream((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (c: string) => {
        body += c;
      });
      req.on('end', () => {
        bodies.push(body);
        // The slow upstream: answers 600 ms after the whole body arrived.
        setTimeout(() => res.end(`got ${body.length}`), 600);
      });
      req.on('error', () => {});
    });
    const { port } = await httpsProxy([site('a.test', [up.port])], {
      // Idle timeouts well above the trickle's 100 ms gaps: only the request timeout can end it.
      http2: { requestTimeoutMs: 400, streamIdleMs: 10_000 },
      idleTimeoutMs: 10_000,
    });
    const session = h2Session(port, 'a.test');
    // A slowloris body: a byte every 100 ms, never ended.
    const slow = session.request({ ':path': '/upload', ':method': 'POST', ':authority': 'a.test' });
    slow.on('error', () => {});
    slow.resume();
    const trickle = setInterval(() => {
      if (!slow.closed) slow.write('x');
    }, 100);
    const started = Date.now();
    await new Promise<void>((r) => slow.once('close', () => r()));
    clearInterval(trickle);
    const after = Date.now() - started;
    expect(slow.rstCode).toBe(http2.constants.NGHTTP2_CANCEL);
    expect(after).toBeGreaterThanOrEqual(350);
    expect(bodies).toEqual([]);

    // A whole body sent at once, then an upstream slower than the timeout: answered.
    const whole = session.request({ ':path': '/upload', ':method': 'POST', ':authority': 'a.test' });
    whole.end('y'.repeat(10));
    let text = '';
    whole.setEncoding('utf8');
    whole.on('data', (c: string) => {
      text += c;
    });
    await new Promise<void>((r) => whole.once('close', () => r()));
    expect(whole.rstCode).toBe(http2.constants.NGHTTP2_NO_ERROR);
    expect(text).toBe('got 10');
    session.close();
  });

  it('a drain sends GOAWAY: the stream in flight finishes, the session closes, drain ends with it', async () => {
    const up = await upstream((_req, res) => setTimeout(() => res.end('slow done'), 300));
    const { server, port } = await httpsProxy([site('a.test', [up.port])]);
    const session = h2Session(port, 'a.test');
    const goaway = new Promise<void>((r) => session.once('goaway', () => r()));
    const stream = session.request({ ':path': '/slow', ':authority': 'a.test' });
    let body = '';
    stream.setEncoding('utf8');
    stream.on('data', (c: string) => {
      body += c;
    });
    const ended = new Promise<void>((r) => stream.once('close', () => r()));
    await new Promise((r) => setTimeout(r, 50));
    const started = Date.now();
    const drained = server.drain(5000);
    await goaway;
    await ended;
    expect(body).toBe('slow done');
    expect(stream.rstCode).toBe(http2.constants.NGHTTP2_NO_ERROR);
    await drained;
    expect(Date.now() - started).toBeLessThan(1500);
  });
});
