import http, { type IncomingMessage } from 'node:http';
import http2 from 'node:http2';
import { kOwed, sendOwedAnswer } from '../client-errors.js';
import { type ExchangeSlot, kCloseOwned, kEvents, kExchange, kRecord } from '../slots.js';
import { h2Headers, isH2Forbidden } from '../tls/http2.js';
import { type DrainSocket, kDraining } from './client-connections.js';
import { emitRecord, type PendingRecord } from './request-record.js';

/**
 * A ServerResponse that counts the body bytes handed to `write`/`end` (a
 * prototype method, no per-request closure), for `RequestRecord.bytesSent`.
 */
export class CountingResponse<Request extends IncomingMessage = IncomingMessage> extends http.ServerResponse<Request> {
  bodyBytes = 0;
  /** Content-Type seen by `writeHead` (a headers object passed there is not kept by Node). */
  contentType: string | undefined = undefined;
  [kExchange]: ExchangeSlot | undefined = undefined;
  [kRecord]: PendingRecord | undefined = undefined;
  [kEvents] = 0;
  /** The server listens for 'close' once per response (records and forwarder aborts). */
  readonly [kCloseOwned] = true;

  constructor(req: Request) {
    super(req);
    this.on('close', onResponseClose);
    const socket = req.socket as DrainSocket | null;
    if (socket !== null) socket[kOwed] = (socket[kOwed] ?? 0) + 1;
  }

  override writeHead(statusCode: number, reason?: unknown, headers?: unknown): this {
    // While the server drains, each response is its connection's last (`Connection: close`).
    if ((this.req.socket as DrainSocket | null)?.[kDraining] === true) this.shouldKeepAlive = false;
    const obj = typeof reason === 'string' ? headers : reason;
    if (obj !== null && typeof obj === 'object' && !Array.isArray(obj)) {
      const type = (obj as Record<string, unknown>)['content-type'];
      if (typeof type === 'string') this.contentType = type;
    }
    return (super.writeHead as (s: number, r: unknown, h: unknown) => this)(statusCode, reason, headers);
  }

  override write(chunk: unknown, encoding?: unknown, callback?: unknown): boolean {
    this.bodyBytes += byteLength(chunk, encoding);
    return (super.write as (c: unknown, e: unknown, cb: unknown) => boolean)(chunk, encoding, callback);
  }

  override end(chunk?: unknown, encoding?: unknown, callback?: unknown): this {
    if (chunk !== undefined && chunk !== null && typeof chunk !== 'function') {
      this.bodyBytes += byteLength(chunk, encoding);
    }
    return (super.end as (c: unknown, e: unknown, cb: unknown) => this)(chunk, encoding, callback);
  }
}

/**
 * The HTTP/2 form of {@link CountingResponse} (Node's compat response):
 * the same counting and slots, plus the translation HTTP/2 needs from a data
 * plane written for HTTP/1.1 — the header fields HTTP/2 forbids
 * (`Connection`, `Transfer-Encoding`, `Upgrade`, …: `tls/http2.ts`) are
 * dropped by `setHeader` and `writeHead`, whatever an upstream or a step
 * set, and `destroyed` mirrors the stream's (the compat response has none).
 */
export class CountingH2Response extends http2.Http2ServerResponse {
  bodyBytes = 0;
  contentType: string | undefined = undefined;
  [kExchange]: ExchangeSlot | undefined = undefined;
  [kRecord]: PendingRecord | undefined = undefined;
  [kEvents] = 0;
  readonly [kCloseOwned] = true;

  constructor(stream: http2.ServerHttp2Stream) {
    super(stream);
    this.on('close', onResponseClose);
  }

  override setHeader(name: string, value: number | string | readonly string[]): void {
    if (!isH2Forbidden(name, value)) super.setHeader(name, value);
  }

  override writeHead(statusCode: number, reason?: unknown, headers?: unknown): this {
    const message = typeof reason === 'string';
    const obj = h2Headers(message ? headers : reason);
    if (obj !== null && typeof obj === 'object' && !Array.isArray(obj)) {
      const type = (obj as Record<string, unknown>)['content-type'];
      if (typeof type === 'string') this.contentType = type;
    }
    const write = super.writeHead as (s: number, r: unknown, h?: unknown) => this;
    return message ? write.call(this, statusCode, reason, obj) : write.call(this, statusCode, obj);
  }

  override write(chunk: unknown, encoding?: unknown, callback?: unknown): boolean {
    this.bodyBytes += byteLength(chunk, encoding);
    return (super.write as (c: unknown, e: unknown, cb: unknown) => boolean)(chunk, encoding, callback);
  }

  override end(chunk?: unknown, encoding?: unknown, callback?: unknown): this {
    if (chunk !== undefined && chunk !== null && typeof chunk !== 'function') {
      this.bodyBytes += byteLength(chunk, encoding);
    }
    return (super.end as (c: unknown, e: unknown, cb: unknown) => this)(chunk, encoding, callback);
  }
}

// The data plane checks `res.destroyed` as on an HTTP/1.1 response; the compat response has no such member.
Object.defineProperty(CountingH2Response.prototype, 'destroyed', {
  get(this: CountingH2Response): boolean {
    return this.stream.destroyed;
  },
});

function byteLength(chunk: unknown, encoding: unknown): number {
  if (typeof chunk === 'string') {
    return Buffer.byteLength(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
  }
  return chunk instanceof Uint8Array ? chunk.byteLength : 0;
}

/** The one 'close' listener of every response: forwarder abort handling, then the request record. */
function onResponseClose(this: CountingResponse | CountingH2Response): void {
  this[kExchange]?.onResponseClose(this);
  if (this[kRecord] !== undefined) emitRecord.call(this as never);
  if (this instanceof CountingResponse) {
    const socket = this.req.socket as DrainSocket | null;
    if (socket !== null) {
      const active = (socket[kOwed] ?? 1) - 1;
      socket[kOwed] = active;
      // A request the parser refused after this one: its error answer goes out now (`client-errors.ts`).
      if (active === 0) sendOwedAnswer(socket);
      // Draining: the connection's last response is out; close it (an upgraded one stays).
      if (active === 0 && socket[kDraining] === true && !socket.destroyed) socket.end();
    }
  }
}
