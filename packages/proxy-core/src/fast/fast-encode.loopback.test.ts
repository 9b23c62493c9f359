// Issue 32: a site with `encode` (Caddy users' `encode gzip zstd` beside
// `reverse_proxy`) is served on the fast path, and its answers are the
// node:http path's byte for byte but the Date: the same negotiation, the
// same decisions (type, minimum length, Range, no-transform, an encoded
// upstream body), the same head edits (Vary, weak ETag, the encoded
// Content-Length or chunked) and the same compressed bytes, chunk for chunk.
import net from 'node:net';
import { Transform } from 'node:stream';
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import type { DataPlaneHooks, RequestRecord } from '../hooks.js';
import { site, siteProxy, stableRecord, until, upstream } from '../loopback.test-helpers.js';
import { WHOLE_BODY_BYTES } from '../middleware/encode.js';

const JSON_BODY = JSON.stringify({ items: Array.from({ length: 60 }, (_, i) => ({ id: i, name: `item ${i}` })) });
const HTML = `<!doctype html><html><head><title>t</title></head><body>${'<p>hello world</p>'.repeat(200)}</body></html>`;
/** Several reads' worth: the compressor's input arrives in many chunks. */
const BIG = Array.from({ length: 6000 }, (_, i) => `line ${i} ${'abcdefghij'.repeat(i % 7)}\n`).join('');

async function origin() {
  return await upstream((req, res) => {
    const url = req.url ?? '/';
    if (url === '/json') {
      if (req.headers['if-none-match'] === 'W/"v1"' || req.headers['if-none-match'] === '"v1"') {
        res.writeHead(304, { etag: '"v1"' }).end();
        return;
      }
      if (req.headers.range !== undefined) {
        res.writeHead(206, { 'content-type': 'application/json', 'content-range': `bytes 0-9/${JSON_BODY.length}` });
        res.end(JSON_BODY.slice(0, 10));
        return;
      }
      res.writeHead(200, {
        'content-type': 'application/json',
        'content-length': JSON_BODY.length,
        etag: '"v1"',
        vary: 'Origin',
        'accept-ranges': 'bytes',
      });
      res.end(req.method === 'HEAD' ? undefined : JSON_BODY);
      return;
    }
    if (url === '/tiny') {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': 12 }).end('hello world\n');
      return;
    }
    if (url === '/page-whole') {
      res.writeHead(200, { 'content-type': 'text/html', 'content-length': Buffer.byteLength(HTML) }).end(HTML);
      return;
    }
    if (url === '/page' || url === '/held') {
      // Chunked, no length: the first 512 bytes are held before deciding.
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.write(HTML.slice(0, 300));
      setTimeout(() => res.end(HTML.slice(300)), 20);
      return;
    }
    if (url === '/short') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('short, ');
      setTimeout(() => res.end('and chunked'), 20);
      return;
    }
    if (url === '/big') {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(BIG) });
      res.end(BIG);
      return;
    }
    if (url === '/png') {
      res.writeHead(200, { 'content-type': 'image/png', 'content-length': 2048 }).end(Buffer.alloc(2048, 7));
      return;
    }
    if (url === '/gzipped') {
      const body = zlib.gzipSync(JSON_BODY);
      res.writeHead(200, {
        'content-type': 'application/json',
        'content-encoding': 'gzip',
        'content-length': body.length,
      });
      res.end(body);
      return;
    }
    if (url === '/no-transform') {
      res.writeHead(200, { 'content-type': 'text/plain', 'cache-control': 'no-transform' }).end(BIG.slice(0, 4000));
      return;
    }
    if (url === '/created') {
      res.writeHead(201, { 'content-type': 'application/json', 'content-length': JSON_BODY.length }).end(JSON_BODY);
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' }).end(`not here: ${url}`);
  });
}

/** Analytics' kind of hooks: a script tag injected into HTML, whole (`rewriteBody`) or streamed (`transformResponse`). */
const INJECT = Buffer.from('<script src="/_proxyd/a.js"></script>');
const hooks = (records: RequestRecord[]): DataPlaneHooks => ({
  onRequest: (r) => records.push(r),
  rewriteBody: (ctx, _req, _status, headers) =>
    ctx.path === '/page-whole' && String(headers['content-type']).startsWith('text/html')
      ? (body) => Buffer.concat([body, INJECT])
      : null,
  transformResponse: (ctx, _req, _status, headers) => {
    if (ctx.path !== '/page' || !String(headers['content-type']).startsWith('text/html')) return null;
    delete headers['content-length'];
    return new Transform({
      transform: (chunk, _enc, cb) => cb(null, chunk),
      flush: (cb) => cb(null, INJECT),
    });
  },
});

