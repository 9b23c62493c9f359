import { readFileSync } from 'node:fs';

/**
 * llhttp (the parser inside Node's `http`) as WebAssembly: the build undici
 * 8.12.4 ships, vendored in `vendor/llhttp/` with its licence (see the
 * package README, "HTTP/1.1 fast path"). One instance per process; each
 * {@link Parser} is one `llhttp_t` in its memory. Lenient flags stay off:
 * the strictness is Node's own parser's.
 *
 * A subclass overrides the callbacks. Span callbacks get (chunk, start,
 * end) into the Buffer passed to `execute` (no copy). A callback returns 0,
 * {@link PAUSED} to stop the parser after it, or -1 to fail it.
 */

/** llhttp's parser types. */
export const REQUEST = 1;
export const RESPONSE = 2;
/** llhttp's `execute` results besides the errors. */
export const OK = 0;
export const PAUSED = 21;
export const PAUSED_UPGRADE = 22;

/** Method names by llhttp's method number (`llhttp/constants` METHODS, in order). */
export const METHODS: readonly string[] = [
  'DELETE',
  'GET',
  'HEAD',
  'POST',
  'PUT',
  'CONNECT',
  'OPTIONS',
  'TRACE',
  'COPY',
  'LOCK',
  'MKCOL',
  'MOVE',
  'PROPFIND',
  'PROPPATCH',
  'SEARCH',
  'UNLOCK',
  'BIND',
  'REBIND',
  'UNBIND',
  'ACL',
  'REPORT',
  'MKACTIVITY',
  'CHECKOUT',
  'MERGE',
  'M-SEARCH',
  'NOTIFY',
  'SUBSCRIBE',
  'UNSUBSCRIBE',
  'PATCH',
  'PURGE',
  'MKCALENDAR',
  'LINK',
  'UNLINK',
  'SOURCE',
  'PRI',
  'DESCRIBE',
  'ANNOUNCE',
  'SETUP',
  'PLAY',
  'PAUSE',
  'TEARDOWN',
  'GET_PARAMETER',
  'SET_PARAMETER',
  'REDIRECT',
  'RECORD',
  'FLUSH',
  'QUERY',
];

/** The part of the WebAssembly JS API used here (the repo's TypeScript libs do not declare it). */
declare const WebAssembly: {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: unknown };
};

interface LlhttpExports {
  memory: { buffer: ArrayBuffer };
  llhttp_alloc(type: number): number;
  llhttp_free(ptr: number): void;
  llhttp_execute(ptr: number, data: number, len: number): number;
  llhttp_finish(ptr: number): number;
  llhttp_resume(ptr: number): void;
  llhttp_reset(ptr: number): void;
  llhttp_get_method(ptr: number): number;
  llhttp_get_http_major(ptr: number): number;
  llhttp_get_http_minor(ptr: number): number;
  llhttp_get_error_pos(ptr: number): number;
  llhttp_message_needs_eof(ptr: number): number;
  malloc(n: number): number;
  free(ptr: number): void;
}

let current: Parser | null = null;
let chunk: Buffer = Buffer.alloc(0);
let base = 0;

/**
 * The vendored wasm: `vendor/llhttp/` of this package, two levels above
 * `dist/fast/llhttp.js` (the repository, and the single executable, which
 * mirrors it), or one level above the bundle's module (the npm package,
 * whose modules are all in `dist/`; apps/proxyd/scripts/bundle.mjs).
 */
function readWasm(): Buffer {
  try {
    return readFileSync(new URL('../../vendor/llhttp/llhttp_simd.wasm', import.meta.url));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    return readFileSync(new URL('../vendor/llhttp/llhttp_simd.wasm', import.meta.url));
  }
}

/** The wasm module, instantiated on first use (a process that never takes the fast path never loads it). */
let ll: LlhttpExports | null = null;

