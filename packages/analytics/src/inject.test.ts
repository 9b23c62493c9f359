import { randomBytes } from 'node:crypto';
import type { IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import {
  type Coding,
  createInjector,
  DEFAULT_INJECT_LIMITS,
  editInjectedHeaders,
  type InjectLimits,
  type Injector,
  injectableCoding,
  sharesInjectedHeaders,
} from './inject.js';
import { ClosingTagFinder, findClosingTag } from './tag-finder.js';

const TAG = Buffer.from('<script src="/_proxyd/a.js" data-t="x" defer></script>');
const PAGE = '<!doctype html><html><HEAD><title>t</title></HEAD><body><p>hello</p></body></html>';

async function run(coding: Coding, chunks: Buffer[], limits?: InjectLimits): Promise<Buffer> {
  return (await runWith(coding, chunks, limits)).out;
}

async function runWith(
  coding: Coding,
  chunks: Buffer[],
  limits: InjectLimits = DEFAULT_INJECT_LIMITS,
): Promise<{ out: Buffer; injector: Injector }> {
  const out: Buffer[] = [];
  const t = createInjector(TAG, coding, limits);
  const done = new Promise<void>((resolve, reject) => {
    t.on('data', (d: Buffer) => out.push(d));
    t.on('end', resolve);
    t.on('error', reject);
  });
  Readable.from(chunks).pipe(t);
  await done;
  return { out: Buffer.concat(out), injector: t };
}

function split(buf: Buffer, size: number): Buffer[] {
  const parts: Buffer[] = [];
  for (let i = 0; i < buf.length; i += size) parts.push(buf.subarray(i, i + size));
  return parts;
}

const req = (method = 'GET', headers: Record<string, string> = {}) => ({ method, headers }) as IncomingMessage;

const CODECS = [
  ['gzip', zlib.gzipSync, zlib.gunzipSync],
  ['br', zlib.brotliCompressSync, zlib.brotliDecompressSync],
  ['deflate', zlib.deflateSync, zlib.inflateSync],
] as const;

/** Where the tag must go: before the real `</head>` marked `@@` in the fixture. */
function expectInjected(doc: string): { input: string; want: string } {
  const at = doc.indexOf('@@');
  const input = doc.replace('@@', '');
  return { input, want: `${input.slice(0, at)}${TAG}${input.slice(at)}` };
}

// Each document hides a `</head>` or `</body>` where a browser sees text; `@@` marks the real one.
const TRAPS: Record<string, string> = {
  'script string': '<html><head><script>var s = "</head>"; if (a < b) x = \'</body>\';</script>@@</head><body></body>',
  comment: '<head><!-- </head> -- > --!> still a comment --><!----><!---->@@</head>',
  'abrupt comments (closed at once, the next tag is real)': '<head><!-->x<!--->@@</head></head>',
  title: '<head><title>My </head> & </body> page</TITLE >@@</HEAD>',
  textarea: '<body><textarea name="t"></body></textarea >@@</body>',
  style: '<head><style>p::after{content:"</head>"}</style>@@</head>',
  noscript: '<head><noscript></head><p>js off</p></noscript>@@</head>',
  'attribute value': '<head><meta content="</head>"><meta content=\'a>b</head>\'>@@</head>',
  'bogus comment and doctype': '<!DOCTYPE html><?xml </head> ?><head></ </head>@@</head>',
  cdata: '<body><svg><![CDATA[ </body> ]]></svg>@@</body>',
  'script end tag with attributes': '<head><script>"</scripts></head>"</script foo="></head>">@@</head>',
  'not head': '<head><header></header></headline></head-x>@@</head >',
};

describe('findClosingTag', () => {
  it('matches </head> and </body> case-insensitively, not </header>', () => {
    expect(findClosingTag(Buffer.from('<header></header></HeAd >xxxxxx'))).toBe(17);
    expect(findClosingTag(Buffer.from('<p></BODY>xxxxxxx'))).toBe(3);
    expect(findClosingTag(Buffer.from('</header></headline>xxxxxxx'))).toBe(-1);
    expect(findClosingTag(Buffer.from('<p></head'))).toBe(-1);
  });

  it('nothing after <plaintext> is markup', () => {
    expect(findClosingTag(Buffer.from('<body><plaintext></body></plaintext></body>'))).toBe(-1);
  });

  it('starts every document afresh, whatever state the previous one ended in', () => {
    // Each of these ends inside something that would hide a closing tag if its state were kept.
    const unfinished = [
      '<plaintext>',
      '<!-- ',
      '<script>',
      '<title>',
      '<p class="',
      '<![CDATA[',
      '<!doctype ',
      '</hea',
    ];
    for (const before of unfinished) {
      expect(findClosingTag(Buffer.from(before))).toBe(-1);
      expect(findClosingTag(Buffer.from('<head></head>'))).toBe(6);
    }
    expect(findClosingTag(Buffer.from('<p></body>'))).toBe(3);
    expect(findClosingTag(Buffer.from('xx</head>'))).toBe(2);
  });

  for (const [name, doc] of Object.entries(TRAPS)) {
    it(`skips closing tags hidden in: ${name}, whatever the chunking`, async () => {
      const { input, want } = expectInjected(doc);
      const bytes = Buffer.from(input);
      expect(findClosingTag(bytes)).toBe(doc.indexOf('@@'));
      // Every two-chunk split (so the split falls in every tokenizer state), then fixed sizes.
      for (let cut = 0; cut <= bytes.length; cut++) {
        const finder = new ClosingTagFinder();
        const first = finder.feed(bytes.subarray(0, cut));
        const second = finder.feed(bytes.subarray(cut));
        expect(first >= 0 ? first : second, `split at ${cut}`).toBe(doc.indexOf('@@'));
        expect((await run('identity', [bytes.subarray(0, cut), bytes.subarray(cut)])).toString()).toBe(want);
      }
      for (const size of [1, 2, 3, 5, 7]) {
        expect((await run('identity', split(bytes, size))).toString(), `chunks of ${size}`).toBe(want);
      }
    });
  }
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

  for (const [coding, encode, decode] of CODECS) {
    it(`decodes, injects and re-encodes a ${coding} body (chunked)`, async () => {
      const big = PAGE.replace('<p>hello</p>', '<p>hello</p>'.repeat(5000));
      const out = await run(coding, split(encode(Buffer.from(big)), 1000));
      expect(decode(out).toString()).toBe(big.replace('</HEAD>', `${TAG}</HEAD>`));
    });

    it(`a ${coding} body of incompressible text before </head>, in 7 B / 100 B / 4 KB chunks`, async () => {
      const noise = randomBytes(24 * 1024).toString('base64');
      const doc = `<html><head><script>var n = "${noise}"; // </head></script><title>x</title></head><body>${noise}</body>`;
      const want = doc.replace('</title></head>', `</title>${TAG}</head>`);
      const encoded = encode(Buffer.from(doc));
      expect(encoded.length).toBeGreaterThan(0.7 * noise.length);
      for (const size of [7, 100, 4096]) {
        const { out, injector } = await runWith(coding, split(encoded, size));
        expect(decode(out).toString(), `chunks of ${size}`).toBe(want);
        expect(injector.decodedBytes).toBe(Buffer.byteLength(doc));
      }
    });

    it(`a small ${coding} page gives the same bytes through the one-call path and the streaming path`, async () => {
      const encoded = encode(Buffer.from(PAGE));
      const want = PAGE.replace('</HEAD>', `${TAG}</HEAD>`);
      const oneCall = await runWith(coding, split(encoded, 7));
      const streamed = await runWith(coding, split(encoded, 7), { ...DEFAULT_INJECT_LIMITS, maxSyncEncoded: 0 });
      expect(decode(oneCall.out).toString()).toBe(want);
      expect(decode(streamed.out).toString()).toBe(want);
      expect([oneCall.injector.decodedBytes, streamed.injector.decodedBytes]).toEqual([PAGE.length, PAGE.length]);
    });

    it(`a ${coding} body with no closing tag passes through as the original bytes`, async () => {
      const encoded = encode(Buffer.from(`<p>${randomBytes(4000).toString('hex')}</p>`));
      for (const size of [7, 100, 4096]) expect((await run(coding, split(encoded, size))).equals(encoded)).toBe(true);
    });
  }

  it('decodes each encoded byte once: the work is linear in the body, not in the number of chunks', async () => {
    // ~90 KB of incompressible text before </head> (the case that took 38–128 ms of re-decoding per body).
    const doc = `<html><head><style>/*${randomBytes(67 * 1024).toString('base64')}*/</style></head><body></body>`;
    const gz = zlib.gzipSync(Buffer.from(doc));
    expect(gz.length).toBeGreaterThan(60_000);
    for (const size of [200, 4096]) {
      const { out, injector } = await runWith('gzip', split(gz, size));
      expect(zlib.gunzipSync(out).toString()).toBe(doc.replace('</style></head>', `</style>${TAG}</head>`));
      // Re-decoding the held prefix on every chunk would decode ~n²/2 / size bytes (~23 MB for 200-byte chunks).
      expect(injector.decodedBytes).toBe(Buffer.byteLength(doc));
    }
  });

  it('past the held-bytes bound the original passes untouched', async () => {
    const doc = `<html><head><style>/*${randomBytes(8 * 1024).toString('base64')}*/</style></head>`;
    const gz = zlib.gzipSync(Buffer.from(doc));
    const limits = { ...DEFAULT_INJECT_LIMITS, maxHeldEncoded: 4096 };
    expect((await run('gzip', split(gz, 1000), limits)).equals(gz)).toBe(true);
    // Within the bound it is injected.
    expect(zlib.gunzipSync(await run('gzip', split(gz, 1000))).toString()).toContain(`${TAG}</head>`);
  });

  it('a small encoded body that inflates past the search bound is left to the streaming path and bounded the same way', async () => {
    const limits = { ...DEFAULT_INJECT_LIMITS, maxSearchDecoded: 64 * 1024 };
    const late = zlib.gzipSync(Buffer.from(`<html><head>${' '.repeat(100_000)}</head>`));
    expect(late.length).toBeLessThan(limits.maxSyncEncoded);
    expect((await run('gzip', [late], limits)).equals(late)).toBe(true);
    const early = `<html><head></head><body>${' '.repeat(100_000)}</body>`;
    const out = await run('gzip', [zlib.gzipSync(Buffer.from(early))], limits);
    expect(zlib.gunzipSync(out).toString()).toBe(early.replace('</head>', `${TAG}</head>`));
  });

  it('a truncated encoded body with no tag yet passes through unchanged', async () => {
    const gz = zlib.gzipSync(Buffer.from(`<html><head>${'<meta name="x">'.repeat(200)}</head>`));
    const truncated = gz.subarray(0, 40);
    expect((await run('gzip', split(truncated, 7))).equals(truncated)).toBe(true);
  });

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

  it('drops Content-Length and body digests and weakens a strong ETag, keeping Content-Encoding', () => {
    const h: OutgoingHttpHeaders = {
      'content-length': '10',
      etag: '"abc"',
      'content-encoding': 'gzip',
      'content-md5': 'x',
      'content-digest': 'sha-256=:x:',
      'repr-digest': 'sha-256=:x:',
      digest: 'SHA-256=x',
    };
    editInjectedHeaders(h);
    expect(h).toEqual({ etag: 'W/"abc"', 'content-encoding': 'gzip' });
    const weak: OutgoingHttpHeaders = { etag: 'W/"abc"' };
    editInjectedHeaders(weak);
    expect(weak).toEqual({ etag: 'W/"abc"' });
  });

  it('HEAD of an injectable page and a 304 revalidating one share the injected headers', () => {
    expect(sharesInjectedHeaders(req('HEAD'), 200, html())).toBe(true);
    expect(sharesInjectedHeaders(req('HEAD'), 200, html({ 'content-encoding': 'br' }))).toBe(true);
    expect(sharesInjectedHeaders(req('HEAD'), 200, html({ 'content-encoding': 'zstd' }))).toBe(false);
    expect(sharesInjectedHeaders(req('HEAD'), 200, { 'content-type': 'application/json' })).toBe(false);
    expect(sharesInjectedHeaders(req('HEAD'), 404, html())).toBe(false);
    expect(sharesInjectedHeaders(req('GET'), 200, html())).toBe(false);
    expect(sharesInjectedHeaders(req('GET'), 304, html())).toBe(true);
    expect(sharesInjectedHeaders(req('GET'), 304, { 'content-type': 'image/png', etag: '"a"' })).toBe(false);
    expect(sharesInjectedHeaders(req('GET', { 'if-none-match': '"b", W/"a"' }), 304, { etag: '"a"' })).toBe(true);
    expect(sharesInjectedHeaders(req('GET', { 'if-none-match': '"a"' }), 304, { etag: '"a"' })).toBe(false);
    expect(sharesInjectedHeaders(req('GET'), 304, { etag: '"a"' })).toBe(false);
    expect(
      sharesInjectedHeaders(req('GET', { 'if-none-match': 'W/"a"' }), 304, {
        etag: '"a"',
        'cache-control': 'no-transform',
      }),
    ).toBe(false);
  });
});

describe('output is valid for a real consumer', () => {
  it('a gzip body re-encoded by the injector decodes with a streaming gunzip', async () => {
    const out = await run('gzip', [zlib.gzipSync(Buffer.from(PAGE))]);
    expect(await text(Readable.from([out]).pipe(zlib.createGunzip()))).toContain(`${TAG}</HEAD>`);
  });
});
