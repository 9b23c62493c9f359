import type { IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import { Transform, type TransformCallback } from 'node:stream';
import zlib from 'node:zlib';
import { ClosingTagFinder, findClosingTag } from './tag-finder.js';

/** The content codings the injector can decode and re-encode. */
export type Coding = 'identity' | 'gzip' | 'br' | 'deflate';

/** Bounds of the injector (bytes). */
export interface InjectLimits {
  /** Encoded bytes held while looking for the tag; past it the original bytes pass untouched. */
  maxHeldEncoded: number;
  /** Decoded bytes searched for the tag in an encoded body; past it (or a bomb) the original passes. */
  maxSearchDecoded: number;
  /** Decoded bytes of a whole re-encoded body; past it the response is aborted (a bomb after `</head>`). */
  maxDecodedTotal: number;
  /**
   * An encoded body that ends within this many bytes is decoded and re-encoded
   * in one synchronous call each (a zlib stream pair costs ~10× more CPU for a
   * small page); a longer one streams.
   */
  maxSyncEncoded: number;
}

/** Default bounds: 128 KiB held, 1 MiB searched, 64 MiB decoded in total, bodies up to 8 KiB encoded coded in one call. */
export const DEFAULT_INJECT_LIMITS: Readonly<InjectLimits> = Object.freeze({
  maxHeldEncoded: 128 * 1024,
  maxSearchDecoded: 1024 * 1024,
  maxDecodedTotal: 64 * 1024 * 1024,
  maxSyncEncoded: 8 * 1024,
});

function header(headers: OutgoingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  if (value === undefined) return undefined;
  return Array.isArray(value) ? value.join(', ') : String(value);
}

function isHtml(type: string): boolean {
  const t = type.toLowerCase();
  return t.startsWith('text/html') || t.startsWith('application/xhtml+xml');
}

/** The coding of an HTML body the injector may change, judged on headers alone (status and method aside). */
function injectableRepresentation(headers: OutgoingHttpHeaders): Coding | null {
  const type = header(headers, 'content-type');
  if (type === undefined || !isHtml(type)) return null;
  if (headers['content-range'] !== undefined) return null;
  if (header(headers, 'cache-control')?.toLowerCase().includes('no-transform')) return null;
  const coding = header(headers, 'content-encoding')?.trim().toLowerCase();
  if (coding === undefined || coding === '' || coding === 'identity') return 'identity';
  if (coding === 'gzip' || coding === 'x-gzip') return 'gzip';
  if (coding === 'br' || coding === 'deflate') return coding;
  return null;
}

function injectableStatus(status: number): boolean {
  return status >= 200 && status < 300 && status !== 204 && status !== 206;
}

/**
 * Whether a response gets the script and with which coding, or null: only a
 * 2xx (not 204/206) HTML body (`text/html`, `application/xhtml+xml`) of a
 * non-HEAD request, without `Cache-Control: no-transform` or `Content-Range`,
 * coded identity, gzip, br or deflate (anything else passes untouched).
 */
export function injectableCoding(req: IncomingMessage, status: number, headers: OutgoingHttpHeaders): Coding | null {
  if (req.method === 'HEAD' || !injectableStatus(status)) return null;
  return injectableRepresentation(headers);
}

/**
 * Whether a bodiless response describes a page a GET would get injected, so
 * its headers must get the same edit (RFC 9110 §9.3.2, §15.4.5): the `HEAD`
 * of such a page, or a `304` revalidating one. A 304 usually has no
 * Content-Type: it counts when it has an HTML one, or when the client
 * revalidates with the weak ETag the injected page carried (`W/` + the 304's
 * strong ETag).
 */
export function sharesInjectedHeaders(req: IncomingMessage, status: number, headers: OutgoingHttpHeaders): boolean {
  if (req.method === 'HEAD' && injectableStatus(status)) return injectableRepresentation(headers) !== null;
  if (status !== 304) return false;
  if (header(headers, 'content-type') !== undefined) return injectableRepresentation(headers) !== null;
  if (header(headers, 'cache-control')?.toLowerCase().includes('no-transform')) return false;
  const etag = headers.etag;
  const asked = req.headers['if-none-match'];
  if (typeof etag !== 'string' || etag.startsWith('W/') || asked === undefined) return false;
  const weak = `W/${etag}`;
  return asked.split(',').some((tag) => tag.trim() === weak);
}

/** Headers that describe the exact bytes of the body, wrong once the body changes. */
const BODY_DIGESTS = ['content-md5', 'content-digest', 'repr-digest', 'digest'] as const;

/**
 * Edits the headers of a response the injector will change (or of a HEAD or
 * 304 that stands for one): the length is unknown (`Content-Length` dropped,
 * so the body is chunked), plus {@link editRewrittenHeaders}.
 */
export function editInjectedHeaders(headers: OutgoingHttpHeaders): void {
  if (headers['content-length'] !== undefined) delete headers['content-length'];
  editRewrittenHeaders(headers);
}

/**
 * The edits of a body rewritten whole, whose new length the data plane sets:
 * a strong ETag becomes weak, and digests of the original bytes
 * (`Content-MD5`, `Content-Digest`, `Repr-Digest`, `Digest`) are dropped.
 * `Content-Encoding` stays: the body is re-encoded. Only headers present are
 * deleted (a `delete` turns the object into a slower dictionary).
 */
export function editRewrittenHeaders(headers: OutgoingHttpHeaders): void {
  for (const name of BODY_DIGESTS) if (headers[name] !== undefined) delete headers[name];
  const etag = headers.etag;
  if (typeof etag === 'string' && !etag.startsWith('W/')) headers.etag = `W/${etag}`;
}

function decodeSync(coding: Exclude<Coding, 'identity'>, data: Buffer, maxOutputLength: number): Buffer {
  if (coding === 'br') return zlib.brotliDecompressSync(data, { maxOutputLength });
  return coding === 'gzip' ? zlib.gunzipSync(data, { maxOutputLength }) : zlib.inflateSync(data, { maxOutputLength });
}

function encodeSync(coding: Exclude<Coding, 'identity'>, data: Buffer): Buffer {
  if (coding === 'br') return zlib.brotliCompressSync(data, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 5 } });
  return coding === 'gzip' ? zlib.gzipSync(data, { level: 5 }) : zlib.deflateSync(data, { level: 5 });
}

