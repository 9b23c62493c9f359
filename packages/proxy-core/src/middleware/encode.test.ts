import http from 'node:http';
import { Transform } from 'node:stream';
import zlib from 'node:zlib';
import type { Encoding, Site } from '@proxyd/model';
import { describe, expect, it } from 'vitest';
import type { DataPlaneHooks } from '../hooks.js';
import { onCleanup, site, siteProxy, upstream } from '../loopback.test-helpers.js';
import { isCompressibleType, ResponseEncoder, WHOLE_BODY_BYTES } from './encode.js';

interface RawReply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** One request; the body as the bytes that came (not decoded). */
function fetchRaw(
  port: number,
  path: string,
  headers: http.OutgoingHttpHeaders = {},
  method = 'GET',
): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, path, method, headers: { host: 'enc.test', ...headers }, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

function decode(coding: string | undefined, body: Buffer): Buffer {
  if (coding === 'gzip') return zlib.gunzipSync(body);
  if (coding === 'br') return zlib.brotliDecompressSync(body);
  if (coding === 'zstd') return zlib.zstdDecompressSync(body);
  return body;
}

const PAGE = `<!doctype html><html><head><title>t</title></head><body>${'<p>hello compressible world</p>\n'.repeat(200)}</body></html>`;

type Answer = (req: http.IncomingMessage, res: http.ServerResponse) => void;

/** An upstream answering with `answer`, behind a site with `encode` (edit: more site fields). */
async function setup(answer: Answer, edit?: (s: Site) => void, hooks?: DataPlaneHooks, fastPath?: boolean) {
  const up = await upstream(answer);
  const route = site('enc.test', [up.port], (s) => {
    s.encode = { encodings: ['zstd', 'br', 'gzip'], minimum_length: 512 };
    edit?.(s);
  });
  const { port } = await siteProxy([route], {
    ...(hooks === undefined ? {} : { hooks }),
    ...(fastPath === undefined ? {} : { fastPath }),
  });
  return { up, port, get: (path: string, h: http.OutgoingHttpHeaders = {}, m = 'GET') => fetchRaw(port, path, h, m) };
}

const html: Answer = (req, res) => {
  res.writeHead(200, {
    'content-type': 'text/html; charset=utf-8',
    etag: '"v1"',
    'content-length': Buffer.byteLength(PAGE),
  });
  res.end(req.method === 'HEAD' ? undefined : PAGE);
};