async function proxyWith(fastPath: boolean, upPort: number) {
  const records: RequestRecord[] = [];
  const { server, port } = await siteProxy(
    [
      site('e.test', [upPort], (s) => {
        s.encode = { encodings: ['zstd', 'gzip'], minimum_length: 512 };
        s.header = [{ op: 'set', name: 'X-Site', value: 'e' }];
      }),
    ],
    { fastPath, hooks: hooks(records) },
  );
  return { server, port, records };
}

/** Sends `request` on a new connection; everything the server writes until it closes. */
function exchange(port: number, request: string): Promise<Buffer> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(request));
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => socket.destroy(), 3000);
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks));
    });
    socket.on('error', () => {});
  });
}

const undated = (raw: Buffer) => raw.toString('latin1').replace(/\r\ndate: [^\r]*/gi, '\r\nDate: -');

/** The body of one chunked or Content-Length response (the first in `raw`): as sent (`raw`), and decoded, then decompressed. */
function plainBody(raw: Buffer): { head: string; raw: Buffer; body: string } {
  const text = raw.toString('latin1');
  const end = text.indexOf('\r\n\r\n');
  const head = text.slice(0, end);
  let rest = raw.subarray(end + 4);
  let body = rest;
  if (/\r\ntransfer-encoding: chunked/i.test(head)) {
    const parts: Buffer[] = [];
    for (;;) {
      const line = rest.indexOf('\r\n');
      const size = Number.parseInt(rest.subarray(0, line).toString('latin1'), 16);
      if (size === 0) break;
      parts.push(rest.subarray(line + 2, line + 2 + size));
      rest = rest.subarray(line + 2 + size + 2);
    }
    body = Buffer.concat(parts);
  }
  const coding = /\r\ncontent-encoding: (\S+)/i.exec(head)?.[1];
  const plain =
    coding === 'gzip' ? zlib.gunzipSync(body) : coding === 'zstd' ? zlib.zstdDecompressSync(body) : Buffer.from(body);
  return { head, raw: body, body: plain.toString('latin1') };
}

const GET = (path: string, extra = '', version = '1.1') =>
  `GET ${path} HTTP/${version}\r\nHost: e.test\r\n${extra}Connection: close\r\n\r\n`;
const GZ = 'Accept-Encoding: gzip, deflate, br\r\n';

/** [name, request, what the body must read once decoded] */
const CASES: [string, string, string][] = [
  ['gzip, by Content-Length', GET('/json', GZ), JSON_BODY],
  ['zstd preferred (the site lists it first)', GET('/json', 'Accept-Encoding: gzip, zstd\r\n'), JSON_BODY],
  ['gzip by q-value', GET('/json', 'Accept-Encoding: zstd;q=0.5, gzip\r\n'), JSON_BODY],
  ['identity preferred by q', GET('/json', 'Accept-Encoding: identity;q=1, gzip;q=0.5\r\n'), JSON_BODY],
  ['no matching coding: identity with Vary', GET('/json', 'Accept-Encoding: br\r\n'), JSON_BODY],
  ['no Accept-Encoding', GET('/json'), JSON_BODY],
  ['HEAD gets the encoded head', `HEAD /json HTTP/1.1\r\nHost: e.test\r\n${GZ}Connection: close\r\n\r\n`, ''],
  ['under minimum_length', GET('/tiny', GZ), 'hello world\n'],
  ['chunked, held then encoded', GET('/held', GZ), HTML],
  ['analytics injection (whole body), then encoded', GET('/page-whole', GZ), `${HTML}${INJECT}`],
  ['chunked, shorter than the minimum: identity with its length', GET('/short', GZ), 'short, and chunked'],
  ['many reads of a long body', GET('/big', GZ), BIG],
  ['an image passes', GET('/png', GZ), '\x07'.repeat(2048)],
  ['an encoded upstream body is not encoded twice', GET('/gzipped', GZ), JSON_BODY],
  ['Cache-Control: no-transform', GET('/no-transform', GZ), BIG.slice(0, 4000)],
  ['a Range request is left alone', GET('/json', `${GZ}Range: bytes=0-9\r\n`), JSON_BODY.slice(0, 10)],
  ['a 304 revalidating the encoded body', GET('/json', `${GZ}If-None-Match: W/"v1"\r\n`), ''],
  ['a 201', GET('/created', GZ), JSON_BODY],
  ['a 404 passes', GET('/nope', GZ), 'not here: /nope'],
  ['HTTP/1.0: unframed, then closed', GET('/json', GZ, '1.0'), JSON_BODY],
  ['analytics injection (stream), then encoded', GET('/page', GZ), `${HTML}${INJECT}`],
];

