import { readFileSync } from 'node:fs';
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import http2 from 'node:http2';
import type { ReverseProxyHandler } from '@proxyd/model';
import type { RequestContext } from '../hooks.js';
import type { ForwardOptions } from '../pipeline.js';
import type { PoolMember, UpstreamPool } from '../pool/upstream-pool.js';
import { TEXT } from './exchange.js';
import { isHopByHop } from './hop-by-hop.js';
import type { ForwardedFor, UpstreamHeaderPlan } from './upstream-headers.js';

/** Request headers HTTP/2 forbids or proxyd sets itself (RFC 9113 §8.2.2). */
const NOT_FORWARDED = new Set([
  'host',
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'expect',
]);

/**
 * HTTP/2 sessions to upstreams (`transport http { versions h2c|2 }`,
 * `h2c://`): one per member, opened on first use, reopened after it
 * closes or goes away. A request is one stream; many share a session.
 */
export class Http2Upstreams {
  readonly #sessions = new Map<PoolMember, http2.ClientHttp2Session>();
  readonly #connectTimeoutMs: number;

  constructor(connectTimeoutMs: number) {
    this.#connectTimeoutMs = connectTimeoutMs;
  }

  /** The member's open session, or a new one. */
  session(member: PoolMember, handler: ReverseProxyHandler): http2.ClientHttp2Session {
    const open = this.#sessions.get(member);
    if (open !== undefined && !open.closed && !open.destroyed) return open;
    const tls = handler.tls;
    const host = member.address.host.includes(':') ? `[${member.address.host}]` : member.address.host;
    const options: http2.SecureClientSessionOptions = tls.enabled
      ? {
          rejectUnauthorized: !tls.insecure_skip_verify,
          ...(tls.server_name !== null ? { servername: tls.server_name } : {}),
          ...(tls.ca_file !== null ? { ca: readFileSync(tls.ca_file) } : {}),
        }
      : {};
    const session = http2.connect(`${tls.enabled ? 'https' : 'http'}://${host}:${member.address.port}`, options);
    const timer = setTimeout(() => session.destroy(new Error('upstream connect timeout')), this.#connectTimeoutMs);
    session.once('connect', () => clearTimeout(timer));
    // Errors reach the streams; the session itself only has to go.
    session.on('error', () => {});
    session.once('close', () => {
      clearTimeout(timer);
      if (this.#sessions.get(member) === session) this.#sessions.delete(member);
    });
    session.once('goaway', () => {
      if (this.#sessions.get(member) === session) this.#sessions.delete(member);
    });
    this.#sessions.set(member, session);
    return session;
  }

  /** Closes every session. */
  close(): void {
    for (const s of this.#sessions.values()) s.destroy();
    this.#sessions.clear();
  }
}

/**
 * Forwards one request as an HTTP/2 stream (gRPC's transport): the
 * client's headers (without HTTP/1's connection-specific ones; `te:
 * trailers` kept), `X-Forwarded-*`, `header_up`, the body streamed both
 * ways, and the upstream's trailers relayed (`res.addTrailers`), which is
 * where gRPC puts `grpc-status`. A refused or reset session before the
 * response head is 502 (the member leaves the rotation for
 * `fail_duration`); no head within the read timeout is 504.
 */
export function forwardHttp2(
  sessions: Http2Upstreams,
  pool: UpstreamPool,
  member: PoolMember,
  handler: ReverseProxyHandler,
  plan: UpstreamHeaderPlan,
  forwarded: ForwardedFor,
  req: IncomingMessage,
  res: ServerResponse,
  ctx: RequestContext,
  options: ForwardOptions,
  readTimeoutMs: number,
): void {
  const headers: http2.OutgoingHttpHeaders = {
    ':method': req.method ?? 'GET',
    ':path': options.path,
    ':authority': req.headers.host ?? ctx.host,
    ':scheme': handler.tls.enabled ? 'https' : 'http',
  };
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || name.startsWith(':') || NOT_FORWARDED.has(name) || isHopByHop(name)) continue;
    if (name.startsWith('x-forwarded-') && !forwarded.trusted) continue;
    headers[name] = value;
  }
  // Only `te: trailers` may cross into HTTP/2 (RFC 9113 §8.2.2); gRPC sends it.
  const te = req.headers.te;
  if (typeof te === 'string' && te.toLowerCase().includes('trailers')) headers.te = 'trailers';
  headers['x-forwarded-for'] = forwarded.forwardedFor;
  if (!forwarded.trusted || headers['x-forwarded-proto'] === undefined) headers['x-forwarded-proto'] = forwarded.proto;
  if (!forwarded.trusted || headers['x-forwarded-host'] === undefined) headers['x-forwarded-host'] = forwarded.host;
  for (const op of plan.ops) {
    if (op.op === 'delete') delete headers[op.name];
    else {
      const value = op.template === null ? (op.value ?? '') : op.template.render(req, ctx);
      const have = headers[op.name];
      headers[op.name] = op.op === 'add' && have !== undefined ? [...[have].flat().map(String), value] : value;
    }
  }
  member.active++;
  let released = false;
  const release = (): void => {
    if (!released) {
      released = true;
      member.active--;
    }
  };
  const bodiless =
    req.headers['content-length'] === undefined &&
    req.headers['transfer-encoding'] === undefined &&
    (req.method === 'GET' || req.method === 'HEAD' || req.method === 'OPTIONS') &&
    (req.httpVersionMajor === 1 || req.readableEnded);
  let stream: http2.ClientHttp2Stream;
  try {
    stream = sessions.session(member, handler).request(headers, { endStream: bodiless });
  } catch {
    release();
    fail(res, options, 502, 'bad gateway');
    return;
  }
  let answered = false;
  let timedOut = false;
  stream.setTimeout(readTimeoutMs, () => {
    timedOut = true;
    if (!answered) stream.close(http2.constants.NGHTTP2_CANCEL);
  });
  stream.on('response', (head, flags) => {
    answered = true;
    // A response is a stream (gRPC, SSE): the read timeout stops once its head arrived.
    stream.setTimeout(0);
    const status = Number(head[':status'] ?? 502);
    const out: OutgoingHttpHeaders = {};
    const late: OutgoingHttpHeaders = {};
    // gRPC's "Trailers-Only" answer (an error without messages) ends the stream with its head;
    // its grpc-* fields go out as trailers, which every gRPC client reads.
    const trailersOnly = (flags & http2.constants.NGHTTP2_FLAG_END_STREAM) !== 0 && head['grpc-status'] !== undefined;
    for (const [name, value] of Object.entries(head)) {
      if (value === undefined || name.startsWith(':') || isHopByHop(name)) continue;
      if (trailersOnly && name.startsWith('grpc-')) late[name] = value;
      else out[name] = value;
    }
    options.editResponseHeaders?.(out, status);
    res.writeHead(status, out);
    if (trailersOnly) res.addTrailers(late as Record<string, string>);
    stream.pipe(res, { end: false });
  });
  stream.on('trailers', (trailers) => {
    const out: OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(trailers)) {
      if (value !== undefined && value !== null && !name.startsWith(':')) out[name] = value as string | string[];
    }
    res.addTrailers(out as Record<string, string>);
  });
  stream.on('end', () => {
    if (answered && !res.writableEnded) res.end();
  });
  stream.on('close', () => {
    release();
    if (answered) {
      if (!res.writableEnded) res.destroy();
      return;
    }
    if (res.headersSent || res.destroyed) return;
    const code = stream.rstCode ?? 0;
    if (!timedOut && code !== http2.constants.NGHTTP2_CANCEL) pool.markFailed(member);
    fail(res, options, timedOut ? 504 : 502, timedOut ? 'gateway timeout' : 'bad gateway');
  });
  stream.on('error', () => {});
  res.once('close', () => {
    if (!res.writableFinished && !stream.closed) stream.close(http2.constants.NGHTTP2_CANCEL);
  });
  if (!bodiless) req.pipe(stream);
  else req.resume();
}

function fail(res: ServerResponse, options: ForwardOptions, status: number, message: string): void {
  if (options.onError?.(status, message) === true) return;
  res.writeHead(status, { 'content-type': TEXT }).end(`${message}\n`);
}
