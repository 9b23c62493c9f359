import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { createAllowTable } from './allow.js';
import { writeClientError, writeRawAdminError } from './client-error.js';
import { ENDPOINTS } from './endpoints/index.js';
import { CORS_HEADER } from './error-handler.js';
import { AdminError } from './errors.js';
import { type AdminTimeouts, applyAdminTimeouts, resolveAdminTimeouts } from './timeouts.js';

const allow = createAllowTable(ENDPOINTS);

/**
 * Answers a request whose `Expect` header asks for anything but
 * `100-continue` (Node's `checkExpectation` event): 417 `expectation failed`
 * with the `{error}` envelope and the CORS header, and the connection closes
 * (a body the client may send anyway is never read as the next request).
 * Without a listener Node answers a bare 417 (issue 20).
 */
export function writeExpectationFailed(_request: IncomingMessage, response: ServerResponse): void {
  const error = new AdminError('ADMIN_EXPECTATION_FAILED', 'only "100-continue" is supported');
  const body = JSON.stringify({ error: error.message });
  response.writeHead(error.statusCode, {
    'content-type': 'application/json; charset=utf-8',
    [CORS_HEADER[0]]: CORS_HEADER[1],
    connection: 'close',
    'content-length': Buffer.byteLength(body),
  });
  response.end(body);
}

/**
 * Answers a CONNECT request (Node's `connect` event, which hands over the
 * raw socket; without a listener Node closes it without a word, issue 20):
 * the admin API tunnels nothing, so it is 405 `method not allowed` with the
 * envelope, the CORS header and `Allow` — the methods of the path for a
 * path target, empty for the usual `host:port` target (no resource of this
 * API; RFC 9110 lets `Allow` be empty) — and the connection closes. No
 * token is needed to learn that, as for OPTIONS.
 */
export function writeConnectRefused(request: IncomingMessage, socket: Duplex): void {
  // Node took its own listeners off the socket: a reset while we write must not throw.
  socket.on('error', () => socket.destroy());
  const target = request.url ?? '';
  const query = target.indexOf('?');
  const methods = target.startsWith('/') ? allow.methodsFor(query < 0 ? target : target.slice(0, query)) : [];
  writeRawAdminError(
    socket,
    new AdminError('ADMIN_METHOD_NOT_ALLOWED', undefined, { headers: { allow: methods.join(', ') } }),
  );
}

/**
 * Attaches the answers to requests that never reach the app to an HTTP
 * server that serves it (`http.createServer(app.routing)`, e.g. the Unix
 * socket listener), so both listeners answer alike: unparsable HTTP
 * (`clientError` → 400/408/431), an unmet `Expect` (417) and CONNECT (405);
 * and applies the app's connection timeouts (`options.timeouts`, default
 * `DEFAULT_ADMIN_TIMEOUTS`; pass the app's own). Call it before the server
 * listens. The app's own TCP server has all of it already.
 */
export function attachAdminServerHandlers(server: Server, options: { timeouts?: Partial<AdminTimeouts> } = {}): void {
  server.on('clientError', writeClientError);
  server.on('checkExpectation', writeExpectationFailed);
  server.on('connect', writeConnectRefused);
  applyAdminTimeouts(server, resolveAdminTimeouts(options.timeouts));
}