describe('encode: the step with a real loopback upstream', () => {
  it.each<Encoding>(['zstd', 'br', 'gzip'])('%s decodes back to the original; head edited', async (coding) => {
    const { get } = await setup(html);
    const r = await get('/', { 'accept-encoding': coding });
    expect(r.status).toBe(200);
    expect(r.headers['content-encoding']).toBe(coding);
    // Compressed whole (declared length under WHOLE_BODY_BYTES): the encoded body's length, not chunked.
    expect(r.headers['content-length']).toBe(String(r.body.length));
    expect(r.headers['transfer-encoding']).toBeUndefined();
    expect(r.headers.vary).toBe('Accept-Encoding');
    expect(r.headers.etag).toBe('W/"v1"');
    expect(r.body.length).toBeLessThan(Buffer.byteLength(PAGE) / 5);
    expect(decode(coding, r.body).toString()).toBe(PAGE);
  });

  it('takes the server preference among equal q, the client q first', async () => {
    const { get } = await setup(html);
    expect((await get('/', { 'accept-encoding': 'gzip, deflate, br, zstd' })).headers['content-encoding']).toBe('zstd');
    expect((await get('/', { 'accept-encoding': 'gzip;q=1, br;q=0.5' })).headers['content-encoding']).toBe('gzip');
    expect((await get('/', { 'accept-encoding': 'gzip;q=0, deflate' })).headers['content-encoding']).toBeUndefined();
  });

  it('no Accept-Encoding: identity with Vary (the representation depends on it)', async () => {
    const { get } = await setup(html);
    const r = await get('/');
    expect(r.headers['content-encoding']).toBeUndefined();
    expect(r.headers['content-length']).toBe(String(Buffer.byteLength(PAGE)));
    expect(r.headers.vary).toBe('Accept-Encoding');
    expect(r.headers.etag).toBe('"v1"');
    expect(r.body.toString()).toBe(PAGE);
  });

  it('HEAD gets the head GET would, and no body', async () => {
    const { get } = await setup(html);
    const g = await get('/', { 'accept-encoding': 'br' });
    const h = await get('/', { 'accept-encoding': 'br' }, 'HEAD');
    expect(h.status).toBe(200);
    expect(h.body.length).toBe(0);
    for (const name of ['content-encoding', 'vary', 'etag', 'content-type'])
      expect([name, h.headers[name]]).toEqual([name, g.headers[name]]);
    // The encoded length is known only by compressing a body a HEAD does not have: none (RFC 9110 §8.6 allows it).
    expect(h.headers['content-length']).toBeUndefined();
  });

  // Issue 32: a stream per response cost as much as compressing a small page.
  for (const fastPath of [true, false]) {
    it.each<Encoding>(['zstd', 'br', 'gzip'])(
      `%s, ${fastPath ? 'fast path' : 'node:http'}: a body of known length up to WHOLE_BODY_BYTES is sent with its encoded length, a longer one chunked`,
      async (coding) => {
        const text = (n: number) =>
          Buffer.from('<p>compressible, whole or streamed</p>\n'.repeat(n / 38 + 1)).subarray(0, n);
        const { get } = await setup(
          (req, res) => {
            const body = text(Number(req.url?.slice(1)));
            res.writeHead(200, { 'content-type': 'text/html', 'content-length': body.length });
            // In three writes: the body is collected whole before it is compressed.
            res.write(body.subarray(0, 100));
            res.write(body.subarray(100, 5000));
            res.end(body.subarray(5000));
          },
          undefined,
          undefined,
          fastPath,
        );
        for (const n of [WHOLE_BODY_BYTES, WHOLE_BODY_BYTES + 1]) {
          const r = await get(`/${n}`, { 'accept-encoding': coding });
          expect(r.headers['content-encoding']).toBe(coding);
          expect(decode(coding, r.body).equals(text(n))).toBe(true);
          if (n === WHOLE_BODY_BYTES) {
            expect(r.headers['content-length']).toBe(String(r.body.length));
            expect(r.headers['transfer-encoding']).toBeUndefined();
          } else {
            expect(r.headers['content-length']).toBeUndefined();
            expect(r.headers['transfer-encoding']).toBe('chunked');
          }
        }
      },
    );
  }

  it('304: no body, no coding; the weak ETag the encoded page carried revalidates with Vary', async () => {
    const { get } = await setup((req, res) => {
      if (req.headers['if-none-match'] !== undefined) res.writeHead(304, { etag: '"v1"' }).end();
      else html(req, res);
    });
    const r = await get('/', { 'accept-encoding': 'gzip', 'if-none-match': 'W/"v1"' });
    expect(r.status).toBe(304);
    expect(r.headers['content-encoding']).toBeUndefined();
    expect(r.headers.etag).toBe('W/"v1"');
    expect(r.headers.vary).toBe('Accept-Encoding');
    const strong = await get('/', { 'accept-encoding': 'gzip', 'if-none-match': '"v1"' });
    expect(strong.headers.etag).toBe('"v1"');
  });

  it('a Range request is never encoded: the 206 passes untouched', async () => {
    const { get, up } = await setup((req, res) => {
      if (req.headers.range !== undefined) {
        res.writeHead(206, {
          'content-type': 'text/html',
          'content-range': `bytes 0-9/${PAGE.length}`,
          'content-length': 10,
        });
        res.end(PAGE.slice(0, 10));
      } else html(req, res);
    });
    const r = await get('/', { 'accept-encoding': 'gzip', range: 'bytes=0-9' });
    expect(r.status).toBe(206);
    expect(r.headers['content-encoding']).toBeUndefined();
    expect(r.body.toString()).toBe(PAGE.slice(0, 10));
    expect(up.seen[0]?.headers.range).toBe('bytes=0-9');
  });

  it('an upstream body already encoded passes untouched (never twice)', async () => {
    const gz = zlib.gzipSync(PAGE);
    const { get } = await setup((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'gzip', 'content-length': gz.length });
      res.end(gz);
    });
    const r = await get('/', { 'accept-encoding': 'zstd, br, gzip' });
    expect(r.headers['content-encoding']).toBe('gzip');
    expect(r.body.equals(gz)).toBe(true);
  });

  it('Cache-Control: no-transform, a small body, a non-compressible type: identity', async () => {
    const big = Buffer.alloc(4096, 7);
    const { get } = await setup((req, res) => {
      if (req.url === '/nt')
        res.writeHead(200, { 'content-type': 'text/html', 'cache-control': 'no-transform' }).end(PAGE);
      else if (req.url === '/small') res.writeHead(200, { 'content-type': 'text/plain' }).end('x'.repeat(511));
      else res.writeHead(200, { 'content-type': 'image/png' }).end(big);
    });
    const nt = await get('/nt', { 'accept-encoding': 'gzip' });
    expect(nt.headers['content-encoding']).toBeUndefined();
    expect(nt.body.toString()).toBe(PAGE);
    const small = await get('/small', { 'accept-encoding': 'gzip' });
    expect(small.headers['content-encoding']).toBeUndefined();
    expect(small.headers['content-length']).toBe('511');
    expect(small.headers.vary).toBeUndefined();
    const png = await get('/png', { 'accept-encoding': 'gzip' });
    expect(png.headers['content-encoding']).toBeUndefined();
    expect(png.body.equals(big)).toBe(true);
  });

  it('a chunked body is held up to minimum_length before deciding', async () => {
    const { get } = await setup((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      if (req.url === '/small') {
        res.write('{"a":');
        setTimeout(() => res.end('1}'), 5);
      } else {
        res.write('[');
        let i = 0;
        const more = () => {
          if (i++ < 50) {
            res.write(`${i},`.repeat(40));
            setImmediate(more);
          } else res.end('0]');
        };
        more();
      }
    });
    const small = await get('/small', { 'accept-encoding': 'gzip' });
    expect(small.headers['content-encoding']).toBeUndefined();
    expect(small.headers['content-length']).toBe('7');
    expect(small.body.toString()).toBe('{"a":1}');
    const big = await get('/big', { 'accept-encoding': 'gzip' });
    expect(big.headers['content-encoding']).toBe('gzip');
    const text = decode('gzip', big.body).toString();
    expect(text.startsWith('[1,1,')).toBe(true);
    expect(text.endsWith(',0]')).toBe(true);
  });

  it('merges Vary with the upstream one, and leaves Vary: * alone', async () => {
    const { get } = await setup((req, res) => {
      res.writeHead(200, { 'content-type': 'text/html', vary: req.url === '/star' ? '*' : 'Origin' }).end(PAGE);
    });
    expect((await get('/o', { 'accept-encoding': 'gzip' })).headers.vary).toBe('Origin, Accept-Encoding');
    expect((await get('/star', { 'accept-encoding': 'gzip' })).headers.vary).toBe('*');
  });

  it('streams a large body with backpressure, and respond answers are encoded too', async () => {
    const chunk = Buffer.from('0123456789abcdef'.repeat(4096));
    const { get } = await setup((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      let n = 0;
      const pump = () => {
        while (n < 256) {
          n++;
          if (!res.write(chunk)) {
            res.once('drain', pump);
            return;
          }
        }
        res.end();
      };
      pump();
    });
    const r = await get('/', { 'accept-encoding': 'zstd' });
    expect(r.headers['content-encoding']).toBe('zstd');
    expect(decode('zstd', r.body).equals(Buffer.concat(Array(256).fill(chunk)))).toBe(true);
  });

  it('a client that leaves mid-body: the compressor is dropped and the site keeps serving', async () => {
    const chunk = Buffer.from('abcdefgh'.repeat(8192));
    const { port, get } = await setup((req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      if (req.url === '/after') {
        res.end('ok');
        return;
      }
      const timer = setInterval(() => res.write(chunk), 2);
      res.on('close', () => clearInterval(timer));
    });
    await new Promise<void>((resolve, reject) => {
      const req = http.get(
        { host: '127.0.0.1', port, path: '/', headers: { host: 'enc.test', 'accept-encoding': 'br' }, agent: false },
        (res) => {
          expect(res.headers['content-encoding']).toBe('br');
          res.once('data', () => {
            req.destroy();
            resolve();
          });
        },
      );
      req.on('error', (err) => (req.destroyed ? resolve() : reject(err)));
    });
    const after = await get('/after', { 'accept-encoding': 'gzip' });
    expect([after.status, after.body.toString()]).toEqual([200, 'ok']);
  });

  it('encodes the site’s own answers (respond), without editing the shared canned head', async () => {
    const up = await upstream();
    const body = 'respond body '.repeat(100);
    const route = site('enc.test', [up.port], (s) => {
      s.encode = { encodings: ['gzip'], minimum_length: 512 };
      s.handler = { kind: 'respond', status: 200, body };
    });
    const { port } = await siteProxy([route]);
    const gz = await fetchRaw(port, '/', { 'accept-encoding': 'gzip' });
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(decode('gzip', gz.body).toString()).toBe(body);
    const plain = await fetchRaw(port, '/');
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.headers['content-length']).toBe(String(body.length));
    expect(plain.body.toString()).toBe(body);
  });
});

