import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { CORS_HEADER } from './error-handler.js';
import { AdminError } from './errors.js';

/**
 * Writes an `AdminError` straight to a socket as a complete HTTP/1.1
 * response — the `{error}` envelope, its headers (`Allow`, …), the CORS
 * header and `Connection: close` — then closes the connection. For requests
 * that never reach the app (Node's parser refused them, or Node hands the
 * raw socket over, as for CONNECT).
 */
export function writeRawAdminError(socket: Duplex, error: AdminError): void {
  // A response already under way on this connection (a request timed out after an early answer):
  // an answer written now would corrupt it, so only close.
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent: boolean } | null })._httpMessage;
  if (!socket.writable || inFlight?.headersSent === true) {
    socket.destroy();
    return;
  }
  const body = JSON.stringify({ error: error.message });
  const extra = Object.entries(error.headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  // Destroyed once sent: an HTTP server's sockets allow half-open connections, and a client may never end its side.
  socket.end(
    `HTTP/1.1 ${error.statusCode} ${STATUS_CODES[error.statusCode] ?? 'Error'}\r\n` +
      `Content-Type: application/json; charset=utf-8\r\n${CORS_HEADER[0]}: ${CORS_HEADER[1]}\r\n${extra}Connection: close\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    () => socket.destroy(),
  );
}

/**
 * Answers a request Node's HTTP parser could not read (malformed request
 * line, headers over the size limit, timeout) with the `{error}` envelope and
 * the CORS header, then closes the connection. Fastify uses it for the TCP
 * listener; attach it to any other server that serves the app
 * (`server.on('clientError', writeClientError)`, or `attachAdminServerHandlers`).
 */
export function writeClientError(error: Error, socket: Duplex): void {
  const code = (error as NodeJS.ErrnoException).code;
  const mapped =
    code === 'HPE_HEADER_OVERFLOW'
      ? new AdminError('ADMIN_HEADERS_TOO_LARGE')
      : code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? new AdminError('ADMIN_REQUEST_TIMEOUT')
        : new AdminError('ADMIN_BAD_REQUEST', 'malformed HTTP request');
  writeRawAdminError(socket, mapped);
}
