import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { writeClientError } from './client-error.js';
import { CORS_HEADER } from './error-handler.js';
import { AdminError } from './errors.js';

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
 * Attaches the answers to requests that never reach the app to an HTTP
 * server that serves it (`http.createServer(app.routing)`, e.g. the Unix
 * socket listener), so both listeners answer alike: unparsable HTTP
 * (`clientError` → 400/408/431) and an unmet `Expect` (417). The app's own
 * TCP server has them already.
 */
export function attachAdminServerHandlers(server: Server): void {
  server.on('clientError', writeClientError);
  server.on('checkExpectation', writeExpectationFailed);
}