describe('encode: a handler that writes more than its Content-Length', () => {
  it('loses nothing: the collected bytes and the rest stream, chunked', async () => {
    const encoder = new ResponseEncoder({ encodings: ['gzip'], minimum_length: 512 });
    const body = Buffer.from('more than declared, '.repeat(100));
    // A local handler's mistake (a proxied body is framed by its upstream): 600 declared, 2,000 written.
    const server = http.createServer((req, res) => {
      encoder.wrap(req, res);
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': 600 });
      res.write(body.subarray(0, 500));
      res.write(body.subarray(500));
      res.end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    onCleanup(() => new Promise<void>((r) => server.close(() => r())));
    const { port } = server.address() as { port: number };
    const r = await fetchRaw(port, '/', { 'accept-encoding': 'gzip' });
    expect(r.headers['content-encoding']).toBe('gzip');
    expect(r.headers['content-length']).toBeUndefined();
    expect(r.headers['transfer-encoding']).toBe('chunked');
    expect(decode('gzip', r.body).equals(body)).toBe(true);
  });
});

describe('encode and the cache: entries per coding', () => {
  it('stores identity once and encodes it per client; never serves a coding the client did not ask for', async () => {
    const { get, up } = await setup(
      (req, res) => {
        res.setHeader('cache-control', 'public, max-age=60');
        if (req.url === '/self' && req.headers['accept-encoding']?.includes('gzip')) {
          const gz = zlib.gzipSync(PAGE);
          res
            .writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'gzip', vary: 'Accept-Encoding' })
            .end(gz);
        } else html(req, res);
      },
      (s) => {
        s.cache = { max_size_bytes: 8 * 1024 * 1024, ttl_ms: 60_000 };
      },
    );
    const first = await get('/page', { 'accept-encoding': 'gzip' });
    expect([first.headers['x-cache'], first.headers['content-encoding']]).toEqual(['MISS', 'gzip']);
    const identity = await get('/page');
    expect([identity.headers['x-cache'], identity.headers['content-encoding']]).toEqual(['HIT', undefined]);
    expect(identity.body.toString()).toBe(PAGE);
    const br = await get('/page', { 'accept-encoding': 'br' });
    expect([br.headers['x-cache'], br.headers['content-encoding']]).toEqual(['HIT', 'br']);
    expect(decode('br', br.body).toString()).toBe(PAGE);
    expect(up.urls.filter((u) => u === '/page')).toHaveLength(1);

    // An upstream that gzips itself: its entry is the gzip variant, served to gzip clients only.
    const gz = await get('/self', { 'accept-encoding': 'gzip' });
    expect([gz.headers['x-cache'], gz.headers['content-encoding']]).toEqual(['MISS', 'gzip']);
    expect((await get('/self', { 'accept-encoding': 'gzip' })).headers['x-cache']).toBe('HIT');
    const none = await get('/self');
    expect([none.headers['x-cache'], none.headers['content-encoding']]).toEqual(['MISS', undefined]);
    expect(none.body.toString()).toBe(PAGE);
    const zstdOnly = await get('/self', { 'accept-encoding': 'zstd' });
    expect(zstdOnly.headers['content-encoding']).toBe('zstd');
    expect(decode('zstd', zstdOnly.body).toString()).toBe(PAGE);
  });
});