function decoder(coding: Exclude<Coding, 'identity'>): Transform {
  if (coding === 'br') return zlib.createBrotliDecompress();
  return coding === 'gzip' ? zlib.createGunzip() : zlib.createInflate();
}

function encoder(coding: Exclude<Coding, 'identity'>): Transform {
  if (coding === 'br') return zlib.createBrotliCompress({ params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 5 } });
  return coding === 'gzip' ? zlib.createGzip({ level: 5 }) : zlib.createDeflate({ level: 5 });
}

/** The injector: a transform that also tells how many decoded bytes it has seen (0 for identity). */
export interface Injector extends Transform {
  /** Bytes the decoder has produced so far (each encoded byte is decoded once). */
  readonly decodedBytes: number;
}

/** Inserts a tag before `</head>` / `</body>` of an identity-coded stream; passes everything else as is. */
class IdentityInjector extends Transform implements Injector {
  readonly #tag: Buffer;
  readonly #finder = new ClosingTagFinder();
  /** The bytes from a possible tag start on, held back until the tag's name ends. */
  #carry: Buffer | null = null;
  #carryStart = 0;
  #done = false;

  constructor(tag: Buffer) {
    super();
    this.#tag = tag;
  }

  get decodedBytes(): number {
    return 0;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    if (this.#done) {
      callback(null, chunk);
      return;
    }
    const start = this.#carry === null ? this.#finder.offset : this.#carryStart;
    const at = this.#finder.feed(chunk);
    const data = this.#carry === null ? chunk : Buffer.concat([this.#carry, chunk]);
    this.#carry = null;
    if (at >= 0) {
      this.#done = true;
      const cut = at - start;
      // One buffer, so the response gets one write (one chunk) instead of three.
      callback(null, Buffer.concat([data.subarray(0, cut), this.#tag, data.subarray(cut)]));
      return;
    }
    const pending = this.#finder.pending;
    if (pending < 0) {
      callback(null, data);
      return;
    }
    const keep = pending - start;
    this.#carry = Buffer.from(data.subarray(keep));
    this.#carryStart = pending;
    callback(null, keep > 0 ? data.subarray(0, keep) : undefined);
  }

  override _flush(callback: TransformCallback): void {
    callback(null, this.#carry ?? undefined);
  }
}

/**
 * Injects into a gzip/br/deflate body. A body that ends within
 * `maxSyncEncoded` bytes is held, then decoded, injected and re-encoded with
 * one synchronous call each. A longer one goes through one streaming decoder
 * fed chunk by chunk (each byte decoded once). While looking for the tag it holds the
 * original encoded bytes and the decoded ones, bounded by `maxHeldEncoded` and
 * `maxSearchDecoded`, and scans only the new output (the tokenizer's state
 * carries across chunks). Once the tag is found it re-encodes (same coding)
 * the held decoded bytes with the tag inserted, then streams decode → encode.
 * When the tag is not found within the bounds, the body does not decode
 * (corrupt), or it inflates past the search bound (a bomb), the held original
 * bytes and the rest pass through untouched: the page never breaks.
 */
class EncodedInjector extends Transform implements Injector {
  readonly #tag: Buffer;
  readonly #coding: Exclude<Coding, 'identity'>;
  readonly #limits: InjectLimits;
  readonly #finder = new ClosingTagFinder();
  /** The streaming decoder, created once the body outgrows `maxSyncEncoded`. */
  #decoder: Transform | null = null;
  #encoder: Transform | null = null;
  #mode: 'search' | 'pass' | 'inject' = 'search';
  /** Original encoded bytes, for the fallback. */
  #held: Buffer[] = [];
  #heldBytes = 0;
  /** Decoded bytes since the start (search mode only). */
  #decoded: Buffer[] = [];
  #decodedBytes = 0;
  /** The `_transform`/`_flush` callback waiting for the decoder. */
  #waiting: TransformCallback | null = null;

  constructor(tag: Buffer, coding: Exclude<Coding, 'identity'>, limits: InjectLimits) {
    super();
    this.#tag = tag;
    this.#coding = coding;
    this.#limits = limits;
  }

  get decodedBytes(): number {
    return this.#decodedBytes;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    if (this.#mode === 'pass') {
      callback(null, chunk);
      return;
    }
    if (this.#mode === 'search') {
      this.#held.push(chunk);
      this.#heldBytes += chunk.length;
      if (this.#heldBytes > this.#limits.maxHeldEncoded) {
        this.#pass();
        callback();
        return;
      }
      if (this.#decoder === null) {
        if (this.#heldBytes <= this.#limits.maxSyncEncoded) {
          callback();
          return;
        }
        this.#waiting = callback;
        this.#stream(() => this.#release());
        return;
      }
    }
    this.#waiting = callback;
    (this.#decoder as Transform).write(chunk, () => this.#release());
  }

  override _flush(callback: TransformCallback): void {
    if (this.#mode === 'pass') {
      callback();
      return;
    }
    this.#waiting = callback;
    if (this.#decoder === null && this.#injectSync()) return;
    if (this.#decoder === null) this.#stream();
    // The flush callback waits for the encoder's end (or the fallback).
    (this.#decoder as Transform).end();
  }

  override _destroy(err: Error | null, callback: (error?: Error | null) => void): void {
    this.#decoder?.destroy();
    this.#encoder?.destroy();
    callback(err);
  }

  /** Starts the streaming decoder and feeds it what is held; `written` runs once the last held chunk is consumed. */
  #stream(written?: () => void): void {
    const dec = decoder(this.#coding);
    dec.on('data', (data: Buffer) => this.#onDecoded(data));
    dec.on('error', (err: Error) => {
      if (this.#mode === 'search') this.#pass();
      else if (this.#mode === 'inject') this.destroy(err);
    });
    dec.on('end', () => this.#onDecoderEnd());
    this.#decoder = dec;
    const held = this.#held;
    for (let i = 0; i < held.length; i++) dec.write(held[i] as Buffer, i === held.length - 1 ? written : undefined);
    if (held.length === 0) written?.();
  }

  /**
   * The whole (small) body is held: decode, inject and re-encode it in one
   * call each. False when it decodes past the search bound (left to the
   * streaming path, which bounds it the same way); true when done (injected,
   * or passed as the original bytes when corrupt, truncated or tagless).
   */
  #injectSync(): boolean {
    const original = this.#held.length === 1 ? (this.#held[0] as Buffer) : Buffer.concat(this.#held);
    let decoded: Buffer;
    try {
      decoded = decodeSync(this.#coding, original, this.#limits.maxSearchDecoded);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') return false;
      this.#pass();
      return true;
    }
    this.#decodedBytes = decoded.length;
    const at = this.#finder.feed(decoded);
    if (at < 0) {
      this.#pass();
      return true;
    }
    this.#mode = 'inject';
    this.#held = [];
    this.push(encodeSync(this.#coding, Buffer.concat([decoded.subarray(0, at), this.#tag, decoded.subarray(at)])));
    this.#release();
    return true;
  }

  #release(): void {
    const callback = this.#waiting;
    this.#waiting = null;
    callback?.();
  }

  #onDecoded(data: Buffer): void {
    if (this.#mode === 'pass') return;
    const total = this.#decodedBytes + data.length;
    this.#decodedBytes = total;
    if (this.#mode === 'inject') {
      if (total > this.#limits.maxDecodedTotal) {
        this.destroy(new Error('decoded body exceeds the injection bound'));
        return;
      }
      (this.#encoder as Transform).write(data);
      return;
    }
    if (total > this.#limits.maxSearchDecoded) {
      this.#pass();
      return;
    }
    const at = this.#finder.feed(data);
    this.#decoded.push(data);
    if (at >= 0) this.#startInjecting(at);
  }

  #onDecoderEnd(): void {
    if (this.#mode === 'search') {
      this.#pass();
      return;
    }
    if (this.#mode !== 'inject') return;
    const enc = this.#encoder as Transform;
    enc.once('end', () => this.#release());
    enc.end();
  }

  /** Gives up: the held original bytes and the rest of the body pass untouched. */
  #pass(): void {
    this.#mode = 'pass';
    this.#decoder?.destroy();
    this.#decoded = [];
    for (const b of this.#held) this.push(b);
    this.#held = [];
    this.#release();
  }

  /** The tag goes at decoded offset `at`: re-encode what is held with it, then stream. */
  #startInjecting(at: number): void {
    this.#mode = 'inject';
    this.#held = [];
    const enc = encoder(this.#coding);
    enc.on('data', (data: Buffer) => this.push(data));
    enc.on('error', (err: Error) => this.destroy(err));
    this.#encoder = enc;
    const decoded = Buffer.concat(this.#decoded);
    this.#decoded = [];
    if (at > 0) enc.write(decoded.subarray(0, at));
    enc.write(this.#tag);
    enc.write(decoded.subarray(at));
  }
}

/**
 * A streaming transform that inserts `tag` before the first `</head>` (or
 * `</body>`) of an HTML body in the given content coding. A body with neither
 * passes unchanged.
 */
/**
 * The script tag inserted into a whole identity body before its first
 * `</head>` or `</body>` outside comments and raw text (the streaming
 * injector's rule); the body itself when there is none.
 */
export function injectWhole(body: Buffer, tag: Buffer): Buffer {
  const at = findClosingTag(body);
  return at < 0 ? body : Buffer.concat([body.subarray(0, at), tag, body.subarray(at)]);
}

export function createInjector(tag: Buffer, coding: Coding, limits: InjectLimits = DEFAULT_INJECT_LIMITS): Injector {
  return coding === 'identity' ? new IdentityInjector(tag) : new EncodedInjector(tag, coding, limits);
}
