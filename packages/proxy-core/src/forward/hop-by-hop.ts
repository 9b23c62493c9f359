import type { IncomingHttpHeaders } from 'node:http';

/** Headers that describe one connection, never forwarded (RFC 9110 §7.6.1, plus `proxy-connection`). */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/** Whether a lowercase header name is hop-by-hop. */
export function isHopByHop(name: string): boolean {
  return HOP_BY_HOP.has(name);
}

/**
 * Deletes the hop-by-hop headers of `headers` in place, including every
 * header that its `Connection` header names. Returns `headers`.
 */
export function stripHopByHop<T extends IncomingHttpHeaders>(headers: T): T {
  const connection = headers.connection;
  if (connection !== undefined) {
    for (const token of connection.split(',')) {
      const name = token.trim().toLowerCase();
      if (name.length > 0) delete headers[name];
    }
  }
  // One pass over the (few) present names instead of nine lookups.
  for (const name in headers) {
    switch (name) {
      case 'connection':
      case 'keep-alive':
      case 'proxy-connection':
      case 'proxy-authenticate':
      case 'proxy-authorization':
      case 'te':
      case 'trailer':
      case 'transfer-encoding':
      case 'upgrade':
        delete headers[name];
    }
  }
  return headers;
}
