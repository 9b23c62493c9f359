import type { IncomingMessage, OutgoingHttpHeader, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Transform } from 'node:stream';
import zlib from 'node:zlib';
import type { EncodeConfig, Encoding } from '@proxyd/model';
import { EncodingNegotiator } from './encode-negotiate.js';

/**
 * Media types `encode` compresses (Caddy's default list, plus `+json` /
 * `+xml` suffixes): `text/*` but `text/event-stream` (a compressor holds
 * back small events), JSON, JavaScript, XML, SVG, WebAssembly and the
 * uncompressed font formats. Images, video, archives and fonts already
 * compressed (woff, woff2) are sent as they are.
 */
export const COMPRESSIBLE_TYPES: readonly string[] = Object.freeze([
  'text/*',
  'application/json',
  'application/*+json',
  'application/javascript',
  'application/x-javascript',
  'application/ecmascript',
  'application/xml',
  'application/*+xml',
  'application/wasm',
  'image/svg+xml',
  'font/ttf',
  'font/otf',
  'application/vnd.ms-fontobject',
]);

const EXACT_TYPES = new Set(COMPRESSIBLE_TYPES.filter((t) => !t.includes('*')));

/** Whether a `Content-Type` value names a type of {@link COMPRESSIBLE_TYPES} (parameters ignored). */
export function isCompressibleType(contentType: string): boolean {
  const semi = contentType.indexOf(';');
  const type = (semi < 0 ? contentType : contentType.slice(0, semi)).trim().toLowerCase();
  if (type.startsWith('text/')) return type !== 'text/event-stream';
  if (EXACT_TYPES.has(type)) return true;
  return type.startsWith('application/') && (type.endsWith('+json') || type.endsWith('+xml'));
}

/**
 * On-the-fly levels: gzip 5, brotli quality 4, zstd level 3 — about the
 * ratio of gzip 6 at a fraction of brotli 11's CPU (brotli's default, 11,
 * is meant for precompressed assets).
 */
export const ENCODE_LEVELS = Object.freeze({ gzip: 5, br: 4, zstd: 3 });

/**
 * A compressor for one response. `length` (the body's Content-Length, or -1)
 * is given to brotli and zstd as a size hint: they then size their window
 * and tables to the body instead of allocating for megabytes — on a 100 KB
 * page, 20 % (br) and 36 % (zstd) less CPU for the same bytes
 * (bench/encode/README.md). Brotli's window is 1 MiB (lgwin 20) either way.
 */
export function compressor(coding: Encoding, length: number): Transform {
  if (coding === 'gzip') return zlib.createGzip({ level: ENCODE_LEVELS.gzip });
  if (coding === 'br') {
    return zlib.createBrotliCompress({
      params: {
        [zlib.constants.BROTLI_PARAM_QUALITY]: ENCODE_LEVELS.br,
        [zlib.constants.BROTLI_PARAM_MODE]: zlib.constants.BROTLI_MODE_TEXT,
        [zlib.constants.BROTLI_PARAM_LGWIN]: 20,
        ...(length > 0 ? { [zlib.constants.BROTLI_PARAM_SIZE_HINT]: length } : {}),
      },
    });
  }
  return zlib.createZstdCompress({
    params: { [zlib.constants.ZSTD_c_compressionLevel]: ENCODE_LEVELS.zstd },
    ...(length > 0 ? { pledgedSrcSize: length } : {}),
  });
}

/**
 * A body whose declared length is at most this many bytes is compressed in
 * one synchronous call once it is whole, and sent with the `Content-Length`
 * of its encoded bytes; a longer one, or one of unknown length, streams
 * through {@link compressor} (chunked). A stream per response (a thread-pool
 * round trip per write, its output buffer and deflate state) cost as much as
 * the compression of a small page: 10 KB of HTML, gzip 5, 131 µs in one call
 * against 290 µs through a stream. The bound is analytics' whole-body bound
 * (`SMALL_BODY_BYTES`): at 64 KiB one call holds the event loop for about
 * 0.7–1.4 ms (gzip 5), past it the other connections would wait longer
 * for a saving that no longer matters (bench/encode/notes/2026-11-28-whole-bodies.md).
 */
