import type { IncomingMessage } from 'node:http';
import type { ClientIpResolver } from '../client-ip.js';
import type { RequestContext } from '../hooks.js';
import type { ForwardedFor } from './upstream-headers.js';

/**
 * Decides the `X-Forwarded-*` values sent upstream, for the HTTP and the
 * WebSocket path alike. `X-Forwarded-For`: the client IP, or, from a
 * trusted proxy (`trusted_proxies`) that sent one, its list plus the peer.
 * `X-Forwarded-Proto`: the scheme the client used to reach us;
 * `X-Forwarded-Host`: the client's Host. A trusted proxy's own `-Proto` and
 * `-Host` are kept (`trusted`).
 */
export function forwardedFor(
  req: IncomingMessage,
  ctx: RequestContext,
  clientIp: ClientIpResolver | undefined,
): ForwardedFor {
  const headers = req.headers;
  const peer = req.socket.remoteAddress ?? '';
  const trusted = clientIp?.enabled === true && clientIp.isTrusted(peer);
  const xff = headers['x-forwarded-for'];
  return {
    forwardedFor: trusted && xff !== undefined ? `${xff}, ${unmapIpv4(peer)}` : ctx.clientIp,
    trusted,
    proto: ctx.secure ? 'https' : 'http',
    host: headers.host ?? ctx.host,
  };
}

function unmapIpv4(ip: string): string {
  return ip.startsWith('::ffff:') && ip.indexOf('.') > 0 ? ip.slice(7) : ip;
}
