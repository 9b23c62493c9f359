// llhttp (the parser inside Node's http) as WebAssembly, from the build that
// undici ships in `undici/lib/llhttp/` (undici has no `exports` map, so the
// file loads by path; it is not a documented API of undici). One instance
// for the process; each Parser is one llhttp_t in its memory.
//
// A subclass overrides the callbacks. Span callbacks get (chunk, start, end)
// into the Buffer passed to `execute`: no copy. A callback returns 0, or
// PAUSED to stop the parser after it (`execute` then returns PAUSED and
// `pausedAt` is the offset of the first unparsed byte).
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const C = require('undici/lib/llhttp/constants.js');

export const REQUEST = C.TYPE.REQUEST;
export const RESPONSE = C.TYPE.RESPONSE;
export const OK = C.ERROR.OK;
export const PAUSED = C.ERROR.PAUSED;
export const PAUSED_UPGRADE = C.ERROR.PAUSED_UPGRADE;
/** Method names by llhttp's method number. */
export const METHODS = [];
for (const [name, n] of Object.entries(C.METHODS)) METHODS[n] = name.replace('_', '-');

let current = null;
let chunk = null;
let base = 0;
const span = (fn) => (_p, at, len) => current[fn](chunk, at - base, at - base + len);
const { exports: ll } = new WebAssembly.Instance(
  new WebAssembly.Module(require('undici/lib/llhttp/llhttp_simd-wasm.js')),
  {
    env: {
      wasm_on_message_begin: () => current.onMessageBegin(),
      wasm_on_url: span('onUrl'),
      wasm_on_status: () => 0,
      wasm_on_header_field: span('onHeaderField'),
      wasm_on_header_value: span('onHeaderValue'),
      wasm_on_headers_complete: (_p, status, upgrade, keepAlive) =>
        current.onHeadersComplete(status, upgrade, keepAlive),
      wasm_on_body: span('onBody'),
      wasm_on_message_complete: () => current.onMessageComplete(),
    },
  },
);

// The input area in wasm memory, grown to the largest chunk seen (4 KiB steps).
let area = 0;
let areaSize = 0;

export class Parser {
  constructor(type) {
    this.ptr = ll.llhttp_alloc(type);
    this.pausedAt = 0;
  }
  /** Parses `buf`; returns llhttp's error number (OK, PAUSED, PAUSED_UPGRADE or an error). */
  execute(buf) {
    if (current !== null) throw new Error('llhttp: execute re-entered from a callback');
    if (buf.length > areaSize) {
      if (area) ll.free(area);
      areaSize = Math.ceil(buf.length / 4096) * 4096;
      area = ll.malloc(areaSize);
    }
    new Uint8Array(ll.memory.buffer, area, buf.length).set(buf);
    current = this;
    chunk = buf;
    base = area;
    let ret;
    try {
      ret = ll.llhttp_execute(this.ptr, area, buf.length);
    } finally {
      current = null;
      chunk = null;
    }
    if (ret !== OK) this.pausedAt = ll.llhttp_get_error_pos(this.ptr) - area;
    return ret;
  }
  /** Signals EOF (an EOF-delimited response body ends here). */
  finish() {
    current = this;
    try {
      return ll.llhttp_finish(this.ptr);
    } finally {
      current = null;
    }
  }
  resume() {
    ll.llhttp_resume(this.ptr);
  }
  method() {
    return METHODS[ll.llhttp_get_method(this.ptr)];
  }
  reason() {
    const p = ll.llhttp_get_error_reason(this.ptr);
    if (!p) return '';
    const bytes = new Uint8Array(ll.memory.buffer, p);
    return Buffer.from(bytes.subarray(0, bytes.indexOf(0))).toString('latin1');
  }
  free() {
    ll.llhttp_free(this.ptr);
    this.ptr = 0;
  }
  onMessageBegin() {
    return 0;
  }
  onUrl() {
    return 0;
  }
  onHeaderField() {
    return 0;
  }
  onHeaderValue() {
    return 0;
  }
  onHeadersComplete() {
    return 0;
  }
  onBody() {
    return 0;
  }
  onMessageComplete() {
    return 0;
  }
}
