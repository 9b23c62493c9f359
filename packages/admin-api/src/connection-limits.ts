import type { Server, Socket } from 'node:net';
import { clientKey } from './auth-throttle.js';

/** Open connections the admin TCP listener holds (issue 20), after nginx's `limit_conn` and `worker_connections`. */
export interface AdminConnectionLimits {
  /** Per client address (IPv6 per /64, as the failed-auth throttle keys clients) (default 64). */
  perClient: number;
  /** In all (default 1 024; Node's `maxConnections`). */
  total: number;
}

/** The defaults: 64 connections per client, 1 024 in all. */
export const DEFAULT_ADMIN_CONNECTION_LIMITS: Readonly<AdminConnectionLimits> = Object.freeze({
  perClient: 64,
  total: 1_024,
});

/** A connection refused over a limit: which limit, and the client key it came from. */
export interface ConnectionRefusal {
  limit: 'per_client' | 'total';
  client: string;
}

/** `partial` over the defaults; throws on a limit that is not a whole number ≥ 1. */
export function resolveConnectionLimits(partial: Partial<AdminConnectionLimits> = {}): AdminConnectionLimits {
  const limits = { ...DEFAULT_ADMIN_CONNECTION_LIMITS, ...partial };
  for (const [name, value] of Object.entries(limits)) {
    if (!Number.isInteger(value) || value < 1)
      throw new RangeError(`admin connection limit ${name} must be a whole number ≥ 1`);
  }
  return limits;
}

/**
 * Caps the connections `server` holds: one over `total` is closed by Node
 * before the HTTP server sees it (`maxConnections`), one over `perClient`
 * from its address is destroyed as it is accepted — no answer, nothing read,
 * as nginx's `limit_conn` would give a 503 only after reading the request.
 * Connections without a remote address (a Unix socket) count only towards
 * `total`. Memory: one map entry per client with a connection open.
 */
export function limitConnections(
  server: Server,
  limits: AdminConnectionLimits,
  onRefused: (refusal: ConnectionRefusal) => void = () => {},
): void {
  server.maxConnections = limits.total;
  server.on('drop', (data?: { remoteAddress?: string }) =>
    onRefused({ limit: 'total', client: clientKey(data?.remoteAddress) }),
  );
  const open = new Map<string, number>();
  server.prependListener('connection', (socket: Socket) => {
    if (socket.remoteAddress === undefined) return;
    const client = clientKey(socket.remoteAddress);
    const count = open.get(client) ?? 0;
    if (count >= limits.perClient) {
      socket.destroy();
      onRefused({ limit: 'per_client', client });
      return;
    }
    open.set(client, count + 1);
    socket.once('close', () => {
      const left = (open.get(client) ?? 1) - 1;
      if (left === 0) open.delete(client);
      else open.set(client, left);
    });
  });
}
