import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import { kCloseOwned, kExchange } from '../slots.js';
import { type Emitter, type Exchange, onClientClose, release, TEXT } from './exchange.js';
import { onUpstreamResponse } from './response-pump.js';
import { isConnectFailure, isTimeout, retriable } from './retry.js';

/**
 * The one web pass, put first with http-proxy-3's `before('web',
 * 'deleteLength', …)` hook: sends the request upstream on the member's
 * keep-alive agent with the head built in one pass. Returns true so no
 * other pass runs. Listeners are module functions that reach the exchange
 * through the {@link kExchange} slot (no closure per request).
 */
export function forwardPass(req: IncomingMessage, _res: ServerResponse, options: { exchange: Exchange }): boolean {
  const exchange = options.exchange;
  const { member } = exchange;
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
  (proxyReq as Emitter & http.ClientRequest)[kExchange] = exchange;
  (exchange.res as Emitter & ServerResponse)[kExchange] = exchange;
  proxyReq.on('response', onUpstreamResponse);
  proxyReq.on('error', onUpstreamError);
  const res = exchange.res as Emitter & ServerResponse & { [kCloseOwned]?: boolean };
  if (res[kCloseOwned] !== true) res.on('close', onClientClose);
  if (!exchange.hasBody) {
    // No body (the common GET): end now instead of piping an empty stream;
    // Node dumps the unread request when the response finishes.
    proxyReq.end();
  } else {
    // The client waits for `100 Continue` before sending its body: the
    // access checks have passed, so ask for it now (Expect is not forwarded).
    if (req.headers.expect !== undefined && !exchange.res.headersSent) exchange.res.writeContinue();
    req.pipe(proxyReq);
  }
  return true;
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
  if (isConnectFailure(code)) exchange.pool.markFailed(exchange.member);
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const status = timeout ? 504 : 502;
  res.removeHeader('x-cache');
  res.writeHead(status, { 'content-type': TEXT, connection: 'close' });
  res.end(timeout ? 'gateway timeout\n' : 'bad gateway\n');
}
