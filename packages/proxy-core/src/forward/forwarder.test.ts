import { randomBytes } from 'node:crypto';
import http from 'node:http';
import net, { type AddressInfo, type Socket } from 'node:net';
import bcrypt from 'bcryptjs';
import { describe, expect, it } from 'vitest';
import { get, onCleanup, proxy, rawExchange, site, until, upstream, wait } from '../loopback.test-helpers.js';
import { createSiteCompiler } from '../site-handler.js';

const siteCompiler = createSiteCompiler({ secret: randomBytes(32) });

describe('the upstream request head', () => {
  it('keeps the client lines as sent (case, repeats) without hop-by-hop, Expect or spoofed X-Forwarded-*', async () => {
    const up = await upstream();
    const { port } = await proxy([site('a.test', [up.port])]);
    const reply = await rawExchange(
      port,
      'GET /p?q=1 HTTP/1.1\r\nHost: a.test\r\nX-Custom: one\r\nx-custom: two\r\nConnection: keep-alive, X-Hop\r\n' +
        'X-Hop: secret\r\nKeep-Alive: timeout=5\r\nTE: trailers\r\nX-Forwarded-For: 6.6.6.6\r\n' +
        'X-Forwarded-Proto: ftp\r\nX-Forwarded-Host: evil.test\r\nUser-Agent: t\r\n\r\n',
      300,
    );
    expect(reply).toMatch(/^HTTP\/1\.1 200/);
    const [seen] = up.seen;
    const raw = seen?.raw ?? [];
    const pairs = [];
    for (let i = 0; i < raw.length; i += 2) pairs.push(`${raw[i]}: ${raw[i + 1]}`);
    expect(seen?.url).toBe('/p?q=1');
    expect(pairs).toContain('Host: a.test');
    expect(pairs.filter((p) => p.toLowerCase().startsWith('x-custom'))).toEqual(['X-Custom: one', 'x-custom: two']);
    expect(pairs).toContain('User-Agent: t');
    for (const gone of ['x-hop', 'keep-alive: timeout', 'te:', 'x-forwarded-for: 6', 'ftp', 'evil.test']) {
      expect(pairs.some((p) => p.toLowerCase().includes(gone))).toBe(false);
    }
    expect(seen?.headers['x-forwarded-for']).toBe('127.0.0.1');
    expect(seen?.headers['x-forwarded-proto']).toBe('http');
    expect(seen?.headers['x-forwarded-host']).toBe('a.test');
    expect(seen?.headers.connection).toBe('keep-alive');
  });

  // Issue 20: "a header spelled `X_Forwarded_For` is forwarded". Upstreams
  // that map header names to variables (CGI, PHP) read it as X-Forwarded-For.
  it('drops client header names with an underscore (nginx underscores_in_headers off), not its own X-Forwarded-*', async () => {
    const up = await upstream();
    const route = site('a.test', [up.port], (s) => {
      if (s.handler?.kind !== 'reverse_proxy') return;
      s.handler.header_up = [{ op: 'set', name: 'X_Operator', value: 'kept' }];
    });
    const { port } = await proxy([route]);
    const reply = await rawExchange(
      port,
      'GET / HTTP/1.1\r\nHost: a.test\r\nX_Forwarded_For: 6.6.6.6\r\nx_forwarded_proto: ftp\r\n' +
        'X-Real_IP: 6.6.6.6\r\n_: x\r\nMy-Header: kept\r\nConnection: close\r\n\r\n',
      300,
    );
    expect(reply).toMatch(/^HTTP\/1\.1 200/);
    const headers = up.seen[0]?.headers ?? {};
    expect(Object.keys(headers).filter((name) => name.includes('_'))).toEqual(['x_operator']);
    expect(headers.x_operator).toBe('kept');
    expect(headers['my-header']).toBe('kept');
    expect(headers['x-forwarded-for']).toBe('127.0.0.1');
    expect(headers['x-forwarded-proto']).toBe('http');
    expect(headers['x-forwarded-host']).toBe('a.test');
  });

  it('applies header_up set, add and delete after the client lines', async () => {
    const up = await upstream();
    const route = site('a.test', [up.port], (s) => {
      if (s.handler?.kind !== 'reverse_proxy') return;
      s.handler.header_up = [
        { op: 'set', name: 'X-Set', value: 'mine' },
        { op: 'add', name: 'X-Add', value: 'second' },
        { op: 'delete', name: 'X-Del' },
      ];
    });
    const { port } = await proxy([route]);
    await get(port, 'a.test', '/', { 'x-set': 'theirs', 'x-add': 'first', 'x-del': 'gone' });
    const headers = up.seen[0]?.headers;
    expect(headers?.['x-set']).toBe('mine');
    expect(headers?.['x-add']).toBe('first, second');
    expect(headers?.['x-del']).toBeUndefined();
  });

  it('keeps a chunked request body chunked upstream', async () => {
    let body = '';
    const up = await upstream((req, res) => {
      req.on('data', (d: Buffer) => {
        body += d;
      });
      req.on('end', () => res.end(`te=${req.headers['transfer-encoding']}`));
    });
    const { port } = await proxy([site('a.test', [up.port])]);
    const reply = await rawExchange(
      port,
      'POST / HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n',
      300,
    );
    expect(reply).toContain('te=chunked');
    expect(body).toBe('hello');
  });
});

