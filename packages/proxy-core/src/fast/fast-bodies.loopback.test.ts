// Issue 32: the fast path serves requests with a body (Content-Length,
// chunked), HTTP/1.0 and heads that come in several reads, exactly as the
// node:http path answers them — the same bytes to the client (but the
// Date), the same request upstream, the same request records — and hands
// what it does not cover (smuggling shapes, other Expect values) to
// node:http, whose answer is unchanged.
import { createHash } from 'node:crypto';
import net from 'node:net';
import type { ReverseProxyHandler } from '@proxyd/model';
import { describe, expect, it } from 'vitest';
import type { ListenerLimits } from '../connection-limits.js';
import { REQUEST_BUFFER_BYTES, requestBytesBuffered } from '../forward/exchange.js';
import type { RequestRecord } from '../hooks.js';
import { onCleanup, site, siteProxy, stableRecord, undated, until, upstream, wait } from '../loopback.test-helpers.js';

/** An upstream that answers with what it got: method, framing, body size and digest. */
async function echo() {
  return await upstream((req, res) => {
    if (req.url === '/chunked') {
      res.setHeader('content-type', 'text/plain');
      res.write('one,');
      res.end('two');
      return;
    }
    if (req.url === '/empty') {
      res.writeHead(204).end();
      return;
    }
    const hash = createHash('sha256');
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      hash.update(c);
    });
    req.on('end', () => {
      const body = `${req.method} ${req.url} cl=${req.headers['content-length'] ?? '-'} te=${req.headers['transfer-encoding'] ?? '-'} ${size} ${hash.digest('hex').slice(0, 16)}`;
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
  });
}

async function proxyWith(fastPath: boolean, upPort: number, limits: Partial<ListenerLimits> = {}) {
  const records: RequestRecord[] = [];
  const { server, port } = await siteProxy([site('f.test', [upPort])], {
    fastPath,
    limits,
    hooks: { onRequest: (r) => records.push(r) },
  });
  return { server, port, records };
}

/**
 * Sends `pieces` on one connection, `gapMs` apart (each its own TCP write),
 * and collects what the server writes until it closes or `ms` passes.
 */
function exchange(port: number, pieces: (string | Buffer)[], gapMs = 0, ms = 1500): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.setNoDelay(true);
    let data = '';
    const timer = setTimeout(() => socket.destroy(), ms);
    socket.on('connect', async () => {
      for (const [i, piece] of pieces.entries()) {
        if (i > 0 && gapMs > 0) await wait(gapMs);
        if (!socket.writable) break;
        socket.write(piece);
      }
    });
    socket.on('data', (d: Buffer) => {
      data += d.toString('latin1');
    });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(data);
    });
    socket.on('error', () => {});
  });
}

const JSON_BODY = JSON.stringify({ user: 'ada', items: Array.from({ length: 40 }, (_, i) => ({ id: i, n: 'x' })) });
const BIG = Buffer.alloc(3 * REQUEST_BUFFER_BYTES + 17, 'z');