describe('issue 32: a site with encode on the fast path', () => {
  it('answers byte for byte as node:http, and the fast path serves it', async () => {
    const up = await origin();
    const fast = await proxyWith(true, up.port);
    const slow = await proxyWith(false, up.port);
    for (const [name, request, plain] of CASES) {
      const before = fast.server.fastPathRequests;
      const a = await exchange(fast.port, request);
      const b = await exchange(slow.port, request);
      expect(undated(a), name).toBe(undated(b));
      expect(a.length, name).toBeGreaterThan(0);
      expect(fast.server.fastPathRequests, name).toBe(before + 1);
      if (plain !== '') expect(plainBody(a).body, name).toBe(plain);
    }
    await until(() => fast.records.length === CASES.length && slow.records.length === CASES.length);
    expect(fast.records.map(stableRecord)).toEqual(slow.records.map(stableRecord));
    expect(slow.server.fastPathRequests).toBe(0);
  });

  it('encodes what it should: coding, Vary, weak ETag, the encoded length when compressed whole', async () => {
    const up = await origin();
    const { port } = await proxyWith(true, up.port);
    const gz = plainBody(await exchange(port, GET('/json', GZ)));
    expect(gz.head).toMatch(/\r\ncontent-encoding: gzip\r\n/i);
    expect(gz.head).toMatch(/\r\nvary: Origin, Accept-Encoding\r\n/i);
    expect(gz.head).toMatch(/\r\netag: W\/"v1"\r\n/i);
    expect(gz.head).not.toMatch(/\r\n(accept-ranges|transfer-encoding):/i);
    expect(gz.head).toMatch(new RegExp(`\\r\\ncontent-length: ${gz.raw.length}\\r\\n`, 'i'));
    // Over WHOLE_BODY_BYTES: streamed, its length unknown until the end (here, with Connection: close, unframed).
    const big = plainBody(await exchange(port, GET('/big', GZ)));
    expect(BIG.length).toBeGreaterThan(WHOLE_BODY_BYTES);
    expect(big.head).toMatch(/\r\ncontent-encoding: gzip\r\n/i);
    expect(big.head).not.toMatch(/\r\ncontent-length:/i);
    expect(big.body).toBe(BIG);
    expect(gz.head).toMatch(/\r\nx-site: e\r\n/i);
    const page = plainBody(await exchange(port, GET('/page-whole', GZ)));
    expect(page.head).toMatch(/\r\ncontent-encoding: gzip\r\n/i);
    const short = plainBody(await exchange(port, GET('/short', GZ)));
    expect(short.head).toMatch(/\r\ncontent-length: 18\r\n/i);
    expect(short.head).not.toMatch(/content-encoding/i);
    const tiny = plainBody(await exchange(port, GET('/tiny', GZ)));
    expect(tiny.head).not.toMatch(/content-encoding|vary/i);
  });

  it('keeps the connection: encoded answers one after the other on keep-alive', async () => {
    const up = await origin();
    const fast = await proxyWith(true, up.port);
    const slow = await proxyWith(false, up.port);
    const pipelined =
      `GET /json HTTP/1.1\r\nHost: e.test\r\n${GZ}\r\n` +
      `GET /page HTTP/1.1\r\nHost: e.test\r\nAccept-Encoding: zstd\r\n\r\n` +
      `GET /tiny HTTP/1.1\r\nHost: e.test\r\n${GZ}\r\n` +
      GET('/big', GZ);
    const a = await exchange(fast.port, pipelined);
    const b = await exchange(slow.port, pipelined);
    expect(undated(a)).toBe(undated(b));
    expect(undated(a).match(/HTTP\/1\.1 200 OK/g)).toHaveLength(4);
    expect(fast.server.fastPathRequests).toBe(4);
  });
});

for (const fastPath of [true, false]) {
  describe(`issue 32: encode streams on the ${fastPath ? 'fast path' : 'node:http path'}`, () => {
    it('sends compressed bytes before the upstream body ends', async () => {
      let release: () => void = () => {};
      const gate = new Promise<void>((r) => {
        release = r;
      });
      // Random hex: compresses about 2:1, so the compressor emits long before the end.
      const part = Buffer.from(
        Array.from({ length: 200_000 }, () => Math.floor(Math.random() * 16).toString(16)).join(''),
      );
      const up = await upstream(async (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write(part);
        await gate;
        res.end(part);
      });
      const { server, port } = await proxyWith(fastPath, up.port);
      const chunks: Buffer[] = [];
      const socket = net.connect(port, '127.0.0.1', () => socket.write(GET('/stream', GZ)));
      socket.on('data', (d: Buffer) => chunks.push(d));
      const closed = new Promise((r) => socket.on('close', r));
      await until(() => Buffer.concat(chunks).length > 50_000);
      release();
      await closed;
      const { head, body } = plainBody(Buffer.concat(chunks));
      expect(head).toMatch(/\r\ncontent-encoding: gzip\r\n/i);
      expect(body).toBe(`${part}${part}`);
      expect(server.fastPathRequests).toBe(fastPath ? 1 : 0);
    });
  });
}
