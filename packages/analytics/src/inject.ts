import type { IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import { Transform, type TransformCallback } from 'node:stream';
import zlib from 'node:zlib';
import { findClosingTag, TAG_PREFIX_LENGTH } from './tag-finder.js';

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
}

/** Default bounds: 128 KiB held, 1 MiB searched, 64 MiB decoded in total. */
export const DEFAULT_INJECT_LIMITS: Readonly<InjectLimits> = Object.freeze({
  maxHeldEncoded: 128 * 1024,
  maxSearchDecoded: 1024 * 1024,
  maxDecodedTotal: 64 * 1024 * 1024,
});

function header(headers: OutgoingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  if (value === undefined) return undefined;
  return Array.isArray(value) ? value.join(', ') : String(value);
}

/**
 * Whether a response gets the script and with which coding, or null: only a
 * 2xx (not 204/206) HTML body (`text/html`, `application/xhtml+xml`) of a
 * non-HEAD request, without `Cache-Control: no-transform` or `Content-Range`,
 * coded identity, gzip, br or deflate (anything else passes untouched).
 */
export function injectableCoding(req: IncomingMessage, status: number, headers: OutgoingHttpHeaders): Coding | null {
  if (req.method === 'HEAD' || status < 200 || status >= 300 || status === 204 || status === 206) return null;
  const type = header(headers, 'content-type')?.toLowerCase();
  if (type === undefined || !(type.startsWith('text/html') || type.startsWith('application/xhtml+xml'))) return null;
  if (headers['content-range'] !== undefined) return null;
  if (header(headers, 'cache-control')?.toLowerCase().includes('no-transform')) return null;
  const coding = header(headers, 'content-encoding')?.trim().toLowerCase();
  if (coding === undefined || coding === '' || coding === 'identity') return 'identity';
  if (coding === 'gzip' || coding === 'x-gzip') return 'gzip';
  if (coding === 'br' || coding === 'deflate') return coding;
  return null;
}

/**
 * Edits the headers of a response the injector will change: the length is
 * unknown (`Content-Length` dropped, so the body is chunked) and a strong
 * ETag becomes weak. `Content-Encoding` stays: the body is re-encoded.
 */
export function editInjectedHeaders(headers: OutgoingHttpHeaders): void {
  delete headers['content-length'];
  const etag = headers.etag;
  if (typeof etag === 'string' && !etag.startsWith('W/')) headers.etag = `W/${etag}`;
}

function decodeSync(coding: Exclude<Coding, 'identity'>, data: Buffer, maxOutputLength: number): Buffer {
  if (coding === 'br') {
    return zlib.brotliDecompressSync(data, { maxOutputLength, finishFlush: zlib.constants.BROTLI_OPERATION_FLUSH });
  }
  const options = { maxOutputLength, finishFlush: zlib.constants.Z_SYNC_FLUSH };
  return coding === 'gzip' ? zlib.gunzipSync(data, options) : zlib.inflateSync(data, options);
}

function decoder(coding: Exclude<Coding, 'identity'>): Transform {
  if (coding === 'br') return zlib.createBrotliDecompress();
  return coding === 'gzip' ? zlib.createGunzip() : zlib.createInflate();
}

function encoder(coding: Exclude<Coding, 'identity'>): Transform {
  if (coding === 'br') return zlib.createBrotliCompress({ params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 5 } });
  return coding === 'gzip' ? zlib.createGzip({ level: 5 }) : zlib.createDeflate({ level: 5 });
}

/** Inserts a tag before `</head>` / `</body>` of an identity-coded stream; passes everything else as is. */
class IdentityInjector extends Transform {
  readonly #tag: Buffer;
  #carry: Buffer | null = null;
  #done = false;

