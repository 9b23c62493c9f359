import type { IncomingHttpHeaders } from 'node:http';

/**
 * Names (lowercase) of the headers that describe one connection and are
 * never forwarded (RFC 9110 §7.6.1, plus `proxy-connection`).
 */
export const HOP_BY_HOP_NAMES: readonly string[] = [
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
];

const HOP_BY_HOP: ReadonlySet<string> = new Set(HOP_BY_HOP_NAMES);

const SIMPLE_CONNECTION = new Set(['keep-alive', 'close', 'upgrade']);

/** Whether a lowercase header name is hop-by-hop. */
export function isHopByHop(name: string): boolean {
  return HOP_BY_HOP.has(name);
}

/**
 * Deletes the hop-by-hop headers of `headers` in place, including every
 * header that its `Connection` header names. `rawHeaders` (the message's
 * `[name, value, …]` list) is scanned instead of the header object: an array
 * of strings with a length check per name is cheaper than a for-in over an
 * object in dictionary mode. Returns `headers`.
 */
export function stripHopByHop<T extends IncomingHttpHeaders>(headers: T, rawHeaders?: readonly string[]): T {
  const connection = headers.connection;
  // `keep-alive`, `close` and `upgrade` name only hop-by-hop headers: skip the token split.
  if (connection !== undefined && !SIMPLE_CONNECTION.has(connection.toLowerCase())) {
    for (const token of connection.split(',')) {
      const name = token.trim().toLowerCase();
      if (name.length > 0) delete headers[name];
    }
  }
  if (rawHeaders === undefined) {
    for (const name in headers) if (HOP_BY_HOP.has(name)) delete headers[name];
    return headers;
  }
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const raw = rawHeaders[i] as string;
    const n = raw.length;
    if (n !== 2 && n !== 7 && n !== 10 && (n < 16 || n > 19)) continue;
    const name = raw.toLowerCase();
    if (HOP_BY_HOP.has(name)) delete headers[name];
  }
  return headers;
}
