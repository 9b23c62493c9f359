import type http from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { DataPlaneHooks, RequestContext } from '../hooks.js';
import type { ForwardOptions, ResponseObserver } from '../pipeline.js';
import type { PoolMember, UpstreamPool } from '../pool/upstream-pool.js';
import { type ExchangeSlot, kExchange } from '../slots.js';

/** `Content-Type` of the forwarder's own short answers (502, 503, 504). */
export const TEXT = 'text/plain; charset=utf-8';

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

  constructor(
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    readonly ctx: RequestContext,
    readonly options: ForwardOptions,
    readonly pool: UpstreamPool,
    readonly member: PoolMember,
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
    release(this);
  }
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
