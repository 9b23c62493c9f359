import type { FastifyRequest } from 'fastify';
import type { Endpoint, OpenApiServer } from '../endpoint.js';
import { OpenApiDocumentSchema } from '../schemas.js';
import { isUnixConnection } from '../transport.js';

/**
 * The `servers` entry of the document `proxyd openapi` prints (and of one
 * served where the listener is unknown): the default TCP admin listener.
 */
export const DEFAULT_SERVER: OpenApiServer = {
  url: 'http://127.0.0.1:6190',
  description:
    'The default TCP admin listener (`--admin` or the Proxyfile moves it); GET /openapi.json names the listener it is fetched from',
};

// A Host header that names a host (name, IPv4 or [IPv6]) and an optional port, nothing else.
const HOST_HEADER = /^(?:[A-Za-z0-9._~-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

/**
 * The `servers` of the document served to `request`: the listener it came
 * through. Over the Unix socket, `http://localhost` (the spec's base URL
 * there) naming the socket path; over TCP, `http://` and the request's Host
 * header (what the client used), else the address the connection reached,
 * else {@link DEFAULT_SERVER}.
 */
export function serversFor(request: FastifyRequest): OpenApiServer[] {
  const socket = request.raw.socket;
  if (isUnixConnection(socket)) {
    const path = String((socket as unknown as { server: { address(): unknown } }).server.address());
    return [
      {
        url: 'http://localhost',
        description: `The Unix socket admin listener at ${path} (no token needed): curl --unix-socket ${path} http://localhost/routes`,
      },
    ];
  }
  const host = request.headers.host;
  if (host !== undefined && HOST_HEADER.test(host)) {
    return [{ url: `http://${host}`, description: 'The TCP admin listener this document was fetched from' }];
  }
  const address = socket?.localAddress;
  const port = socket?.localPort;
  if (address !== undefined && port !== undefined) {
    const shown = address.includes(':') ? `[${address}]` : address;
    return [{ url: `http://${shown}:${port}`, description: 'The TCP admin listener this document was fetched from' }];
  }
  return [DEFAULT_SERVER];
}

/** `GET /openapi.json`: the OpenAPI 3.1 document, behind auth, its `servers` the listener it is fetched from. */
export const getOpenApi: Endpoint = {
  method: 'GET',
  path: '/openapi.json',
  url: '/openapi.json',
  tag: 'openapi',
  operationId: 'getOpenApi',
  summary: 'OpenAPI document',
  description:
    'The OpenAPI 3.1 document of this API: the same as `proxyd openapi` prints, except `servers`, which names the listener it is fetched from (the Host header sent over TCP; http://localhost and the socket path over the Unix socket).',
  auth: true,
  responses: { 200: { description: 'The document', schema: OpenApiDocumentSchema } },
  handler: (ctx) => async (request) => ctx.openApiDocument(serversFor(request)),
};
