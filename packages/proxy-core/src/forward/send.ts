import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import { kCloseOwned, kExchange } from '../slots.js';
import {
  type Emitter,
  type Exchange,
  holdBody,
  mayHoldBody,
  onClientClose,
  release,
  TEXT,
  takeBody,
} from './exchange.js';
import { onUpstreamResponse } from './response-pump.js';
import { isConnectFailure, isTimeout, retriable } from './retry.js';

/**
 * The one web pass, put first with http-proxy-3's `before('web',
 * 'deleteLength', …)` hook: sends the request upstream on the member's
 * keep-alive agent with the head built in one pass. Returns true so no
 * other pass runs. Listeners are module functions that reach the exchange
 * through the {@link kExchange} slot (no closure per request).
 *
 * A request body is read first, up to `REQUEST_BUFFER_BYTES` (64 KiB), and
 * the upstream request opens only once it has ended or outgrown that
 * (then it streams, from what arrived): a client that trickles its body, or
 * stops, holds no upstream connection (the listeners' body timeout cuts it,
 * `connection-limits.ts`). Without a body (the common GET) nothing changes.
 */
export function forwardPass(req: IncomingMessage, _res: ServerResponse, options: { exchange: Exchange }): boolean {
  const exchange = options.exchange;
  const res = exchange.res as Emitter & ServerResponse & { [kCloseOwned]?: boolean };
  if (exchange.proxyReq === null) {
    // The first try (a retry keeps what the first set up).
    res[kExchange] = exchange;
    if (res[kCloseOwned] !== true) res.on('close', onClientClose);
  }
  if (!exchange.hasBody) send(exchange, null, false);
  else if (req.readableEnded || !mayHoldBody()) {
    // The client waits for `100 Continue` before sending its body: the
    // access checks have passed, so ask for it now (Expect is not forwarded).
    if (req.headers.expect !== undefined && !res.headersSent) res.writeContinue();
    send(exchange, null, true);
  } else collectBody(exchange);
  return true;
}

/** Reads the request body into memory ({@link holdBody}); the upstream request waits. */
function collectBody(exchange: Exchange): void {
  const { req, res } = exchange;
  if (req.headers.expect !== undefined && !res.headersSent) res.writeContinue();
  exchange.body = [];
  (req as Emitter & IncomingMessage)[kExchange] = exchange;
  req.on('data', onBodyData);
  req.on('end', onBodyEnd);
}

function onBodyData(this: Emitter & IncomingMessage, chunk: Buffer): void {
  const exchange = this[kExchange];
  if (exchange === undefined || exchange.body === null) return;
  if (holdBody(exchange, chunk)) return;
  // Too big to hold: stream it, from what arrived (pause first: no chunk is lost in between).
  this.pause();
  stopCollecting(this);
  send(exchange, takeBody(exchange), true);
}

function onBodyEnd(this: Emitter & IncomingMessage): void {
  const exchange = this[kExchange];
  if (exchange === undefined || exchange.body === null) return;
  stopCollecting(this);
  send(exchange, takeBody(exchange), false);
}

function stopCollecting(req: Emitter & IncomingMessage): void {
  req.off('data', onBodyData);
  req.off('end', onBodyEnd);
}

/**
 * Opens the upstream request. `head`: body chunks already read (null:
 * none); `more`: the rest of the body is piped from the client.
 */
function send(exchange: Exchange, head: Buffer[] | null, more: boolean): void {
  if (exchange.aborted) return;
  const { member, req } = exchange;
  const address = member.address;
  const proxyReq = (member.target.protocol === 'https:' ? https : http).request({
    agent: member.agent,
    host: address.host,
    port: address.port,
    method: req.method,
    path: exchange.options.path,
    headers: exchange.headers,
  });
  exchange.proxyReq = proxyReq;
  // `transport http { read_timeout }`: this handler's upstream silence limit instead of the default.
  const readTimeout = exchange.timing?.readTimeoutMs ?? null;
  if (readTimeout !== null) proxyReq.setTimeout(readTimeout);
  (proxyReq as Emitter & http.ClientRequest)[kExchange] = exchange;
  proxyReq.on('response', onUpstreamResponse);
  proxyReq.on('error', onUpstreamError);
  if (head !== null) for (const chunk of head) proxyReq.write(chunk);
  // No body, or all of it read (the common GET): end now instead of piping;
  // Node dumps the unread request when the response finishes.
  if (more) req.pipe(proxyReq);
  else proxyReq.end();
}