  constructor(tag: Buffer) {
    super();
    this.#tag = tag;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    if (this.#done) {
      callback(null, chunk);
      return;
    }
    const data = this.#carry === null ? chunk : Buffer.concat([this.#carry, chunk]);
    this.#carry = null;
    const at = findClosingTag(data);
    if (at >= 0) {
      this.#done = true;
      // One buffer, so the response gets one write (one chunk) instead of three.
      callback(null, Buffer.concat([data.subarray(0, at), this.#tag, data.subarray(at)]));
      return;
    }
    const keep = Math.min(TAG_PREFIX_LENGTH, data.length);
    this.#carry = Buffer.from(data.subarray(data.length - keep));
    callback(null, data.length > keep ? data.subarray(0, data.length - keep) : undefined);
  }

  override _flush(callback: TransformCallback): void {
    callback(null, this.#carry ?? undefined);
  }
}

/**
 * Injects into a gzip/br/deflate body. While looking for the tag it holds the
 * original bytes and decodes them (bounded by `maxOutputLength`); once the
 * tag is found it streams decode → insert → re-encode (same coding). When the
 * tag is not found within the bounds, the body does not decode (corrupt), or
 * it inflates past the search bound (a bomb), the held original bytes and the
 * rest pass through untouched: the page never breaks.
 */
class EncodedInjector extends Transform {
  readonly #tag: Buffer;
  readonly #coding: Exclude<Coding, 'identity'>;
  readonly #limits: InjectLimits;
  #held: Buffer[] = [];
  #heldBytes = 0;
  #mode: 'search' | 'pass' | 'inject' = 'search';
  #decoder: Transform | null = null;
  #encoder: Transform | null = null;

  constructor(tag: Buffer, coding: Exclude<Coding, 'identity'>, limits: InjectLimits) {
    super();
    this.#tag = tag;
    this.#coding = coding;
    this.#limits = limits;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    if (this.#mode === 'pass') {
      callback(null, chunk);
      return;
    }
    if (this.#mode === 'inject') {
      (this.#decoder as Transform).write(chunk, () => callback());
      return;
    }
    this.#held.push(chunk);
    this.#heldBytes += chunk.length;
    if (this.#heldBytes > this.#limits.maxHeldEncoded) {
      this.#passHeld();
      callback();
      return;
    }
    const original = this.#held.length === 1 ? chunk : Buffer.concat(this.#held);
    let decoded: Buffer;
    try {
      decoded = decodeSync(this.#coding, original, this.#limits.maxSearchDecoded);
    } catch {
      this.#passHeld();
      callback();
      return;
    }
    const at = findClosingTag(decoded);
    if (at < 0) {
      callback();
      return;
    }
    this.#startInjecting(at);
    (this.#decoder as Transform).write(original, () => callback());
  }

  override _flush(callback: TransformCallback): void {
    if (this.#mode === 'search') this.#passHeld();
    if (this.#mode !== 'inject') {
      callback();
      return;
    }
    (this.#encoder as Transform).once('end', () => callback());
    (this.#decoder as Transform).end();
  }

  override _destroy(err: Error | null, callback: (error?: Error | null) => void): void {
    this.#decoder?.destroy();
    this.#encoder?.destroy();
    callback(err);
  }

  #passHeld(): void {
    this.#mode = 'pass';
    for (const b of this.#held) this.push(b);
    this.#held = [];
  }

  #startInjecting(at: number): void {
    this.#mode = 'inject';
    this.#held = [];
    const dec = decoder(this.#coding);
    const enc = encoder(this.#coding);
    this.#decoder = dec;
    this.#encoder = enc;
    let seen = 0;
    let inserted = false;
    const max = this.#limits.maxDecodedTotal;
    dec.on('data', (data: Buffer) => {
      const start = seen;
      seen += data.length;
      if (seen > max) {
        this.destroy(new Error('decoded body exceeds the injection bound'));
        return;
      }
      if (!inserted && seen > at) {
        inserted = true;
        const cut = at - start;
        if (cut > 0) enc.write(data.subarray(0, cut));
        enc.write(this.#tag);
        enc.write(data.subarray(cut));
        return;
      }
      enc.write(data);
    });
    dec.on('end', () => {
      if (!inserted) enc.write(this.#tag);
      enc.end();
    });
    enc.on('data', (data: Buffer) => this.push(data));
    dec.on('error', (err) => this.destroy(err));
    enc.on('error', (err) => this.destroy(err));
  }
}

/**
 * A streaming transform that inserts `tag` before the first `</head>` (or
 * `</body>`) of an HTML body in the given content coding. A body with neither
 * passes unchanged.
 */
export function createInjector(tag: Buffer, coding: Coding, limits: InjectLimits = DEFAULT_INJECT_LIMITS): Transform {
  return coding === 'identity' ? new IdentityInjector(tag) : new EncodedInjector(tag, coding, limits);
}
