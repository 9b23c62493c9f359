// Issue 32: the HTTP/1.1 fast path answers exactly as the node:http path
// does — the same bytes to the client (but the Date), the same request head
// upstream, the same request records — and hands whatever it does not
// cover to node:http, at a request's first byte, on the same connection.
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { Transform } from 'node:stream';
import tls from 'node:tls';
import bcrypt from 'bcryptjs';
import { describe, expect, it } from 'vitest';
import type { RequestRecord } from '../hooks.js';
import {
  rawExchange,
  selfSigned,
  site,
  siteProxy,
  stableRecord,
  undated,
  until,
  upstream,
  wait,
} from '../loopback.test-helpers.js';
import { MemoryCertificateStore } from '../tls/certificate-store.js';
import { fastPathEnabled } from './fast-path.js';

/** The upstream every scenario talks to: a few answers chosen by path. */
async function origin() {
  return await upstream((req, res) => {
    if (req.url?.startsWith('/chunked')) {
      res.setHeader('content-type', 'text/plain');
      res.write('one,');
      res.end('two');
    } else if (req.url === '/empty') {
      res.writeHead(204, { 'x-kind': 'empty' }).end();
    } else if (req.url === '/big') {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': 100_000 });
      res.end(Buffer.alloc(100_000, 7));
    } else if (req.url === '/stream') {
      res.setHeader('content-type', 'text/html');
      res.write('<p>streamed</p>');
      res.end('<p>more</p>');
    } else if (req.url === '/page') {
      res
        .writeHead(200, { 'content-type': 'text/html', 'content-length': 27 })
        .end('<html><body>hi</body></html'.slice(0, 27));
    } else if (req.method === 'POST') {
      let n = 0;
      req.on('data', (c: Buffer) => {
        n += c.length;
      });
      req.on('end', () => res.end(`got ${n}`));
    } else {
      res.setHeader('set-cookie', ['a=1', 'b=2']);
      res.setHeader('keep-alive', 'timeout=30');
      res.setHeader('x-frame-options', 'DENY');
      res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'x-upstream': 'yes' });
      res.end(`path ${req.url}`);
    }
  });
}

/** The same proxy, with the fast path on or off, recording what it hands `onRequest`. */
async function proxyWith(fastPath: boolean, upPort: number) {
  const records: RequestRecord[] = [];
  const { server, port } = await siteProxy(
    [
      site('f.test', [upPort]),
      site('g.test', [upPort], (s) => {
        s.encode = { encodings: ['gzip'], minimum_length: 0, prefer: [] } as never;
      }),
    ],
    {
      fastPath,
      hooks: {
        onRequest: (r) => records.push(r),
        // Stand-ins for analytics' injection: a small HTML body whole, a streamed one through a transform.
        rewriteBody: (_ctx, req, _status, headers) =>
          req.method !== 'HEAD' && headers['content-type'] === 'text/html' && headers['content-length'] !== undefined
            ? (body) => Buffer.concat([body, Buffer.from('<!--injected-->')])
            : null,
        transformResponse: (_ctx, _req, _status, headers) => {
          if (headers['content-type'] !== 'text/html') return null;
          delete headers['content-length'];
          return new Transform({
            transform(chunk: Buffer, _enc, done) {
              done(null, Buffer.from(chunk.toString('latin1').toUpperCase(), 'latin1'));
            },
          });
        },
      },
    },
  );
  return { server, port, records };
}

/**
 * Every exchange here ends with the server closing the connection (a `Connection: close` request, HTTP/1.0, or
 * an error): the tests read until it does, however long a busy machine takes. Longer than this is a hang.
 */
const CLOSE_WITHIN_MS = 20_000;

/**
 * Sends `bytes` on a TLS connection with these ALPN protocols; everything the server writes until it closes,
 * or (`firstData`) the first bytes it writes (an h2 server's SETTINGS: it does not close an idle session).
 */
function tlsExchange(port: number, alpn: string[] | undefined, bytes: string, firstData = false): Promise<string> {
  return new Promise((resolve) => {
    const socket = tls.connect({
      port,
      host: '127.0.0.1',
      servername: 'f.test',
      rejectUnauthorized: false,
      ...(alpn === undefined ? {} : { ALPNProtocols: alpn }),
    });
    let data = '';
    const timer = setTimeout(() => socket.destroy(), CLOSE_WITHIN_MS);
    socket.on('secureConnect', () => socket.write(bytes));
    socket.on('data', (d: Buffer) => {
      data += d.toString('latin1');
      if (firstData) socket.destroy();
    });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(data);
    });
    socket.on('error', () => {});
  });
}