export const WHOLE_BODY_BYTES = 64 * 1024;

/**
 * `body` compressed in one call, at the levels and with the size hints of
 * {@link compressor} (same coding, same bytes a client decodes).
 */
export function compressWhole(coding: Encoding, body: Buffer): Buffer {
  if (coding === 'gzip') return zlib.gzipSync(body, { level: ENCODE_LEVELS.gzip });
  if (coding === 'br') {
    return zlib.brotliCompressSync(body, {
      params: {
        [zlib.constants.BROTLI_PARAM_QUALITY]: ENCODE_LEVELS.br,
        [zlib.constants.BROTLI_PARAM_MODE]: zlib.constants.BROTLI_MODE_TEXT,
        [zlib.constants.BROTLI_PARAM_LGWIN]: 20,
        [zlib.constants.BROTLI_PARAM_SIZE_HINT]: body.length,
      },
    });
  }
  return zlib.zstdCompressSync(body, {
    params: { [zlib.constants.ZSTD_c_compressionLevel]: ENCODE_LEVELS.zstd },
    pledgedSrcSize: body.length,
  });
}

/**
 * The bytes of a body of declared length collected for {@link compressWhole}:
 * each chunk copied into one buffer of that length (so nothing keeps the
 * writer's buffers, and no concatenation at the end).
 */
export class WholeBody {
  readonly #buf: Buffer;
  #filled = 0;

  constructor(length: number) {
    this.#buf = Buffer.allocUnsafe(length);
  }

