import type { AdminMethod, Endpoint } from './endpoint.js';

/** A method the app answers: an endpoint's, or `HEAD` wherever `GET` is (RFC 9110 §9.3.2). */
export type AllowedMethod = AdminMethod | 'HEAD';

/** Finds the methods a path accepts, from the endpoint table (for 405 and `Allow`). */
export interface AllowTable {
  /** The accepted methods for a request path (no query string), sorted; empty for an unknown path. */
  methodsFor(path: string): readonly AllowedMethod[];
}

/** Turns a Fastify URL (`/routes/:domain`, `/cache/*`) into a regular expression over the path. */
function pattern(url: string): RegExp {
  const source = url
    .split('/')
    .map((part) => (part === '*' ? '.*' : part.startsWith(':') ? '[^/]*' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/');
  return new RegExp(`^${source}$`);
}

/**
 * Builds the table: a path's methods are those of every endpoint whose URL
 * matches it, the way Fastify's router would (`/routes/snapshot` accepts PUT,
 * and DELETE through `/routes/:domain`). A path with `GET` also accepts
 * `HEAD`, which the app serves as GET without a body.
 */
export function createAllowTable(endpoints: readonly Endpoint[]): AllowTable {
  const entries: Array<{ re: RegExp; method: AllowedMethod }> = [];
  for (const e of endpoints) {
    const re = pattern(e.url);
    entries.push({ re, method: e.method });
    if (e.method === 'GET') entries.push({ re, method: 'HEAD' });
  }
  return {
    methodsFor: (path) => [...new Set(entries.filter((e) => e.re.test(path)).map((e) => e.method))].sort(),
  };
}