/** The fast path's upstream reads went to one buffer (two at most: one connection, one read a client held). */
function expectReadBufferReused(server: { forwarder: { fastUpstreams: { readBuffers: number } } }): void {
  const { readBuffers } = server.forwarder.fastUpstreams;
  expect(readBuffers).toBeGreaterThanOrEqual(1);
  expect(readBuffers).toBeLessThanOrEqual(2);
}

const REQUESTS: [string, string][] = [
  [
    'keep-alive GET, two requests pipelined, spoofed and odd headers',
    'GET /a?x=1 HTTP/1.1\r\nHost: f.test\r\nUser-Agent: t/1\r\nReferer: http://r.test/\r\nX-Forwarded-For: 6.6.6.6\r\nX_Forwarded_For: 7.7.7.7\r\nCookie: c=1\r\nCookie: d=2\r\nConnection: keep-alive, x-drop\r\nX-Drop: 1\r\n\r\n' +
      'HEAD /b HTTP/1.1\r\nHost: F.test:80\r\nConnection: close\r\n\r\n',
  ],
  ['a small HTML body rewritten whole', 'GET /page HTTP/1.1\r\nHost: f.test\r\nConnection: close\r\n\r\n'],
  ['an HTML body streamed through a transform', 'GET /stream HTTP/1.1\r\nHost: f.test\r\nConnection: close\r\n\r\n'],
  ['chunked upstream body, Connection: close', 'GET /chunked HTTP/1.1\r\nHost: f.test\r\nConnection: close\r\n\r\n'],
  ['204 without body', 'GET /empty HTTP/1.1\r\nHost: f.test\r\nConnection: close\r\n\r\n'],
  ['100 KB body', 'GET /big HTTP/1.1\r\nHost: f.test\r\nConnection: close\r\n\r\n'],
  [
    'a fast GET, then a POST with a body on the same connection',
    'GET /first HTTP/1.1\r\nHost: f.test\r\n\r\nPOST /post HTTP/1.1\r\nHost: f.test\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello',
  ],
  [
    'a fast GET, then CL + TE (smuggling: 400 and close)',
    'GET /first HTTP/1.1\r\nHost: f.test\r\n\r\nPOST /x HTTP/1.1\r\nHost: f.test\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
  ],
  [
    'a fast GET, then two Host lines',
    'GET /first HTTP/1.1\r\nHost: f.test\r\n\r\nGET /x HTTP/1.1\r\nHost: f.test\r\nHost: g.test\r\n\r\n',
  ],
  ['obs-fold', 'GET /x HTTP/1.1\r\nHost: f.test\r\nX-A: 1\r\n  folded\r\n\r\n'],
  ['no route', 'GET /x HTTP/1.1\r\nHost: nowhere.test\r\nConnection: close\r\n\r\n'],
  [
    'a site with encode (every size)',
    'GET /a HTTP/1.1\r\nHost: g.test\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n',
  ],
  ['HTTP/1.0', 'GET /a HTTP/1.0\r\nHost: f.test\r\n\r\n'],
];