/** [name, pieces (one TCP write each), served on the fast path?] */
const CASES: [string, (string | Buffer)[], boolean][] = [
  [
    'POST of JSON (Content-Length), then a pipelined GET',
    [
      `POST /api/items HTTP/1.1\r\nHost: f.test\r\nContent-Type: application/json\r\nContent-Length: ${JSON_BODY.length}\r\n\r\n${JSON_BODY}` +
        'GET /after HTTP/1.1\r\nHost: f.test\r\nConnection: close\r\n\r\n',
    ],
    true,
  ],
  [
    'PUT of a form, the body in a second write',
    [
      'PUT /form HTTP/1.1\r\nHost: f.test\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 11\r\nConnection: close\r\n\r\n',
      'a=1&b=2&c=3',
    ],
    true,
  ],
  [
    'POST with Content-Length: 0',
    ['POST /zero HTTP/1.1\r\nHost: f.test\r\nContent-Length: 0\r\nConnection: close\r\n\r\n'],
    true,
  ],
  ['POST without a body', ['POST /none HTTP/1.1\r\nHost: f.test\r\nConnection: close\r\n\r\n'], true],
  ['DELETE without a body', ['DELETE /item/1 HTTP/1.1\r\nHost: f.test\r\nConnection: close\r\n\r\n'], true],
  [
    'a chunked body, with an extension and a trailer',
    [
      'POST /chunks HTTP/1.1\r\nHost: f.test\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5;ext=1\r\nhello\r\n',
      '6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n',
    ],
    true,
  ],
  [
    'Expect: 100-continue with a body',
    [
      'POST /expect HTTP/1.1\r\nHost: f.test\r\nExpect: 100-continue\r\nContent-Length: 5\r\nConnection: close\r\n\r\n',
      'abcde',
    ],
    true,
  ],
  ['Expect: 100-continue without a body', ['GET /e HTTP/1.1\r\nHost: f.test\r\nExpect: 100-continue\r\n\r\n'], true],
  [
    'a body over 64 KiB (streamed)',
    [
      `POST /big HTTP/1.1\r\nHost: f.test\r\nContent-Length: ${BIG.length}\r\nConnection: close\r\n\r\n`,
      BIG.subarray(0, 70_000),
      BIG.subarray(70_000),
    ],
    true,
  ],
  ['HTTP/1.0 GET', ['GET /a HTTP/1.0\r\nHost: f.test\r\n\r\n'], true],
  ['HTTP/1.0 GET of a chunked upstream body', ['GET /chunked HTTP/1.0\r\nHost: f.test\r\n\r\n'], true],
  [
    'HTTP/1.0 keep-alive: two requests on one connection',
    [
      'GET /k1 HTTP/1.0\r\nHost: f.test\r\nConnection: keep-alive\r\n\r\n',
      'POST /k2 HTTP/1.0\r\nHost: f.test\r\nConnection: keep-alive\r\nContent-Length: 3\r\n\r\nabc',
      'HEAD /k3 HTTP/1.0\r\nHost: f.test\r\nConnection: keep-alive\r\n\r\n',
      'GET /empty HTTP/1.0\r\nHost: f.test\r\nConnection: keep-alive\r\n\r\n',
    ],
    true,
  ],
  ['a head in three reads', ['GET /sp', 'lit HTTP/1.1\r\nHost: f.', 'test\r\nConnection: close\r\n\r\n'], true],
  [
    'a head split inside a header line, with a body after it',
    ['POST /split HTTP/1.1\r\nHost: f.test\r\nContent-Le', 'ngth: 4\r\nConnection: close\r\n\r\nbody'],
    true,
  ],
  // What node:http answers: the fast path hands these over.
  [
    'Content-Length and Transfer-Encoding (400)',
    ['POST /x HTTP/1.1\r\nHost: f.test\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'],
    false,
  ],
  [
    'two Content-Lengths (400)',
    ['POST /x HTTP/1.1\r\nHost: f.test\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc'],
    false,
  ],
  ['an invalid Content-Length (400)', ['POST /x HTTP/1.1\r\nHost: f.test\r\nContent-Length: 3x\r\n\r\nabc'], false],
  ['a negative Content-Length (400)', ['POST /x HTTP/1.1\r\nHost: f.test\r\nContent-Length: -3\r\n\r\nabc'], false],
  [
    'gzip, chunked (501)',
    ['POST /x HTTP/1.1\r\nHost: f.test\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n'],
    false,
  ],
  [
    'two Transfer-Encoding lines (400)',
    ['POST /x HTTP/1.1\r\nHost: f.test\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'],
    false,
  ],
  [
    'chunked on HTTP/1.0 (400)',
    ['POST /x HTTP/1.0\r\nHost: f.test\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'],
    false,
  ],
  ['Expect: something else (417)', ['GET /x HTTP/1.1\r\nHost: f.test\r\nExpect: teapot\r\n\r\n'], false],
  [
    'a bad chunk size after the head was served (400)',
    ['POST /bad HTTP/1.1\r\nHost: f.test\r\nTransfer-Encoding: chunked\r\n\r\n', 'zz\r\nhello\r\n0\r\n\r\n'],
    true,
  ],
  [
    'a body cut short by the client (400)',
    ['POST /short HTTP/1.1\r\nHost: f.test\r\nContent-Length: 10\r\n\r\nabc'],
    true,
  ],
];

describe('issue 32: the fast path serves bodies, HTTP/1.0 and split heads as node:http does', () => {
  it('answers byte for byte as node:http, sends the same requests upstream and the same records', async () => {
    const up = await echo();
    const fast = await proxyWith(true, up.port);
    const slow = await proxyWith(false, up.port);
    for (const [name, pieces, served] of CASES) {
      // A body cut short: the client half-closes after its last write.
      const short = name.includes('cut short');
      const send = (port: number) =>
        short
          ? new Promise<string>((resolve) => {
              const s = net.connect(port, '127.0.0.1', () => s.end(pieces[0] as string));
              let d = '';
              s.on('data', (b: Buffer) => {
                d += b.toString('latin1');
              });
              s.on('close', () => resolve(d));
              s.on('error', () => resolve(d));
            })
          : exchange(port, pieces, 30);
      const servedBefore = fast.server.fastPathRequests;
      const seenBefore = up.seen.length;
      const a = undated(await send(fast.port));
      // Sorted: node:http forwards a pipelined request while the one before it still reads its body.
      const upFast = up.seen
        .slice(seenBefore)
        .map((s) => JSON.stringify([s.method, s.url, s.raw]))
        .sort();
      const seenMid = up.seen.length;
      const b = undated(await send(slow.port));
      const upSlow = up.seen
        .slice(seenMid)
        .map((s) => JSON.stringify([s.method, s.url, s.raw]))
        .sort();
      expect(a, name).toBe(b);
      expect(a.length, name).toBeGreaterThan(0);
      expect(upFast, name).toEqual(upSlow);
      expect(fast.server.fastPathRequests > servedBefore, name).toBe(served);
    }
    await until(() => fast.records.length === slow.records.length && slow.records.length >= 20);
    expect(fast.records.map(stableRecord)).toEqual(slow.records.map(stableRecord));
    expect(slow.server.fastPathRequests).toBe(0);
    await until(() => requestBytesBuffered() === 0);
  });
});

