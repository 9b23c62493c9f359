import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/**
 * How long an admin connection may take, in ms, after nginx's
 * `client_header_timeout`, `client_body_timeout`, `send_timeout` and
 * `keepalive_timeout` (60 s, 60 s, 60 s, 75 s there), tighter because the
 * admin API is an operator's API with small bodies (issue 20).
 */
export interface AdminTimeouts {
  /** From a request's first byte (or the connection's start) to the end of its headers (default 10 000; Node's `headersTimeout`). */
  headersMs: number;
  /** From a request's first byte to the end of its body (default 30 000; Node's `requestTimeout`): a 64 KB body at 2.2 KB/s. */
  requestMs: number;
  /**
   * Longest silence while the client owes bytes: before its first request,
   * between reads of headers or body, and between writes of a response it
   * does not read (default 10 000; the socket's idle timeout). Not applied
   * while the app works on a complete request.
   */
  idleMs: number;
  /** Idle keep-alive connection between requests (default 30 000, announced in `Keep-Alive: timeout=30`; Node closes it 1 s later). */
  keepAliveMs: number;
  /** How often `headersMs` and `requestMs` are checked (default 1 000; Node's `connectionsCheckingInterval`, 30 000 by default). */
  checkIntervalMs: number;
}

/** The defaults: headers 10 s, whole request 30 s, idle 10 s, keep-alive 30 s, checked every second. */
export const DEFAULT_ADMIN_TIMEOUTS: Readonly<AdminTimeouts> = Object.freeze({
  headersMs: 10_000,
  requestMs: 30_000,
  idleMs: 10_000,
  keepAliveMs: 30_000,
  checkIntervalMs: 1_000,
});

/** `partial` over the defaults; throws when `headersMs` exceeds `requestMs` (Node refuses that too). */
export function resolveAdminTimeouts(partial: Partial<AdminTimeouts> = {}): AdminTimeouts {
  const timeouts = { ...DEFAULT_ADMIN_TIMEOUTS, ...partial };
  for (const [name, value] of Object.entries(timeouts)) {
    if (!Number.isInteger(value) || value <= 0)
      throw new RangeError(`admin timeout ${name} must be a whole number > 0`);
  }
  if (timeouts.headersMs > timeouts.requestMs)
    throw new RangeError('admin timeout headersMs must not exceed requestMs');
  return timeouts;
}

/**
 * Applies `timeouts` to an HTTP server that serves the admin app (before it
 * listens: the check interval starts on `listening`). A connection whose
 * idle timer fires is destroyed unless the app is still working on a
 * request that arrived whole (a slow handler is not the client's fault;
 * its first write re-arms the timer). A request over `headersMs` or
 * `requestMs` is answered 408 by the server's `clientError` listener.
 */
export function applyAdminTimeouts(server: Server, timeouts: AdminTimeouts): void {
  server.headersTimeout = timeouts.headersMs;
  server.requestTimeout = timeouts.requestMs;
  server.keepAliveTimeout = timeouts.keepAliveMs;
  // A constructor option in Node's types; read again when the server starts listening.
  (server as Server & { connectionsCheckingInterval: number }).connectionsCheckingInterval = timeouts.checkIntervalMs;
  server.setTimeout(timeouts.idleMs);
  server.on('timeout', onIdle);
}

function onIdle(socket: Socket): void {
  const response = (socket as Socket & { _httpMessage?: ServerResponse<IncomingMessage> | null })._httpMessage;
  if (response !== undefined && response !== null && !response.headersSent && response.req.complete) return;
  socket.destroy();
}
