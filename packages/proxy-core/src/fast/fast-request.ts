import type { IncomingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';
import type { RequestContext, RequestRecord } from '../hooks.js';
import { kCaptures } from '../slots.js';
import type { ResponseWriter } from './response-head.js';

/** Request headers whose repeats Node's parser drops (the first value wins). */
const SINGLETONS = new Set([
  'age',
  'authorization',
  'content-length',
  'content-type',
  'etag',
  'expires',
  'from',
  'host',
  'if-modified-since',
  'if-unmodified-since',
  'last-modified',
  'location',
  'max-forwards',
  'proxy-authorization',
  'referer',
  'retry-after',
  'server',
  'user-agent',
]);

/**
 * The request a {@link FastConnection} is serving, one object per
 * connection reset per request: the members of `IncomingMessage` that the
 * forwarding helpers (`buildUpstreamHeaders`, `forwardedFor`) and the
 * response hooks read (`method`, `url`, `rawHeaders`, `headers`,
 * `httpVersionMajor`, `socket`). `headers` is built on first read, with
 * Node's rules for repeated lines (`set-cookie` an array, `cookie` joined
 * with `; `, a singleton's first value, the rest joined with `, `).
 */
export class FastRequest {
  method = 'GET';
  url = '';
  readonly rawHeaders: string[] = [];
  readonly httpVersionMajor = 1;
  /** 1, or 0 for an HTTP/1.0 request. */
  httpVersionMinor = 1;
  socket: Socket | null = null;
  /** The Host line's value (the connection checked there is exactly one). */
  host = '';
  connection: string | undefined = undefined;
  forwardedFor: string | undefined = undefined;
  #headers: IncomingHttpHeaders | null = null;
  /** Regexp captures of the matchers that matched this request (`request-matcher.ts`): none carried to the next. */
  [kCaptures]: unknown = undefined;

  reset(): void {
    this[kCaptures] = undefined;
    this.url = '';
    this.rawHeaders.length = 0;
    this.host = '';
    this.connection = undefined;
    this.forwardedFor = undefined;
    this.#headers = null;
  }

  get headers(): IncomingHttpHeaders {
    if (this.#headers !== null) return this.#headers;
    const out: Record<string, string | string[]> = {};
    const raw = this.rawHeaders;
    for (let i = 0; i < raw.length; i += 2) {
      const name = (raw[i] as string).toLowerCase();
      const value = raw[i + 1] as string;
      const prev = out[name];
      if (prev === undefined) out[name] = name === 'set-cookie' ? [value] : value;
      else if (name === 'set-cookie') (prev as string[]).push(value);
      else if (name === 'cookie') out[name] = `${prev as string}; ${value}`;
      else if (!SINGLETONS.has(name)) out[name] = `${prev as string}, ${value}`;
    }
    this.#headers = out as IncomingHttpHeaders;
    return this.#headers;
  }
}

/**
 * The request record of a fast-path exchange, as the node:http path's
 * (`data-plane/request-record.ts`): `declared` the request's
 * Content-Length (-1: none), `startedAt` ms since the epoch, `durationMs`
 * from its first byte to its end.
 */
export function fastRecord(
  req: FastRequest,
  ctx: RequestContext,
  res: ResponseWriter,
  declared: number,
  startedAt: number,
  durationMs: number,
): RequestRecord {
  const q = req.url.indexOf('?');
  return {
    host: ctx.host,
    domain: ctx.domain,
    analytics: ctx.site.analytics,
    method: req.method,
    path: ctx.path,
    query: q < 0 ? undefined : req.url.slice(q + 1),
    status: res.headersSent ? res.status : 0,
    bytesSent: req.method === 'HEAD' || !res.headersSent ? 0 : res.bodyBytes,
    bytesReceived: Math.max(declared, 0),
    durationMs,
    clientIp: ctx.clientIp,
    referer: req.headers.referer,
    userAgent: req.headers['user-agent'],
    contentType: res.contentType,
    startedAt,
    protocol: 'h1',
    events: 0,
  };
}

/** The connection peer's IP, an IPv4-mapped IPv6 address as IPv4 (the client IP without `trusted_proxies`). */
export function peerIp(ip: string | undefined): string {
  const s = ip ?? '';
  return s.startsWith('::ffff:') && s.indexOf('.') > 0 ? s.slice(7) : s;
}
