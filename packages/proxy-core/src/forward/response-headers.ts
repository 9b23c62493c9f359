import type { IncomingHttpHeaders } from 'node:http';
import { noteKeepAliveHint } from './agents.js';
import { HOP_BY_HOP_NAMES } from './hop-by-hop.js';

/** Response header names an upstream commonly sends, by lowercase name. */
const COMMON = [
  'accept-ranges',
  'access-control-allow-origin',
  'age',
  'alt-svc',
  'cache-control',
  'connection',
  'content-disposition',
  'content-encoding',
  'content-language',
  'content-length',
  'content-location',
  'content-security-policy',
  'content-type',
  'date',
  'etag',
  'expires',
  'keep-alive',
  'last-modified',
  'link',
  'location',
  'pragma',
  'referrer-policy',
  'retry-after',
  'server',
  'set-cookie',
  'strict-transport-security',
  'transfer-encoding',
  'vary',
  'via',
  'www-authenticate',
  'x-content-type-options',
  'x-frame-options',
  'x-powered-by',
  'x-xss-protection',
];

/**
 * Spelling → lowercase name, for the spellings servers use (lowercase,
 * `Capitalized-Words`, and the odd ones): a known name costs a map lookup
 * instead of a new lowercase string.
 */
const KNOWN = new Map<string, string>();
for (const name of COMMON) {
  KNOWN.set(name, name);
  KNOWN.set(
    name.replace(/(^|-)([a-z])/g, (_m, dash: string, c: string) => dash + c.toUpperCase()),
    name,
  );
}
for (const [odd, name] of [
  ['ETag', 'etag'],
  ['WWW-Authenticate', 'www-authenticate'],
  ['X-XSS-Protection', 'x-xss-protection'],
] as const) {
  KNOWN.set(odd, name);
}

const HOP_BY_HOP = new Set(HOP_BY_HOP_NAMES);

/** Headers whose repeats are dropped (the first value wins), as Node's parser does. */
const SINGLETONS = new Set([
  'age',
  'content-length',
  'content-type',
  'etag',
  'expires',
  'last-modified',
  'location',
  'retry-after',
  'server',
]);

const SIMPLE_CONNECTION = new Set(['keep-alive', 'close', 'upgrade']);

/**
 * The upstream response's headers as they go to the client, built in one
 * pass over its raw header lines: names lowercase, hop-by-hop lines and the
 * headers its `Connection` names dropped, `set-cookie` an array, other
 * repeated lines joined with `, ` (a repeated singleton such as
 * `Content-Type` keeps its first value, as Node's parser does). Node's own
 * `res.headers` object is never built, and nothing is deleted from a
 * header object (which would turn it into a slow dictionary). A
 * `Keep-Alive` line is recorded on `socket` as the pooling hint.
 */
export function responseHeaders(raw: readonly string[], socket: object | null): IncomingHttpHeaders {
  const out: IncomingHttpHeaders = {};
  let named: string[] | null = null;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    const value = raw[i + 1] as string;
    const lower = KNOWN.get(name) ?? name.toLowerCase();
    if (HOP_BY_HOP.has(lower)) {
      if (lower === 'keep-alive') noteKeepAliveHint(socket, value);
      else if (lower === 'connection' && !SIMPLE_CONNECTION.has(value.toLowerCase())) {
        named ??= [];
        for (const token of value.split(',')) named.push(token.trim().toLowerCase());
      }
      continue;
    }
    const previous = out[lower];
    if (previous === undefined) {
      out[lower] = lower === 'set-cookie' ? [value] : value;
    } else if (lower === 'set-cookie') {
      (previous as string[]).push(value);
    } else if (!SINGLETONS.has(lower)) {
      out[lower] = `${previous as string}, ${value}`;
    }
  }
  if (named !== null) for (const name of named) delete out[name];
  return out;
}