describe('issue 32: the HTTP/1.1 fast path', () => {
  it('is on unless PROXY_FAST_PATH=0', () => {
    expect(fastPathEnabled({})).toBe(true);
    expect(fastPathEnabled({ PROXY_FAST_PATH: '1' })).toBe(true);
    expect(fastPathEnabled({ PROXY_FAST_PATH: '0' })).toBe(false);
  });

  it('answers byte for byte as node:http, sends the same head upstream and the same records', async () => {
    const up = await origin();
    const fast = await proxyWith(true, up.port);
    const slow = await proxyWith(false, up.port);
    for (const [name, bytes] of REQUESTS) {
      const seenBefore = up.seen.length;
      const a = undated(await rawExchange(fast.port, bytes, CLOSE_WITHIN_MS));
      const upFast = up.seen.slice(seenBefore).map((s) => [s.method, s.url, s.raw]);
      const seenMid = up.seen.length;
      const b = undated(await rawExchange(slow.port, bytes, CLOSE_WITHIN_MS));
      const upSlow = up.seen.slice(seenMid).map((s) => [s.method, s.url, s.raw]);
      expect(a, name).toBe(b);
      expect(a.length, name).toBeGreaterThan(0);
      expect(upFast, name).toEqual(upSlow);
    }
    await until(() => fast.records.length === slow.records.length && slow.records.length >= REQUESTS.length);
    expect(fast.records.map(stableRecord)).toEqual(slow.records.map(stableRecord));
    expect(fast.server.fastPathRequests).toBeGreaterThanOrEqual(10);
    expect(slow.server.fastPathRequests).toBe(0);
  });

  it('serves HTTP/1.1 on the HTTPS listener (ALPN http/1.1 or none) as node:http does; h2 stays on node:http2', async () => {
    const up = await origin();
    const store = new MemoryCertificateStore();
    const files = selfSigned(['f.test']);
    store.set('f.test', { cert: readFileSync(files.cert), key: readFileSync(files.key) });
    const replies: string[][] = [];
    const served: number[] = [];
    for (const fastPath of [true, false]) {
      const { server } = await siteProxy([site('f.test', [up.port])], { fastPath, certificates: store });
      const { port } = await server.listenHttps(0);
      const got: string[] = [];
      for (const alpn of [['http/1.1'], undefined]) {
        got.push(
          undated(
            await tlsExchange(
              port,
              alpn,
              'GET /s?q HTTP/1.1\r\nHost: f.test\r\n\r\nGET /chunked HTTP/1.1\r\nHost: f.test\r\nConnection: close\r\n\r\n',
            ),
          ),
        );
      }
      const h2 = await tlsExchange(port, ['h2'], '', true);
      got.push(String(h2.length > 0));
      replies.push(got);
      served.push(server.fastPathRequests);
    }
    expect(replies[0]?.[0]).toMatch(/^HTTP\/1.1 200 OK\r\n[\s\S]*strict-transport-security/);
    expect(replies[0]).toEqual(replies[1]);
    expect(served).toEqual([4, 0]);
  });

  it('answers small bodies on TLS without a new upstream read buffer per response', async () => {
    const up = await origin();
    const store = new MemoryCertificateStore();
    const files = selfSigned(['f.test']);
    store.set('f.test', { cert: readFileSync(files.cert), key: readFileSync(files.key) });
    const { server } = await siteProxy([site('f.test', [up.port])], { certificates: store });
    const { port } = await server.listenHttps(0);
    const n = 30;
    const requests = Array.from({ length: n }, (_, i) => `GET /s${i} HTTP/1.1\r\nHost: f.test\r\n`);
    const reply = await tlsExchange(port, ['http/1.1'], `${requests.join('\r\n')}Connection: close\r\n\r\n`);
    // Each 9-byte body, in order: a chunk copied before the TLS socket queued it, not a slice of a replaced buffer.
    const bodies = reply.match(/path \/s\d+/g);
    expect(bodies).toEqual(Array.from({ length: n }, (_, i) => `path /s${i}`));
    expect(server.fastPathRequests).toBe(n);
    // A TLS socket finishes its writes after they return: without the copy, each response took a new 128 KiB.
    expectReadBufferReused(server);
  });

  it('keeps no upstream read buffer for the chunks a rewrite or a transform holds', async () => {
    const up = await origin();
    const { server, port } = await proxyWith(true, up.port);
    const n = 20;
    // Pipelined: /page is rewritten whole (27 bytes), /stream goes through the transform (two chunks).
    const requests = Array.from(
      { length: n },
      (_, i) => `GET ${i % 2 === 0 ? '/page' : '/stream'} HTTP/1.1\r\nHost: f.test\r\n`,
    );
    const reply = await rawExchange(port, `${requests.join('\r\n')}Connection: close\r\n\r\n`, CLOSE_WITHIN_MS);
    expect(reply.match(/<!--injected-->/g)).toHaveLength(n / 2);
    expect(reply.match(/<P>STREAMED<\/P>/g)).toHaveLength(n / 2);
    expect(server.fastPathRequests).toBe(n);
    // Each chunk kept is a copy: without it, every read a rewrite or transform held took a new 128 KiB buffer.
    expectReadBufferReused(server);
  });

  it('fills header_up placeholders as node:http does, on the fast path', async () => {
    const up = await origin();
    const heads: unknown[] = [];
    for (const fastPath of [true, false]) {
      const route = site('f.test', [up.port], (s) => {
        if (s.handler?.kind !== 'reverse_proxy') return;
        // What Caddy users commonly write beside reverse_proxy, and the other request placeholders.
        s.handler.header_up = [
          { op: 'set', name: 'X-Real-IP', value: '{remote_host}' },
          { op: 'set', name: 'X-Client', value: '{client_ip}' },
          { op: 'add', name: 'X-Seen', value: '{scheme}://{host}{uri} {path} {query}' },
          { op: 'set', name: 'X-Q', value: '{query.a}|{http.request.uri.query.b}' },
          { op: 'set', name: 'X-UA', value: '{header.User-Agent} {http.request.header.x-none}' },
          { op: 'set', name: 'X-Re', value: '[{re.1}]' },
          { op: 'delete', name: 'X-Drop' },
        ];
      });
      const { port, server } = await siteProxy([route], { fastPath });
      const seen = up.seen.length;
      const reply = await rawExchange(
        port,
        'GET /p/a%20b?a=1&b=%C3%A9 HTTP/1.1\r\nHost: F.test:80\r\nUser-Agent: t/1\r\nUser-Agent: t/2\r\nX-Drop: 1\r\nConnection: close\r\n\r\n',
      );
      expect(reply).toMatch(/^HTTP\/1\.1 200 /);
      heads.push(up.seen.slice(seen).map((h) => h.raw));
      expect(server.fastPathRequests).toBe(fastPath ? 1 : 0);
    }
    expect(heads[0]).toEqual(heads[1]);
    expect(JSON.stringify(heads[0])).toContain('"x-real-ip","127.0.0.1"');
  });

  it('applies header ops with matchers and placeholders as node:http does, on the fast path', async () => {
    const up = await origin();
    const replies: string[] = [];
    const bytes =
      'GET /static/app.js?v=2 HTTP/1.1\r\nHost: f.test\r\n\r\n' +
      'GET /api/items/42 HTTP/1.1\r\nHost: f.test\r\nX-Tenant: acme\r\n\r\n' +
      'GET /other HTTP/1.1\r\nHost: f.test\r\nConnection: close\r\n\r\n';
    for (const fastPath of [true, false]) {
      const route = site('f.test', [up.port], (s) => {
        // Caddy's `header /static/* Cache-Control …` and its kind: ops that depend on the request.
        s.matchers = {
          static: { path: ['/static/*'], method: null, header: [] },
          item: {
            path: null,
            method: ['GET'],
            header: [],
            path_regexp: { name: 'item', pattern: '^/api/items/(?<id>\\d+)$' },
          },
        };
        s.header = [
          { op: 'set', name: 'Cache-Control', value: 'public, max-age=31536000', matcher: 'static' },
          { op: 'set', name: 'X-Item', value: '{re.item.id}/{re.1}', matcher: 'item' },
          { op: 'set', name: 'X-Served-Path', value: '{path} {header.X-Tenant} {client_ip}' },
          { op: 'delete', name: 'X-Upstream', matcher: 'static' },
          { op: 'set', name: 'X-Last-Capture', value: '[{re.1}]' },
        ];
      });
      const { port, server } = await siteProxy([route], { fastPath });
      replies.push(undated(await rawExchange(port, bytes, 1500)));
      expect(server.fastPathRequests).toBe(fastPath ? 3 : 0);
    }
    expect(replies[0]).toBe(replies[1]);
    expect(replies[0]).toMatch(/\r\ncache-control: public, max-age=31536000\r\n/);
    expect(replies[0]).toMatch(/\r\nx-item: 42\/42\r\n/);
    expect(replies[0]?.match(/x-item:/g)).toHaveLength(1);
    // The captures of one request are not the next's on the same connection.
    expect(replies[0]?.match(/x-last-capture: \S*/g)).toEqual([
      'x-last-capture: []',
      'x-last-capture: [42]',
      'x-last-capture: []',
    ]);
    expect(replies[0]).toMatch(/\r\nx-served-path: \/other {2}127\.0\.0\.1\r\n/);
  });

  it('serves basic_auth requests with remembered credentials; node:http answers the others', async () => {
    const up = await origin();
    const hash = bcrypt.hashSync('s3cret', 4);
    const auth = (user: string, password: string) =>
      `Authorization: Basic ${Buffer.from(`${user}:${password}`).toString('base64')}\r\n`;
    const good = auth('ann', 's3cret');
    // One connection each: the first request of good credentials is verified (bcrypt), the later ones remembered.
    const steps: [string, number][] = [
      [`GET /first HTTP/1.1\r\nHost: f.test\r\n${good}Connection: close\r\n\r\n`, 0],
      [
        `GET /a HTTP/1.1\r\nHost: f.test\r\n${good}\r\nGET /b HTTP/1.1\r\nHost: f.test\r\n${good}Connection: close\r\n\r\n`,
        2,
      ],
      [
        `GET /a HTTP/1.1\r\nHost: f.test\r\n${good}\r\nGET /none HTTP/1.1\r\nHost: f.test\r\nConnection: close\r\n\r\n`,
        1,
      ],
      [`GET /bad HTTP/1.1\r\nHost: f.test\r\n${auth('ann', 'nope')}Connection: close\r\n\r\n`, 0],
      [`GET /bob HTTP/1.1\r\nHost: f.test\r\n${auth('bob', 's3cret')}Connection: close\r\n\r\n`, 0],
      ['GET /none HTTP/1.1\r\nHost: f.test\r\nAuthorization: Bearer x\r\nConnection: close\r\n\r\n', 0],
    ];
    const replies: string[][] = [];
    const heads: unknown[] = [];
    for (const fastPath of [true, false]) {
      const route = site('f.test', [up.port], (s) => {
        s.basic_auth = { realm: 'Staff', users: [{ user: 'ann', hash }] };
        s.encode = { encodings: ['gzip'], minimum_length: 512 };
      });
      const { port, server } = await siteProxy([route], { fastPath });
      const got: string[] = [];
      const seen = up.seen.length;
      for (const [bytes, served] of steps) {
        const before = server.fastPathRequests;
        got.push(undated(await rawExchange(port, bytes, 1500)));
        expect(server.fastPathRequests - before).toBe(fastPath ? served : 0);
      }
      replies.push(got);
      heads.push(up.seen.slice(seen).map((h) => [h.url, h.raw]));
    }
    expect(replies[0]).toEqual(replies[1]);
    expect(heads[0]).toEqual(heads[1]);
    expect(replies[0]?.map((r) => r.match(/HTTP\/1\.1 (\d+)/g)?.join(' '))).toEqual([
      'HTTP/1.1 200',
      'HTTP/1.1 200 HTTP/1.1 200',
      'HTTP/1.1 200 HTTP/1.1 401',
      'HTTP/1.1 401',
      'HTTP/1.1 401',
      'HTTP/1.1 401',
    ]);
  });

  it('answers 502 and 504 as the forwarder does, and takes a refused member out', async () => {
    const silent = await upstream(() => {});
    const closed = await upstream();
    const closedPort = closed.port;
    await closed.close();
    for (const [port, status] of [
      [closedPort, 502],
      [silent.port, 504],
    ] as const) {
      const replies: string[] = [];
      for (const fastPath of [true, false]) {
        const { port: p, server } = await siteProxy([site('f.test', [port])], { fastPath, idleTimeoutMs: 200 });
        replies.push(undated(await rawExchange(p, 'GET / HTTP/1.1\r\nHost: f.test\r\n\r\n', CLOSE_WITHIN_MS)));
        if (fastPath) expect(server.fastPathRequests).toBe(1);
        // Passive health: a member that refused the connection leaves the rotation.
        if (status === 502) expect([...server.forwarder.upstreamHealth()][0]?.healthy).toBe(false);
      }
      expect(replies[0]).toMatch(new RegExp(`^HTTP/1.1 ${status} `));
      expect(replies[0]).toBe(replies[1]);
    }
  });

  it('reuses its upstream connection across requests and client connections', async () => {
    const up = await origin();
    const { port, server } = await proxyWith(true, up.port);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    // A Content-Length body (read past llhttp), a chunked one, then the first again: one upstream connection.
    const lengths: number[] = [];
    for (const path of ['/big', '/n1', '/big']) {
      await new Promise<void>((resolve, reject) => {
        http
          .get({ port, host: '127.0.0.1', path, headers: { host: 'f.test' }, agent }, (res) => {
            let n = 0;
            res.on('data', (c: Buffer) => {
              n += c.length;
            });
            res.on('end', () => {
              lengths.push(n);
              resolve();
            });
          })
          .on('error', reject);
      });
    }
    expect(lengths).toEqual([100_000, 'path /n1'.length, 100_000]);
    agent.destroy();
    await rawExchange(port, 'GET /last HTTP/1.1\r\nHost: f.test\r\nConnection: close\r\n\r\n');
    expect(new Set(up.seen.map((s) => s.socket)).size).toBe(1);
    expect(server.fastPathRequests).toBe(4);
    expect(server.forwarder.upstreamSocketCount()).toBe(1);
    await wait(10);
  });
});
