import type http from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { DataPlaneHooks, RequestContext } from '../hooks.js';
import type { ForwardOptions, ResponseObserver } from '../pipeline.js';
import type { PoolMember, UpstreamPool } from '../pool/upstream-pool.js';
import { type ExchangeSlot, kExchange } from '../slots.js';

/** `Content-Type` of the forwarder's own short answers (502, 503, 504). */
export const TEXT = 'text/plain; charset=utf-8';

/**
 * A handler's timeouts: `readTimeoutMs` replaces the upstream idle timeout
 * for its requests (null: the default; 0: none); `streamAll`
 * (`flush_interval -1`) makes every response a stream; `streamTimeoutMs`
 * bounds a stream's life (0: no bound).
 */
export interface StreamTiming {
  readonly readTimeoutMs: number | null;
  readonly streamAll: boolean;
  readonly streamTimeoutMs: number;
}

/**
 * `lb_retries` / `lb_try_duration` / `lb_try_interval`: after a failed
 * connection, another member is tried, at most `retries` times (null: as
 * long as `durationMs` allows), `intervalMs` apart.
 */
export interface RetryPolicy {
  readonly retries: number | null;
  readonly durationMs: number;
  readonly intervalMs: number;
}

/** An emitter that carries an exchange in its {@link kExchange} slot. */
export type Emitter = { [kExchange]?: Exchange };

/** A small upstream body being collected for `DataPlaneHooks.rewriteBody`. */
export class WholeBody {
  readonly chunks: Buffer[] = [];

  constructor(
    readonly status: number,
    readonly headers: IncomingHttpHeaders,
    readonly rewrite: (body: Buffer) => Buffer,
  ) {}
}

/**
 * The per-request state of one forwarded exchange, reached from emitters
 * (the response, the upstream request, the upstream response's `req`)
 * through the {@link kExchange} slot. One object per request, fields
 * declared up front (one hidden class).
 */
export class Exchange implements ExchangeSlot {
  /** A request that failed on a reused keep-alive socket was sent again once. */
  retried = false;
  proxyReq: http.ClientRequest | null = null;
  proxyRes: IncomingMessage | null = null;
  /** The response's 'drain' listener is attached (once, on the first backpressure). */
  drainHooked = false;
  /** The client went away before the response finished. */
  aborted = false;
  released = false;
  /** A small body being collected for `DataPlaneHooks.rewriteBody`, or null. */
  whole: WholeBody | null = null;
  /** The request body being collected before the upstream request opens (send.ts), or null. */
  body: Buffer[] | null = null;
  /** Bytes in {@link body}. */
  bodyBytes = 0;
  /** The handler's read and stream timeouts, when it sets any (null: the daemon's defaults). */
  timing: StreamTiming | null = null;
  /** The handler's retry policy (`lb_retries`, `lb_try_duration`), or null: none. */
  retry: RetryPolicy | null = null;
  /** Members tried after the first (retries done). */
  tries = 0;
  /** `lb_try_duration`: no retry after this time, ms since the epoch (0: none by time). */
  deadline = 0;
  /** `lb_policy cookie`: the `Set-Cookie` that sticks the client to its member (null: it already is). */
  setCookie: string | null = null;

  constructor(
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    readonly ctx: RequestContext,
    readonly options: ForwardOptions,
    readonly pool: UpstreamPool,
    /** The member the request goes to (a retry after a failed connection picks another). */
    public member: PoolMember,
    readonly hooks: DataPlaneHooks,
    /** The upstream request head, raw `[name, value, …]`. */
    readonly headers: string[],
    /** The request has a body to stream (Content-Length or Transfer-Encoding). */
    readonly hasBody: boolean,
    /** Sees the upstream response before delivery (e.g. a cache fill), or null. */
    readonly observer: ResponseObserver | null,
  ) {}

  /** The client's response closed (the server's one 'close' listener, or {@link onClientClose}). */
  onResponseClose(res: object): void {
    if (!(res as ServerResponse).writableFinished) {
      this.aborted = true;
      this.proxyReq?.destroy();
    }
    if (this.body !== null) takeBody(this);
    release(this);
  }
}

/**
 * Request bodies up to this size are read whole before the upstream request
 * opens, bytes (64 KiB): a client that has not sent its body holds no
 * upstream connection. A bigger body streams from its first 64 KiB on.
 */
export const REQUEST_BUFFER_BYTES = 64 * 1024;

/**
 * The request bodies being collected in this process never hold more than
 * this together, bytes (64 MiB, 1,024 full buffers); a body that would go
 * over streams at once.
 */
export const REQUEST_BUFFER_TOTAL = 64 * 1024 * 1024;

let bufferedTotal = 0;

/** Bytes held now by every request body being collected ({@link REQUEST_BUFFER_TOTAL}). */
export function requestBytesBuffered(): number {
  return bufferedTotal;
}

/** Counts a chunk of a body being collected; false when the body must stream instead (over a limit). */
export function holdBody(exchange: Exchange, chunk: Buffer): boolean {
  (exchange.body as Buffer[]).push(chunk);
  exchange.bodyBytes += chunk.length;
  return holdRequestBytes(exchange.bodyBytes, chunk.length);
}

/**
 * Counts `n` more bytes of a request body being collected, which holds
 * `held` bytes with them; false when that body must stream instead (over
 * {@link REQUEST_BUFFER_BYTES}, or the process over {@link REQUEST_BUFFER_TOTAL}).
 * The HTTP/1.1 fast path counts its bodies here too.
 */
export function holdRequestBytes(held: number, n: number): boolean {
  bufferedTotal += n;
  return held <= REQUEST_BUFFER_BYTES && bufferedTotal <= REQUEST_BUFFER_TOTAL;
}

/** Bytes counted by {@link holdRequestBytes} are no longer held. */
export function freeRequestBytes(n: number): void {
  bufferedTotal -= n;
}

/** Whether a new body may be collected (the process holds less than {@link REQUEST_BUFFER_TOTAL}). */
export function mayHoldBody(): boolean {
  return bufferedTotal < REQUEST_BUFFER_TOTAL;
}

/** The chunks collected so far, handed over (the exchange no longer holds them). */
export function takeBody(exchange: Exchange): Buffer[] {
  const chunks = exchange.body ?? [];
  bufferedTotal -= exchange.bodyBytes;
  exchange.body = null;
  exchange.bodyBytes = 0;
  return chunks;
}

/** Gives the member its slot back (once per exchange). */
export function release(exchange: Exchange): void {
  if (!exchange.released) {
    exchange.released = true;
    exchange.member.active--;
  }
}

/**
 * The client went away: abort the upstream request so its socket is
 * destroyed, not leaked. Attached only when the server does not own the
 * response's 'close' (`kCloseOwned`).
 */
export function onClientClose(this: Emitter & ServerResponse): void {
  this[kExchange]?.onResponseClose(this);
}