function instance(): LlhttpExports {
  if (ll !== null) return ll;
  const bytes = readWasm();
  const p = () => current as Parser;
  const made = new WebAssembly.Instance(new WebAssembly.Module(bytes), {
    env: {
      wasm_on_message_begin: () => p().onMessageBegin(),
      wasm_on_url: (_p: number, at: number, len: number) => p().onUrl(chunk, at - base, at - base + len),
      wasm_on_status: () => 0,
      wasm_on_header_field: (_p: number, at: number, len: number) =>
        p().onHeaderField(chunk, at - base, at - base + len),
      wasm_on_header_value: (_p: number, at: number, len: number) =>
        p().onHeaderValue(chunk, at - base, at - base + len),
      wasm_on_headers_complete: (_p: number, status: number, upgrade: number, keepAlive: number) =>
        p().onHeadersComplete(status, upgrade, keepAlive),
      wasm_on_body: (_p: number, at: number, len: number) => p().onBody(chunk, at - base, at - base + len),
      wasm_on_message_complete: () => p().onMessageComplete(),
    },
  });
  ll = made.exports as unknown as LlhttpExports;
  return ll;
}

/** The input area in wasm memory, grown to the largest chunk seen (4 KiB steps). */
let area = 0;
let areaSize = 0;

/** One llhttp parser. */
export class Parser {
  ptr: number;
  /** After `execute` returned anything but OK: the offset of the first unparsed byte. */
  pausedAt = 0;

  constructor(type: number) {
    this.ptr = instance().llhttp_alloc(type);
  }

  /** Parses `buf`; returns llhttp's error number (OK, PAUSED, PAUSED_UPGRADE or an error). */
  execute(buf: Buffer): number {
    const w = ll as LlhttpExports;
    if (current !== null) throw new Error('llhttp: execute re-entered from a callback');
    if (buf.length > areaSize) {
      if (area !== 0) w.free(area);
      areaSize = Math.ceil(buf.length / 4096) * 4096;
      area = w.malloc(areaSize);
    }
    new Uint8Array(w.memory.buffer, area, buf.length).set(buf);
    current = this;
    chunk = buf;
    base = area;
    let ret: number;
    try {
      ret = w.llhttp_execute(this.ptr, area, buf.length);
    } finally {
      current = null;
    }
    if (ret !== OK) this.pausedAt = w.llhttp_get_error_pos(this.ptr) - area;
    return ret;
  }

  /** Signals EOF (an EOF-delimited response body ends here). */
  finish(): number {
    current = this;
    try {
      return (ll as LlhttpExports).llhttp_finish(this.ptr);
    } finally {
      current = null;
    }
  }

  resume(): void {
    (ll as LlhttpExports).llhttp_resume(this.ptr);
  }

  /** Back to the start of a message (after a body read past the parser), paused state cleared. */
  reset(): void {
    (ll as LlhttpExports).llhttp_reset(this.ptr);
  }

  method(): string {
    return METHODS[(ll as LlhttpExports).llhttp_get_method(this.ptr)] ?? 'GET';
  }

  /** The message's HTTP version as major * 10 + minor (11 for HTTP/1.1). */
  version(): number {
    const w = ll as LlhttpExports;
    return w.llhttp_get_http_major(this.ptr) * 10 + w.llhttp_get_http_minor(this.ptr);
  }

  /** Whether the message's body runs to the end of the connection (a response without framing). */
  needsEof(): boolean {
    return (ll as LlhttpExports).llhttp_message_needs_eof(this.ptr) === 1;
  }

  free(): void {
    if (this.ptr !== 0) (ll as LlhttpExports).llhttp_free(this.ptr);
    this.ptr = 0;
  }

  onMessageBegin(): number {
    return 0;
  }
  onUrl(_b: Buffer, _s: number, _e: number): number {
    return 0;
  }
  onHeaderField(_b: Buffer, _s: number, _e: number): number {
    return 0;
  }
  onHeaderValue(_b: Buffer, _s: number, _e: number): number {
    return 0;
  }
  onHeadersComplete(_status: number, _upgrade: number, _keepAlive: number): number {
    return 0;
  }
  onBody(_b: Buffer, _s: number, _e: number): number {
    return 0;
  }
  onMessageComplete(): number {
    return 0;
  }
}
