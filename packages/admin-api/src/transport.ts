import type { Socket } from 'node:net';

/** Which listener a request came through; `auto` decides per connection. */
export type AdminTransport = 'tcp' | 'unix' | 'auto';

/**
 * True when the request's connection was accepted by a server listening on
 * a Unix socket path (its `address()` is a string). Fails closed: a socket
 * without a server (e.g. `inject()`), or whose server stopped listening,
 * counts as TCP and needs the token.
 */
export function isUnixConnection(socket: Socket | undefined): boolean {
  const server = (socket as (Socket & { server?: { address(): unknown } }) | undefined)?.server;
  if (server === undefined || server === null || typeof server.address !== 'function') return false;
  return typeof server.address() === 'string';
}
