import type { Duplex } from 'node:stream';
import { CORS_HEADER } from './error-handler.js';
import { AdminError } from './errors.js';

const REASONS: Record<number, string> = {
  400: 'Bad Request',
  408: 'Request Timeout',
  431: 'Request Header Fields Too Large',
};

/**
 * Answers a request Node's HTTP parser could not read (malformed request
 * line, headers over the size limit, timeout) with the `{error}` envelope and
 * the CORS header, then closes the connection. Fastify uses it for the TCP
 * listener; attach it to any other server that serves the app
 * (`server.on('clientError', writeClientError)`).
 */
export function writeClientError(error: Error, socket: Duplex): void {
  const code = (error as NodeJS.ErrnoException).code;
  const mapped =
    code === 'HPE_HEADER_OVERFLOW'
      ? new AdminError('ADMIN_HEADERS_TOO_LARGE')
      : code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? new AdminError('ADMIN_REQUEST_TIMEOUT')
        : new AdminError('ADMIN_BAD_REQUEST', 'malformed HTTP request');
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const body = JSON.stringify({ error: mapped.message });
  socket.end(
    `HTTP/1.1 ${mapped.statusCode} ${REASONS[mapped.statusCode] ?? 'Bad Request'}\r\n` +
      `Content-Type: application/json; charset=utf-8\r\n${CORS_HEADER[0]}: ${CORS_HEADER[1]}\r\nConnection: close\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
}
