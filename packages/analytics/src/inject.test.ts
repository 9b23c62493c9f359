import type { IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { type Coding, createInjector, editInjectedHeaders, injectableCoding } from './inject.js';
import { findClosingTag } from './tag-finder.js';

const TAG = Buffer.from('<script src="/_proxyd/a.js" data-t="x" defer></script>');
const PAGE = '<!doctype html><html><HEAD><title>t</title></HEAD><body><p>hello</p></body></html>';

async function run(coding: Coding, chunks: Buffer[]): Promise<Buffer> {
  const out: Buffer[] = [];
  const t = createInjector(TAG, coding);
  const done = new Promise<void>((resolve, reject) => {
    t.on('data', (d: Buffer) => out.push(d));
    t.on('end', resolve);
    t.on('error', reject);
  });
  Readable.from(chunks).pipe(t);
  await done;
  return Buffer.concat(out);
}

function split(buf: Buffer, size: number): Buffer[] {
  const parts: Buffer[] = [];
  for (let i = 0; i < buf.length; i += size) parts.push(buf.subarray(i, i + size));
  return parts;
}

const req = (method = 'GET') => ({ method }) as IncomingMessage;

describe('findClosingTag', () => {
  it('matches </head> and </body> case-insensitively, not </header>', () => {
    expect(findClosingTag(Buffer.from('<header></header></HeAd >xxxxxx'))).toBe(17);
    expect(findClosingTag(Buffer.from('<p></BODY>xxxxxxx'))).toBe(3);
    expect(findClosingTag(Buffer.from('</header></headline>xxxxxxx'))).toBe(-1);
  });
});

describe('injector', () => {
  it('inserts the tag before </head> whatever the chunking (a tag split across every boundary)', async () => {
    const want = PAGE.replace('</HEAD>', `${TAG}</HEAD>`);
    for (let size = 1; size <= 12; size++) {
      expect((await run('identity', split(Buffer.from(PAGE), size))).toString()).toBe(want);
    }
  });

  it('falls back to </body> and leaves a page with neither unchanged', async () => {
    const noHead = '<html><body>x</body></html>';
    expect((await run('identity', [Buffer.from(noHead)])).toString()).toBe(`<html><body>x${TAG}</body></html>`);
    const fragment = '<p>no closing tags</p>';
    expect((await run('identity', split(Buffer.from(fragment), 3))).toString()).toBe(fragment);
  });

  for (const [coding, encode, decode] of [
    ['gzip', zlib.gzipSync, zlib.gunzipSync],
    ['br', zlib.brotliCompressSync, zlib.brotliDecompressSync],
    ['deflate', zlib.deflateSync, zlib.inflateSync],
  ] as const) {
    it(`decodes, injects and re-encodes a ${coding} body (chunked)`, async () => {
      const big = PAGE.replace('<p>hello</p>', '<p>hello</p>'.repeat(5000));
      const out = await run(coding, split(encode(Buffer.from(big)), 1000));
      expect(decode(out).toString()).toBe(big.replace('</HEAD>', `${TAG}</HEAD>`));
    });
  }

  it('a decompression bomb passes through as the original bytes', async () => {
    const bomb = zlib.gzipSync(Buffer.concat([Buffer.from('<html><head>'), Buffer.alloc(50 * 1024 * 1024, 32)]));
    expect(bomb.length).toBeLessThan(100_000);
    const t0 = Date.now();
    const out = await run('gzip', split(bomb, 16_384));
    expect(out.equals(bomb)).toBe(true);
    expect(Date.now() - t0).toBeLessThan(5000);
  });

  it('a corrupt encoded body passes through unchanged', async () => {
    const bad = Buffer.concat([zlib.gzipSync(Buffer.from(PAGE)).subarray(0, 10), Buffer.from('garbage!garbage!')]);
    expect((await run('gzip', [bad])).equals(bad)).toBe(true);
  });
});

describe('injectableCoding', () => {
  const html = (extra: OutgoingHttpHeaders = {}) => ({ 'content-type': 'text/html; charset=utf-8', ...extra });
  it('only 2xx HTML bodies of non-HEAD requests in a known coding', () => {
    expect(injectableCoding(req(), 200, html())).toBe('identity');
    expect(injectableCoding(req(), 200, html({ 'content-encoding': 'GZIP' }))).toBe('gzip');
    expect(injectableCoding(req(), 200, html({ 'content-encoding': 'br' }))).toBe('br');
    expect(injectableCoding(req(), 200, html({ 'content-encoding': 'zstd' }))).toBeNull();
    expect(injectableCoding(req('HEAD'), 200, html())).toBeNull();
    expect(injectableCoding(req(), 304, html())).toBeNull();
    expect(injectableCoding(req(), 204, html())).toBeNull();
    expect(injectableCoding(req(), 206, html({ 'content-range': 'bytes 0-1/2' }))).toBeNull();
    expect(injectableCoding(req(), 404, html())).toBeNull();
    expect(injectableCoding(req(), 200, { 'content-type': 'application/json' })).toBeNull();
    expect(injectableCoding(req(), 200, {})).toBeNull();
    expect(injectableCoding(req(), 200, html({ 'cache-control': 'public, no-transform' }))).toBeNull();
  });

  it('drops Content-Length and weakens a strong ETag, keeping Content-Encoding', () => {
    const h: OutgoingHttpHeaders = { 'content-length': '10', etag: '"abc"', 'content-encoding': 'gzip' };
    editInjectedHeaders(h);
    expect(h).toEqual({ etag: 'W/"abc"', 'content-encoding': 'gzip' });
  });
});

describe('output is valid for a real consumer', () => {
  it('a gzip body re-encoded by the injector decodes with a streaming gunzip', async () => {
    const out = await run('gzip', [zlib.gzipSync(Buffer.from(PAGE))]);
    expect(await text(Readable.from([out]).pipe(zlib.createGunzip()))).toContain(`${TAG}</HEAD>`);
  });
});