describe('100 Continue', () => {
  it('asks for the body only when the request is forwarded, and does not forward Expect', async () => {
    const up = await upstream((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => {
        body += d;
      });
      req.on('end', () => res.end(`got ${body}`));
    });
    const answered = site('no.test', [up.port], (s) => {
      s.handler = { kind: 'respond', body: 'denied', status: 403 };
    });
    const { port } = await proxy([site('a.test', [up.port]), answered], { compileSite: siteCompiler });

    const forwarded = await continueExchange(port, 'a.test');
    expect(forwarded).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 OK/);
    expect(forwarded).toContain('got hello');
    expect(up.seen[0]?.headers.expect).toBeUndefined();

    const refused = await continueExchange(port, 'no.test');
    expect(refused).toMatch(/^HTTP\/1\.1 403/);
    expect(refused).not.toContain('100 Continue');
  });
});

/** Sends a POST with `Expect: 100-continue`; the body goes out only after a `100` (or never). */
function continueExchange(port: number, host: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () =>
      socket.write(`POST / HTTP/1.1\r\nHost: ${host}\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n`),
    );
    let data = '';
    socket.on('data', (d: Buffer) => {
      const first = data === '';
      data += d.toString();
      if (first && data.startsWith('HTTP/1.1 100')) socket.write('hello');
      if (/\r\n\r\n[\s\S]*(got hello|denied)/.test(data)) socket.end();
    });
    socket.on('close', () => resolve(data));
    setTimeout(() => socket.destroy(), 2000);
  });
}

describe('request targets', () => {
  it('routes an absolute-form target by its path, so handle + basic_auth cannot be bypassed', async () => {
    const up = await upstream();
    const hash = bcrypt.hashSync('pw', 4);
    const route = site('a.test', [up.port], (s) => {
      s.handles = [
        {
          kind: 'handle',
          path: '/admin/*',
          header: [],
          basic_auth: { realm: 'r', users: [{ user: 'u', hash }] },
          redirects: [],
          handler: s.handler,
        },
      ];
    });
    const { port } = await proxy([route], { compileSite: siteCompiler });
    const denied = await rawExchange(port, 'GET http://a.test/admin/secret HTTP/1.1\r\nHost: a.test\r\n\r\n', 300);
    expect(denied).toMatch(/^HTTP\/1\.1 401/);
    const open = await rawExchange(port, 'GET http://A.test:80/open?x=1 HTTP/1.1\r\nHost: a.test\r\n\r\n', 300);
    expect(open).toMatch(/^HTTP\/1\.1 200/);
    expect(up.seen.map((s) => s.url)).toEqual(['/open?x=1']);
    const mismatch = await rawExchange(port, 'GET http://b.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n', 300);
    expect(mismatch).toMatch(/^HTTP\/1\.1 400/);
    const star = await rawExchange(port, 'OPTIONS * HTTP/1.1\r\nHost: a.test\r\n\r\n', 300);
    expect(star).toMatch(/^HTTP\/1\.1 400/);
    expect(up.seen).toHaveLength(1);
  });

  it('answers 431 to a request head over the size limit', async () => {
    const up = await upstream();
    const { port } = await proxy([site('a.test', [up.port])]);
    const reply = await rawExchange(port, `GET / HTTP/1.1\r\nHost: a.test\r\nX-Big: ${'b'.repeat(20_000)}\r\n\r\n`);
    expect(reply).toMatch(/^HTTP\/1\.1 431/);
    expect(up.seen).toHaveLength(0);
  });
});

