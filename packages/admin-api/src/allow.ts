import type { AdminMethod, Endpoint } from './endpoint.js';

/** Finds the methods a path accepts, from the endpoint table (for 405 and `Allow`). */
export interface AllowTable {
  /** The accepted methods for a request path (no query string), sorted; empty for an unknown path. */
  methodsFor(path: string): readonly AdminMethod[];
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
 * and DELETE through `/routes/:domain`).
 */
export function createAllowTable(endpoints: readonly Endpoint[]): AllowTable {
  const entries = endpoints.map((e) => ({ re: pattern(e.url), method: e.method }));
  return {
    methodsFor: (path) => [...new Set(entries.filter((e) => e.re.test(path)).map((e) => e.method))].sort(),
  };
}
