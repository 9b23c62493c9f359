import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { ReverseProxyHandler } from '@proxyd/model';
import type { ProxyServer as HttpProxy } from 'http-proxy-3';
import type { RequestContext } from '../hooks.js';
import type { PoolMember } from '../pool/upstream-pool.js';
import { TEXT } from './exchange.js';
import { editUpstreamHeaders, type ForwardedFor, type UpstreamHeaderPlan } from './upstream-headers.js';

/**
 * Hands a WebSocket upgrade to http-proxy-3's `ws` passes (they copy
 * `req.headers`, so the upstream head is edited in place) on the member's
 * agent. `Connection` and `Upgrade` are hop-by-hop but carry the upgrade:
 * they are put back after the strip.
 */
export function forwardUpgrade(
  proxy: HttpProxy,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  member: PoolMember,
  handler: ReverseProxyHandler,
  plan: UpstreamHeaderPlan,
  forwarded: ForwardedFor,
  ctx?: RequestContext,
): void {
  const connection = req.headers.connection;
  const upgrade = req.headers.upgrade;
  editUpstreamHeaders(req, forwarded, plan, ctx);
  if (connection !== undefined) req.headers.connection = connection;
  if (upgrade !== undefined) req.headers.upgrade = upgrade;
  proxy.ws(req, socket, head, {
    target: member.target,
    agent: member.agent,
    secure: !handler.tls.insecure_skip_verify,
    prependPath: false,
  } as never);
}

/**
 * http-proxy-3's WebSocket pass never aborts its upstream request when the
 * client goes away before the upgrade (or while an upstream that answered
 * with plain HTTP streams its body): destroy it with the client socket, so
 * its upstream socket is not leaked. After an upgrade the request is
 * already finished and this does nothing.
 */
export function onProxyReqWs(proxyReq: http.ClientRequest, _req: IncomingMessage, socket: Duplex): void {
  socket.once('close', () => proxyReq.destroy());
}

/** http-proxy-3's `error` event (WebSocket path): close the client socket or answer 502. */
export function onProxyError(_err: Error, _req: IncomingMessage, target: ServerResponse | Duplex): void {
  if (target instanceof http.ServerResponse) {
    if (target.headersSent) target.destroy();
    else target.writeHead(502, { 'content-type': TEXT }).end('bad gateway\n');
    return;
  }
  if (!target.destroyed) {
    target.end('HTTP/1.1 502 Bad Gateway\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
    target.destroy();
  }
}
