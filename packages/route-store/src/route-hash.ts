import { createHash } from 'node:crypto';

/** One route of a desired set, as a controller sends it. */
export interface DesiredRoute {
  domain: string;
  upstream: string;
  tls: boolean;
}

/**
 * The snapshot `route_hash` (see route-store's README, "route_hash"):
 * lowercase hex SHA-256 of the UTF-8 text
 * `source + "\n"` followed by one line `domain + " " + upstream + " " + tls + "\n"`
 * per route, sorted by domain (code-unit order), where `domain` is lowercase,
 * `upstream` is the canonical `host:port` (lowercase host, IPv6 in brackets,
 * decimal port without leading zeros) and `tls` is `true` or `false`.
 * The same source and set in any order give the same hash.
 */
export function routeHash(source: string, routes: readonly DesiredRoute[]): string {
  const sorted = [...routes].sort((a, b) => (a.domain < b.domain ? -1 : a.domain > b.domain ? 1 : 0));
  const hash = createHash('sha256');
  hash.update(`${source}\n`, 'utf8');
  for (const r of sorted) hash.update(`${r.domain} ${r.upstream} ${r.tls ? 'true' : 'false'}\n`, 'utf8');
  return hash.digest('hex');
}
