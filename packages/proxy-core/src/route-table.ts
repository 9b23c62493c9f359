import type { RouteSpec } from './model/index.js';

/**
 * An immutable host → route map. Exact hosts match in O(1); `*.example.com`
 * matches exactly one label; exact beats wildcard; case and port are ignored.
 */
export class RouteTable {
  readonly version: number;
  readonly routes: readonly RouteSpec[];
  readonly #exact = new Map<string, RouteSpec>();
  readonly #wildcard = new Map<string, RouteSpec>();

  constructor(routes: readonly RouteSpec[], version = 0) {
    this.version = version;
    this.routes = Object.freeze([...routes]);
    for (const route of routes) {
      if (route.domain.startsWith('*.')) this.#wildcard.set(route.domain.slice(2), route);
      else this.#exact.set(route.domain, route);
    }
  }

  /** The route for a Host header value, or undefined. */
  match(hostHeader: string | undefined): RouteSpec | undefined {
    if (!hostHeader) return undefined;
    const host = stripPort(hostHeader).toLowerCase();
    const exact = this.#exact.get(host);
    if (exact) return exact;
    const dot = host.indexOf('.');
    return dot > 0 ? this.#wildcard.get(host.slice(dot + 1)) : undefined;
  }
}

function stripPort(host: string): string {
  if (host.startsWith('[')) {
    const end = host.indexOf(']');
    return end > 0 ? host.slice(1, end) : host;
  }
  const colon = host.indexOf(':');
  return colon >= 0 ? host.slice(0, colon) : host;
}