  /** Copies `chunk` in; false (nothing copied) when it would pass the declared length. */
  add(chunk: Buffer): boolean {
    if (this.#filled + chunk.length > this.#buf.length) return false;
    chunk.copy(this.#buf, this.#filled);
    this.#filled += chunk.length;
    return true;
  }

  /** The bytes so far (a view, not a copy). */
  get bytes(): Buffer {
    return this.#buf.subarray(0, this.#filled);
  }
}

/** Sets the head of a body compressed whole: its encoded length. */
export function setEncodedLength(headers: OutgoingHttpHeaders, length: number): void {
  put(headers, 'content-length', String(length));
}

/** Headers that describe the exact bytes sent: wrong once the body is encoded. */
const BODY_DIGESTS = ['content-md5', 'content-digest', 'repr-digest', 'digest'] as const;

const kEncode = Symbol('proxyd.encode');
type Res = ServerResponse & { [kEncode]?: EncodeState };
type Compressor = Transform & { [kEncode]?: EncodeState };
type WriteHead = ServerResponse['writeHead'];
type Write = (chunk: unknown, encoding?: unknown, cb?: unknown) => boolean;
type End = (chunk?: unknown, encoding?: unknown, cb?: unknown) => ServerResponse;

/** No head yet. */
const PENDING = 0;
/** Head written; the body goes out as the writer sends it. */
export const PASS = 1;
/** Head written with `Content-Encoding`; the body goes through the compressor. */
export const ENCODING = 2;
/** Length unknown: the first `minimum_length` bytes are held before deciding. */
export const HOLDING = 3;
/** Declared length up to {@link WHOLE_BODY_BYTES}: the body is collected, then compressed in one call with its head. */
export const WHOLE = 4;

/** Per-response state, kept on the response under a symbol (the overrides are module functions, no closures). */
class EncodeState {
  mode = PENDING;
  stream: Compressor | null = null;
  held: Buffer[] = [];
  heldBytes = 0;
  whole: WholeBody | null = null;
  status = 200;
  message: string | undefined = undefined;
  headers: OutgoingHttpHeaders = {};

  constructor(
    readonly req: IncomingMessage,
    readonly coding: Encoding | null,
    readonly minimum: number,
    readonly writeHead: WriteHead,
    readonly write: Write,
    readonly end: End,
  ) {}
}

/**
 * The `encode` step of one site, compiled once: {@link wrap} makes a
 * response compress itself on the way out (README "`encode`").
 */
export class ResponseEncoder {
  readonly negotiator: EncodingNegotiator;
  readonly minimum: number;

  constructor(config: EncodeConfig) {
    this.negotiator = new EncodingNegotiator(config.encodings);
    this.minimum = config.minimum_length;
  }

  /**
   * Wraps `res` for this request: its `writeHead` decides (and edits the
   * head), its `write`/`end` feed the compressor when a coding was
   * negotiated. A request with `Range` is left alone (its 206 is a byte
   * range of the identity body; compressing it would break the range).
   */
  wrap(req: IncomingMessage, res: ServerResponse): void {
    if (req.headers.range !== undefined) return;
    const coding = this.negotiator.choose(req.headers['accept-encoding']);
    const r = res as Res;
    r[kEncode] = new EncodeState(
      req,
      coding,
      this.minimum,
      res.writeHead,
      res.write as unknown as Write,
      res.end as unknown as End,
    );
    r.writeHead = encodeWriteHead as WriteHead;
    if (coding !== null && req.method !== 'HEAD') {
      r.write = encodeWrite as unknown as ServerResponse['write'];
      r.end = encodeEnd as unknown as ServerResponse['end'];
      r.on('drain', resumeCompressor);
      r.on('close', dropCompressor);
    }
  }
}

function headerValue(value: OutgoingHttpHeader | undefined): string | undefined {
  if (value === undefined) return undefined;
  return Array.isArray(value) ? value.join(', ') : String(value);
}

/**
 * A header of the head being written: the `writeHead` object's (any case),
 * else one set with `setHeader` (`res` null: a head held whole in `headers`,
 * the fast path's).
 */
function get(res: ServerResponse | null, headers: OutgoingHttpHeaders, name: string): string | undefined {
  const own = headers[name];
  if (own !== undefined) return headerValue(own);
  for (const key in headers) if (key.toLowerCase() === name) return headerValue(headers[key]);
  return res === null ? undefined : headerValue(res.getHeader(name));
}

/** Sets `name` in the `writeHead` object (which wins over `setHeader`), dropping other spellings. */
function put(headers: OutgoingHttpHeaders, name: string, value: string): void {
  for (const key in headers) if (key !== name && key.toLowerCase() === name) delete headers[key];
  headers[name] = value;
}

function drop(res: ServerResponse | null, headers: OutgoingHttpHeaders, name: string): void {
  for (const key in headers) if (key.toLowerCase() === name) delete headers[key];
  if (res?.hasHeader(name)) res.removeHeader(name);
}

/** Adds `Accept-Encoding` to `Vary` unless it is there or `Vary: *`. */
function mergeVary(res: ServerResponse | null, headers: OutgoingHttpHeaders): void {
  const vary = get(res, headers, 'vary');
  if (vary === undefined || vary.trim() === '') {
    put(headers, 'vary', 'Accept-Encoding');
    return;
  }
  for (const token of vary.split(',')) {
    const t = token.trim().toLowerCase();
    if (t === '*' || t === 'accept-encoding') return;
  }
  put(headers, 'vary', `${vary}, Accept-Encoding`);
}

function weakenEtag(res: ServerResponse | null, headers: OutgoingHttpHeaders): void {
  const etag = get(res, headers, 'etag');
  if (etag !== undefined && !etag.startsWith('W/')) put(headers, 'etag', `W/${etag}`);
}

/** The head edits of an encoded body: coding set, length, ranges and digests gone, ETag weak, Vary merged. */
export function editEncodedHead(res: ServerResponse | null, headers: OutgoingHttpHeaders, coding: Encoding): void {
  drop(res, headers, 'content-length');
  drop(res, headers, 'accept-ranges');
  for (const name of BODY_DIGESTS) if (get(res, headers, name) !== undefined) drop(res, headers, name);
  put(headers, 'content-encoding', coding);
  weakenEtag(res, headers);
  mergeVary(res, headers);
}

/** What a head allows, before the body's length is weighed. */
const NEVER = 0;
const BY_LENGTH = 1;

/**
 * Whether the response may be encoded at all: a 2xx but 204/206, no
 * `Content-Encoding` of its own (never twice-encoded), no `Content-Range`,
 * no `Cache-Control: no-transform`, a compressible `Content-Type`.
 */
function eligibility(res: ServerResponse | null, status: number, headers: OutgoingHttpHeaders): number {
  if (status < 200 || status >= 300 || status === 204 || status === 206) return NEVER;
  const coding = get(res, headers, 'content-encoding');
  if (coding !== undefined && coding.trim() !== '' && coding.trim().toLowerCase() !== 'identity') return NEVER;
  if (get(res, headers, 'content-range') !== undefined) return NEVER;
  if (get(res, headers, 'cache-control')?.toLowerCase().includes('no-transform')) return NEVER;
  const type = get(res, headers, 'content-type');
  return type !== undefined && isCompressibleType(type) ? BY_LENGTH : NEVER;
}

/**
 * A 304 stands for the encoded 200 when the client revalidates with the
 * weak ETag the encoded body carried (`W/` + the 304's strong ETag): then it
 * gets the same ETag and `Vary` (RFC 9110 §15.4.5).
 */
function revalidatesEncoded(res: ServerResponse | null, req: EncodeRequest, headers: OutgoingHttpHeaders): boolean {
  const etag = get(res, headers, 'etag');
  const asked = req.headers['if-none-match'];
  if (etag === undefined || etag.startsWith('W/') || asked === undefined) return false;
  const weak = `W/${etag}`;
  return asked.split(',').some((tag) => tag.trim() === weak);
}

function callWriteHead(res: Res, st: EncodeState, headers: OutgoingHttpHeaders): void {
  const writeHead = st.writeHead as (...args: unknown[]) => unknown;
  if (st.message === undefined) writeHead.call(res, st.status, headers);
  else writeHead.call(res, st.status, st.message, headers);
}

function encodeWriteHead(
  this: Res,
  status: number,
  messageOrHeaders?: string | OutgoingHttpHeaders | OutgoingHttpHeader[],
  maybeHeaders?: OutgoingHttpHeaders | OutgoingHttpHeader[],
): Res {
  const st = this[kEncode] as EncodeState;
  const given = typeof messageOrHeaders === 'string' ? maybeHeaders : messageOrHeaders;
  st.message = typeof messageOrHeaders === 'string' ? messageOrHeaders : undefined;
  st.status = status;
  st.held = [];
  st.heldBytes = 0;
  st.whole = null;
  // A second head while holding (the forwarder's 502 after an upstream error) starts over.
  if (st.mode !== PENDING && st.mode !== HOLDING && st.mode !== WHOLE) {
    (st.writeHead as (...args: unknown[]) => unknown).apply(this, [status, messageOrHeaders, maybeHeaders]);
    return this;
  }
  // Raw header arrays are not read here: such a head passes untouched.
  if (Array.isArray(given)) {
    st.mode = PASS;
    (st.writeHead as (...args: unknown[]) => unknown).apply(this, [status, messageOrHeaders, maybeHeaders]);
    return this;
  }
  // A copy: canned answers hand the same object to every writeHead.
  const headers: OutgoingHttpHeaders = given === undefined ? {} : { ...given };
  st.headers = headers;
  const decision = decideHead(this, st.req, st.coding, st.minimum, status, headers);
  if (decision === PASS) {
    st.mode = PASS;
    callWriteHead(this, st, headers);
    return this;
  }
  if (decision === ENCODING) {
    const length = declaredLength(this, headers);
    if (wholeLength(st.req, length)) {
      st.mode = WHOLE;
      st.whole = new WholeBody(length);
    } else startEncoding(this, st, length);
    return this;
  }
  st.mode = HOLDING;
  return this;
}

/** The request members `encode` reads: its method and `Accept-Encoding` / `If-None-Match` / `Range`. */
export interface EncodeRequest {
  readonly method?: string | undefined;
  readonly headers: IncomingMessage['headers'];
}

/** The body's declared length (`Content-Length`), or -1. */
export function declaredLength(res: ServerResponse | null, headers: OutgoingHttpHeaders): number {
  const declared = get(res, headers, 'content-length');
  return declared === undefined ? -1 : Number(declared);
}

/**
 * What `encode` does with a response head, for the node:http path and the
 * fast path alike (`coding`: the one negotiated, null for identity):
 * {@link PASS} (sent as it is, after the edits made here: `Vary` on an
 * identity answer that could have been encoded, the weak `ETag` and `Vary`
 * of a 304 that revalidates an encoded body), {@link ENCODING} (encode it:
 * {@link editEncodedHead}, then a compressor; a HEAD gets that head only)
 * or {@link HOLDING} (length unknown: hold the first `minimum` bytes, then
 * encode, or send them identity with their length when the body ends
 * first).
 */
export function decideHead(
  res: ServerResponse | null,
  req: EncodeRequest,
  coding: Encoding | null,
  minimum: number,
  status: number,
  headers: OutgoingHttpHeaders,
): number {
  if (status === 304) {
    if (coding !== null && revalidatesEncoded(res, req, headers)) {
      weakenEtag(res, headers);
      mergeVary(res, headers);
    }
    return PASS;
  }
  if (eligibility(res, status, headers) === NEVER) return PASS;
  const length = declaredLength(res, headers);
  if (length >= 0 && length < minimum) return PASS;
  // Big enough, or of unknown length: the representation depends on Accept-Encoding.
  if (coding === null) {
    mergeVary(res, headers);
    return PASS;
  }
  // HEAD gets the head its GET would (of unknown length: as if long enough).
  if (req.method === 'HEAD' || length >= 0) return ENCODING;
  return HOLDING;
}

/** Whether a body of this declared length (-1: unknown) is compressed whole ({@link WHOLE_BODY_BYTES}); never a HEAD's. */
export function wholeLength(req: EncodeRequest, length: number): boolean {
  return length >= 0 && length <= WHOLE_BODY_BYTES && req.method !== 'HEAD';
}

/** The whole body, compressed in one call, goes out with its encoded head and length. */
function sendWhole(res: Res, st: EncodeState, body: Buffer, cb: unknown): void {
  const coding = st.coding as Encoding;
  const encoded = compressWhole(coding, body);
  st.whole = null;
  editEncodedHead(res, st.headers, coding);
  setEncodedLength(st.headers, encoded.length);
  st.mode = PASS;
  callWriteHead(res, st, st.headers);
  st.end.call(res, encoded, cb);
}

/** More bytes than declared: what was collected goes to a compressor, and the rest streams after it. */
function streamWhole(res: Res, st: EncodeState): void {
  const bytes = (st.whole as WholeBody).bytes;
  st.whole = null;
  startEncoding(res, st);
  (st.stream as Compressor).write(bytes);
}

/** Writes the encoded head and opens the compressor (`length`: the body's declared length, or -1). */
function startEncoding(res: Res, st: EncodeState, length = -1): void {
  const coding = st.coding as Encoding;
  editEncodedHead(res, st.headers, coding);
  callWriteHead(res, st, st.headers);
  if (st.req.method === 'HEAD') {
    st.mode = PASS;
    return;
  }
  st.mode = ENCODING;
  const stream: Compressor = compressor(coding, length);
  stream[kEncode] = st;
  stream.on('data', onCompressed);
  stream.on('end', onCompressedEnd);
  stream.on('drain', onCompressorDrain);
  stream.on('error', onCompressorError);
  st.stream = stream;
  // Kept on the state so the response's 'drain'/'close' listeners find it.
  (stream as Compressor & { res?: Res }).res = res;
}

/** Holding ended below `minimum_length`: the held bytes go out identity, with their length. */
function sendHeldIdentity(res: Res, st: EncodeState, cb: unknown): void {
  const body = st.held.length === 1 ? (st.held[0] as Buffer) : Buffer.concat(st.held, st.heldBytes);
  st.held = [];
  put(st.headers, 'content-length', String(body.length));
  st.mode = PASS;
  callWriteHead(res, st, st.headers);
  st.end.call(res, body, cb);
}

function toBuffer(chunk: unknown, encoding: unknown): Buffer {
  if (Buffer.isBuffer(chunk)) return chunk;
  if (typeof chunk === 'string')
    return Buffer.from(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
  if (chunk instanceof Uint8Array) return Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  return Buffer.alloc(0);
}

function encodeWrite(this: Res, chunk: unknown, encoding?: unknown, cb?: unknown): boolean {
  const st = this[kEncode] as EncodeState;
  if (st.mode === PENDING) this.writeHead(this.statusCode);
  const callback = typeof encoding === 'function' ? encoding : cb;
  if (st.mode === PASS) return st.write.call(this, chunk, encoding, cb);
  const buf = toBuffer(chunk, encoding);
  if (st.mode === WHOLE) {
    if ((st.whole as WholeBody).add(buf)) {
      if (typeof callback === 'function') process.nextTick(callback as () => void);
      return true;
    }
    streamWhole(this, st);
  }
  if (st.mode === HOLDING) {
    st.held.push(buf);
    st.heldBytes += buf.length;
    if (typeof callback === 'function') process.nextTick(callback as () => void);
    if (st.heldBytes < st.minimum) return true;
    const held = st.held;
    st.held = [];
    startEncoding(this, st);
    let ok = true;
    for (const b of held) ok = (st.stream as Compressor).write(b);
    return ok;
  }
  const stream = st.stream as Compressor;
  if (stream.writableEnded || stream.destroyed) return false;
  return typeof callback === 'function' ? stream.write(buf, callback as () => void) : stream.write(buf);
}

function encodeEnd(this: Res, chunk?: unknown, encoding?: unknown, cb?: unknown): Res {
  const st = this[kEncode] as EncodeState;
  let callback = cb;
  let data = chunk;
  if (typeof chunk === 'function') {
    callback = chunk;
    data = undefined;
  } else if (typeof encoding === 'function') callback = encoding;
  if (st.mode === PENDING) this.writeHead(this.statusCode);
  if (st.mode === PASS) {
    st.end.call(this, data, typeof encoding === 'function' ? undefined : encoding, callback);
    return this;
  }
  const buf = data === undefined || data === null ? null : toBuffer(data, encoding);
  if (st.mode === WHOLE) {
    const whole = st.whole as WholeBody;
    if (buf === null || whole.add(buf)) {
      sendWhole(this, st, whole.bytes, callback);
      return this;
    }
    streamWhole(this, st);
  }
  if (st.mode === HOLDING) {
    if (buf !== null) {
      st.held.push(buf);
      st.heldBytes += buf.length;
    }
    if (st.heldBytes < st.minimum) {
      sendHeldIdentity(this, st, callback);
      return this;
    }
    const held = st.held;
    st.held = [];
    startEncoding(this, st);
    for (const b of held) (st.stream as Compressor).write(b);
  } else if (buf !== null && buf.length > 0) {
    (st.stream as Compressor).write(buf);
  }
  if (typeof callback === 'function') this.once('finish', callback as () => void);
  // zlib flushes what it holds when its input ends; its 'end' then ends the response.
  (st.stream as Compressor).end();
  return this;
}

function onCompressed(this: Compressor, chunk: Buffer): void {
  const st = this[kEncode];
  const res = (this as Compressor & { res?: Res }).res;
  if (st === undefined || res === undefined || res.destroyed) return;
  if (!st.write.call(res, chunk)) this.pause();
}

function onCompressedEnd(this: Compressor): void {
  const st = this[kEncode];
  const res = (this as Compressor & { res?: Res }).res;
  if (st !== undefined && res !== undefined && !res.destroyed) st.end.call(res);
}

/** The compressor took its input: the writer may write again (it waits for the response's 'drain'). */
function onCompressorDrain(this: Compressor): void {
  (this as Compressor & { res?: Res }).res?.emit('drain');
}

function onCompressorError(this: Compressor): void {
  (this as Compressor & { res?: Res }).res?.destroy();
}

/** The client's socket drained: compressed output may flow again. */
function resumeCompressor(this: Res): void {
  const stream = this[kEncode]?.stream;
  if (stream?.isPaused()) stream.resume();
}

/** The response closed (finished or the client left): release the compressor's memory. */
function dropCompressor(this: Res): void {
  const stream = this[kEncode]?.stream;
  if (stream !== null && stream !== undefined && !stream.destroyed) stream.destroy();
}