describe('encode after analytics injection', () => {
  const TAG = '<script defer src="/_proxyd/a.js"></script>';
  const inject = (b: Buffer) => Buffer.from(b.toString().replace('</head>', `${TAG}</head>`));
  const injecting: DataPlaneHooks = {
    rewriteBody: (_ctx, _req, _status, headers) =>
      String(headers['content-type']).startsWith('text/html') && headers['content-encoding'] === undefined
        ? inject
        : null,
    transformResponse: (_ctx, _req, _status, headers) => {
      if (!String(headers['content-type']).startsWith('text/html')) return null;
      delete headers['content-length'];
      const chunks: Buffer[] = [];
      return new Transform({
        transform(c: Buffer, _e, cb) {
          chunks.push(c);
          cb();
        },
        flush(cb) {
          cb(null, inject(Buffer.concat(chunks)));
        },
      });
    },
  };

  it.each<Encoding>(['gzip', 'br', 'zstd'])(
    'the decoded %s page holds the injected tag (whole and streamed)',
    async (coding) => {
      const { get } = await setup(
        (req, res) => {
          if (req.url === '/stream') res.writeHead(200, { 'content-type': 'text/html' }).end(PAGE);
          else html(req, res);
        },
        undefined,
        injecting,
      );
      for (const path of ['/', '/stream']) {
        const r = await get(path, { 'accept-encoding': coding });
        expect(r.headers['content-encoding']).toBe(coding);
        const text = decode(coding, r.body).toString();
        expect(text).toContain(`${TAG}</head>`);
        expect(text).toBe(PAGE.replace('</head>', `${TAG}</head>`));
      }
    },
  );
});

describe('isCompressibleType', () => {
  it.each([
    ['text/html; charset=utf-8', true],
    ['TEXT/CSS', true],
    ['text/event-stream', false],
    ['application/json', true],
    ['application/ld+json', true],
    ['application/javascript', true],
    ['application/rss+xml', true],
    ['image/svg+xml', true],
    ['application/wasm', true],
    ['image/png', false],
    ['font/woff2', false],
    ['application/octet-stream', false],
  ])('%s → %s', (type, expected) => {
    expect(isCompressibleType(type)).toBe(expected);
  });
});