/** Small limits: every timeout a fraction of a second. */
const FAST_LIMITS: Partial<ListenerLimits> = {
  headersTimeoutMs: 300,
  bodyTimeoutMs: 300,
  bodyMinRate: 0,
  requestTimeoutMs: 10_000,
  lingerMs: 300,
  checkIntervalMs: 25,
};

/** A raw client: what it received, and when the server closed it (ms since connect, -1: open). */
async function client(port: number) {
  const socket = net.connect(port, '127.0.0.1');
  const start = performance.now();
  let data = '';
  let closed = -1;
  socket.setEncoding('latin1');
  socket.on('data', (d: string) => {
    data += d;
  });
  socket.on('close', () => {
    closed = performance.now() - start;
  });
  socket.on('error', () => {});
  onCleanup(() => {
    socket.destroy();
  });
  await new Promise((r) => socket.once('connect', r));
  return { socket, data: () => data, closedAt: () => closed };
}

for (const fastPath of [true, false]) {
  const mode = fastPath ? 'fast path' : 'node:http';
  describe(`issue 32: request bodies on the ${mode}`, () => {
    it('opens no upstream connection while a small body arrives, then sends it whole', async () => {
      const up = await echo();
      const { server, port } = await proxyWith(fastPath, up.port, FAST_LIMITS);
      const c = await client(port);
      c.socket.write('POST /slow HTTP/1.1\r\nHost: f.test\r\nContent-Length: 3000\r\n\r\n');
      for (let i = 0; i < 2; i++) {
        c.socket.write(Buffer.alloc(1000, 'b'));
        await wait(50);
        expect(up.seen).toHaveLength(0);
        expect(server.forwarder.upstreamSocketCount()).toBe(0);
      }
      c.socket.write(Buffer.alloc(1000, 'b'));
      await until(() => c.data().includes('POST /slow cl=3000 te=- 3000 '));
      expect(c.data()).not.toMatch(/connection: close/i);
      expect(server.fastPathRequests).toBe(fastPath ? 1 : 0);
      await until(() => requestBytesBuffered() === 0);
    });

    it('waits for a client that waits for 100 Continue, then forwards its body', async () => {
      const up = await echo();
      const { server, port } = await proxyWith(fastPath, up.port, FAST_LIMITS);
      const c = await client(port);
      c.socket.write('PUT /e HTTP/1.1\r\nHost: f.test\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n');
      await until(() => c.data().includes('HTTP/1.1 100 Continue\r\n\r\n'));
      expect(up.seen).toHaveLength(0);
      c.socket.write('hello');
      await until(() => c.data().includes('PUT /e cl=5 te=- 5 '));
      expect(c.data()).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 OK\r\n/);
      expect(server.fastPathRequests).toBe(fastPath ? 1 : 0);
    });

    it('cuts a body that stops arriving with 408 and opens no upstream connection', async () => {
      const up = await echo();
      const { server, port } = await proxyWith(fastPath, up.port, FAST_LIMITS);
      const c = await client(port);
      c.socket.write('POST / HTTP/1.1\r\nHost: f.test\r\nContent-Length: 100\r\n\r\n0123456789');
      await until(() => c.closedAt() >= 0, 5000);
      expect(c.data()).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
      expect(c.data()).toMatch(/\r\nconnection: close\r\n[\s\S]*request timeout\n$/i);
      expect(up.seen).toHaveLength(0);
      expect(server.forwarder.upstreamSocketCount()).toBe(0);
      expect(server.fastPathRequests).toBe(fastPath ? 1 : 0);
      await until(() => requestBytesBuffered() === 0);
    });

    it('cuts a body trickled under bodyMinRate', async () => {
      const up = await echo();
      const { server, port } = await proxyWith(fastPath, up.port, {
        ...FAST_LIMITS,
        bodyTimeoutMs: 400,
        bodyMinRate: 100,
      });
      const c = await client(port);
      c.socket.write('POST / HTTP/1.1\r\nHost: f.test\r\nContent-Length: 1000\r\n\r\n');
      for (let i = 0; i < 100 && c.closedAt() < 0; i++) {
        c.socket.write('x');
        await wait(50);
      }
      expect(c.closedAt()).toBeGreaterThan(0);
      expect(c.data()).toMatch(/^HTTP\/1\.1 408 /);
      expect(up.seen).toHaveLength(0);
      expect(server.fastPathRequests).toBe(fastPath ? 1 : 0);
    });

    it('an upstream that answers before the body ends: Connection: close, then a lingering close', async () => {
      const early = await upstream((req, res) => {
        req.resume();
        res.writeHead(413, { 'content-type': 'text/plain', 'content-length': 9 }).end('too big\n\n');
      });
      const { server, port } = await proxyWith(fastPath, early.port, FAST_LIMITS);
      const c = await client(port);
      // Over 64 KiB: the upstream request opens while the body still arrives.
      c.socket.write(`POST / HTTP/1.1\r\nHost: f.test\r\nContent-Length: 1000000\r\n\r\n`);
      c.socket.write(Buffer.alloc(100_000, 'y'));
      await until(() => c.data().includes('too big'));
      expect(c.data()).toMatch(/^HTTP\/1\.1 413 /);
      expect(c.data()).toMatch(/\r\nconnection: close\r\n/i);
      for (let i = 0; i < 100 && c.closedAt() < 0; i++) {
        if (c.socket.writable) c.socket.write('y');
        await wait(25);
      }
      expect(c.closedAt()).toBeGreaterThan(0);
      expect(c.closedAt()).toBeLessThan(3000);
      // The fast path's upstream connection was out of step: closed, not pooled (node:http's agent keeps
      // its socket until the upstream is done with the request).
      if (fastPath) await until(() => server.forwarder.upstreamSocketCount() === 0);
    });

    it('streams a big body to a slow upstream with backpressure, whole', async () => {
      let release: () => void = () => {};
      const gate = new Promise<void>((r) => {
        release = r;
      });
      const hash = createHash('sha256');
      const slowUp = await upstream(async (req, res) => {
        await gate;
        let size = 0;
        req.on('data', (c: Buffer) => {
          size += c.length;
          hash.update(c);
        });
        req.on('end', () => res.end(`${size} ${hash.digest('hex')}`));
      });
      const { server, port } = await proxyWith(fastPath, slowUp.port, { ...FAST_LIMITS, bodyTimeoutMs: 2000 });
      // More than the kernel's socket buffers on the way hold (client, proxy and upstream sides).
      const body = Buffer.alloc(48 * 1024 * 1024);
      for (let i = 0; i < body.length; i += 4) body.writeUInt32LE(i, i);
      const c = await client(port);
      c.socket.write(`POST /big HTTP/1.1\r\nHost: f.test\r\nContent-Length: ${body.length}\r\n\r\n`);
      c.socket.write(body);
      await wait(300);
      // The upstream reads nothing yet: the client's writes back up rather than fill the proxy's memory.
      expect(c.socket.writableLength).toBeGreaterThan(0);
      release();
      const want = `${body.length} ${createHash('sha256').update(body).digest('hex')}`;
      await until(() => c.data().includes(want), 10_000);
      expect(server.fastPathRequests).toBe(fastPath ? 1 : 0);
    });

    it('a client that leaves mid-body never reaches the upstream and frees its member and buffer', async () => {
      const up = await echo();
      const route = site('f.test', [up.port]);
      const { server, port } = await siteProxy([route], { fastPath });
      const c = await client(port);
      c.socket.write('POST / HTTP/1.1\r\nHost: f.test\r\nContent-Length: 10000\r\n\r\n');
      c.socket.write(Buffer.alloc(5000, 'x'));
      const pool = server.forwarder.poolOf(route.site.handler as ReverseProxyHandler);
      await until(() => requestBytesBuffered() >= 5000);
      expect(pool.members[0]?.active).toBe(1);
      c.socket.destroy();
      await until(() => pool.members[0]?.active === 0 && requestBytesBuffered() === 0);
      await wait(50);
      expect(up.seen).toHaveLength(0);
      expect(server.fastPathRequests).toBe(fastPath ? 1 : 0);
    });

    it('answers 408 to a head that never completes, however it trickles', async () => {
      const up = await echo();
      const { port } = await proxyWith(fastPath, up.port, FAST_LIMITS);
      const c = await client(port);
      c.socket.write('GET / HTTP/1.1\r\nHost: f.test\r\n');
      for (let i = 0; i < 40 && c.closedAt() < 0; i++) {
        if (c.socket.writable) c.socket.write(`X-${i}: y\r\n`);
        await wait(25);
      }
      expect(c.closedAt()).toBeGreaterThan(0);
      expect(c.data()).toMatch(/^HTTP\/1\.1 408 /);
      expect(up.seen).toHaveLength(0);
    });
  });
}