describe('upstream keep-alive', () => {
  it('does not pool a socket whose upstream announces Keep-Alive: timeout=1', async () => {
    const up = await upstream();
    up.server.keepAliveTimeout = 1000;
    const { port, server } = await proxy([site('a.test', [up.port])]);
    expect((await get(port, 'a.test')).status).toBe(200);
    await until(() => server.forwarder.upstreamSocketCount() === 0);
    expect((await get(port, 'a.test')).status).toBe(200);
    expect(up.seen[0]?.socket).not.toBe(up.seen[1]?.socket);
  });

  it('closes a pooled socket one second before the announced upstream timeout', async () => {
    const up = await upstream();
    up.server.keepAliveTimeout = 2500; // announced as timeout=2
    const { port, server } = await proxy([site('a.test', [up.port])]);
    await get(port, 'a.test');
    await wait(300);
    expect(server.forwarder.upstreamSocketCount()).toBe(1);
    await get(port, 'a.test');
    expect(up.seen[1]?.socket).toBe(up.seen[0]?.socket);
    const closedAt = Date.now();
    await until(() => server.forwarder.upstreamSocketCount() === 0, 2000);
    // Pooled for 1 s (2 s − 1 s), well before the upstream's own 2.5 s.
    expect(Date.now() - closedAt).toBeLessThan(1600);
  });

  it('sends a GET again on a new connection when a reused socket is reset, but not a POST with a body', async () => {
    // A raw upstream: answers the first request of each connection, resets on the second.
    const perConnection = new Map<Socket, number>();
    const connections: Socket[] = [];
    const raw = net.createServer((socket) => {
      connections.push(socket);
      perConnection.set(socket, 0);
      let buffered = '';
      socket.on('data', (d: Buffer) => {
        buffered += d.toString();
        while (buffered.includes('\r\n\r\n')) {
          const end = buffered.indexOf('\r\n\r\n') + 4;
          const length = Number(/content-length: (\d+)/i.exec(buffered.slice(0, end))?.[1] ?? 0);
          if (buffered.length < end + length) return;
          buffered = buffered.slice(end + length);
          const n = (perConnection.get(socket) ?? 0) + 1;
          perConnection.set(socket, n);
          if (n === 1) socket.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: keep-alive\r\n\r\nok');
          else socket.resetAndDestroy();
        }
      });
      socket.on('error', () => {});
    });
    await new Promise<void>((r) => raw.listen(0, '127.0.0.1', r));
    onCleanup(() => {
      for (const s of connections) s.destroy();
      return new Promise<void>((r) => raw.close(() => r()));
    });
    const rawPort = (raw.address() as AddressInfo).port;
    const { port } = await proxy([site('a.test', [rawPort])]);
    expect((await get(port, 'a.test')).status).toBe(200);
    expect((await get(port, 'a.test')).status).toBe(200);
    expect(connections).toHaveLength(2);
    const post = await get(port, 'a.test', '/', { 'content-length': 4 }, false, 'POST', 'data');
    expect(post.status).toBe(502);
  });
});

describe('websockets', () => {
  it('leaks no upstream socket when the client leaves an upstream that answered the upgrade with plain HTTP', async () => {
    const up = await upstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      const timer = setInterval(() => res.write('tick\n'), 20);
      res.on('close', () => clearInterval(timer));
    });
    const { port, server } = await proxy([site('a.test', [up.port])]);
    for (let i = 0; i < 3; i++) {
      await new Promise<void>((resolve) => {
        const req = http.request({
          port,
          headers: { host: 'a.test', connection: 'Upgrade', upgrade: 'websocket' },
          agent: false,
        });
        req.on('response', (res) => {
          res.once('data', () => {
            req.destroy();
            resolve();
          });
        });
        req.on('error', () => resolve());
        req.end();
      });
    }
    await until(() => up.connections.size === 0 && server.forwarder.upstreamSocketCount() === 0);
  });
});

describe('rewriteBody (small whole bodies)', () => {
  it('rewrites a body of known small size in one piece with an exact Content-Length; larger ones take the stream', async () => {
    const up = await upstream((req, res) => {
      if (req.url === '/chunks') {
        // A small body that arrives in three pieces is still rewritten whole, in order.
        res.writeHead(200, { 'content-type': 'text/html', 'content-length': 9 });
        res.write('abc');
        setTimeout(() => res.write('def'), 20);
        setTimeout(() => res.end('ghi'), 40);
        return;
      }
      const size = req.url === '/big' ? 70 * 1024 : 10;
      res.writeHead(200, { 'content-type': 'text/html', 'content-length': size }).end('a'.repeat(size));
    });
    const streamed: string[] = [];
    const { port } = await proxy([site('a.test', [up.port])], {
      hooks: {
        rewriteBody: (ctx, _req, _status, headers) => {
          headers['x-rewritten'] = '1';
          return ctx.path === '/throws'
            ? () => {
                throw new Error('boom');
              }
            : (body) => Buffer.concat([Buffer.from('<'), body, Buffer.from('>')]);
        },
        transformResponse: (ctx) => {
          streamed.push(ctx.path);
          return null;
        },
      },
    });
    const small = await get(port, 'a.test', '/small');
    expect(small.body).toBe(`<${'a'.repeat(10)}>`);
    expect(small.headers['content-length']).toBe('12');
    expect(small.headers['transfer-encoding']).toBeUndefined();
    expect(small.headers['x-rewritten']).toBe('1');
    const pieces = await get(port, 'a.test', '/chunks');
    expect(pieces.body).toBe('<abcdefghi>');
    expect(pieces.headers['content-length']).toBe('11');
    const failed = await get(port, 'a.test', '/throws');
    expect(failed.body).toBe('a'.repeat(10));
    expect(failed.headers['content-length']).toBe('10');
    const big = await get(port, 'a.test', '/big');
    expect(big.body.length).toBe(70 * 1024);
    expect(streamed).toEqual(['/big']);
  });
});