function onUpstreamError(this: Emitter & http.ClientRequest, err: NodeJS.ErrnoException): void {
  const exchange = this[kExchange];
  if (exchange !== undefined) failExchange(exchange, err);
}

/**
 * A failed exchange: sent once more when {@link retriable}, else the member
 * is marked failed on a connect failure (passive health) and the client
 * gets 504 (timeout) or 502, or its response is destroyed once headers went
 * out.
 */
export function failExchange(exchange: Exchange, err: NodeJS.ErrnoException): void {
  const { res } = exchange;
  const code = err.code ?? '';
  if (!exchange.aborted && retriable(exchange, code)) {
    // The upstream closed a pooled connection as we reused it (its idle
    // close raced our request): nothing was processed, send it again once.
    exchange.retried = true;
    forwardPass(exchange.req, res, { exchange });
    return;
  }
  release(exchange);
  if (exchange.aborted) return;
  // The upstream's message arrived whole and bytes followed it (a body on a
  // 204/304 or on a HEAD answer, which has none): the parser failed on them
  // and Node destroyed that connection (desynchronised, never reused). The
  // client's response is intact: the pump finishes it.
  if (exchange.proxyRes?.complete === true) return;
  const timeout = isTimeout(code);
  const connectFailure = isConnectFailure(code);
  if (connectFailure) exchange.pool.markFailed(exchange.member);
  if (connectFailure && mayTryAnother(exchange)) {
    tryAnother(exchange, err);
    return;
  }
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const status = timeout ? 504 : 502;
  res.removeHeader('x-cache');
  if (exchange.options.onError?.(status, timeout ? 'gateway timeout' : 'bad gateway') === true) return;
  res.writeHead(status, { 'content-type': TEXT, connection: 'close' });
  res.end(timeout ? 'gateway timeout\n' : 'bad gateway\n');
}

/** Methods a retry may send again (RFC 9110 §9.2.2), when they carry no body. */
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE']);

/**
 * `lb_retries` / `lb_try_duration`: whether a request whose connection
 * failed may go to another member: the handler retries, nothing was
 * answered yet, the request is idempotent and has no body, and the count
 * or the time allows.
 */
function mayTryAnother(exchange: Exchange): boolean {
  const retry = exchange.retry;
  if (retry === null || exchange.res.headersSent || exchange.hasBody) return false;
  if (!IDEMPOTENT.has(exchange.req.method ?? '')) return false;
  if (retry.retries !== null && exchange.tries >= retry.retries) return false;
  if (retry.durationMs > 0 && Date.now() + retry.intervalMs > exchange.deadline) return false;
  return true;
}

/** Waits `lb_try_interval`, then sends the request to another eligible member (or fails as before). */
function tryAnother(exchange: Exchange, err: NodeJS.ErrnoException): void {
  exchange.tries++;
  const timer = setTimeout(() => {
    if (exchange.aborted || exchange.res.destroyed) return;
    const member = exchange.pool.pickAfter(exchange.member, exchange.ctx.clientIp);
    if (member === null) {
      // Nobody eligible yet: keep waiting while the policy allows, else answer as for the failure.
      if (mayTryAnother(exchange)) tryAnother(exchange, err);
      else failExchange(Object.assign(exchange, { retry: null }), err);
      return;
    }
    member.active++;
    exchange.member = member;
    if (exchange.pool.sticky) exchange.setCookie = exchange.pool.stickyCookie(member);
    exchange.released = false;
    exchange.proxyRes = null;
    send(exchange, null, false);
  }, exchange.retry?.intervalMs ?? 0);
  timer.unref?.();
}
