import type { RouteSpec, Site } from './model/index.js';
import type { CompiledSite } from './pipeline.js';
import { isHttpsSite } from './redirect.js';

/** Compiles a Site into its request handler (once per Site object). */
export type SiteCompiler = (site: Site) => CompiledSite;

/** One entry of a {@link RouteTable}: the route plus what the data plane precomputed for it. */
export interface Route extends RouteSpec {
  /** The site's compiled handler; null when the table was built without a compiler. */
  readonly compiled: CompiledSite | null;
  /**
   * Whether the domain names an HTTPS site: the address that produced this
   * domain has no `http://` scheme and the site's `tls` is not `off`
   * (`isHttpsSite`). Whether a request is redirected is `wantsHttps` (redirect.ts).
   */
  readonly httpsSite: boolean;
  /**
   * The site port the route is served on only (its address names a port
   * other than http_port and https_port; 0: served nowhere, see
   * `sitePortsOf`); null when it is served on the main listeners.
   */
  readonly sitePort: number | null;
}

/**
 * An immutable host → route map. Exact hosts match in O(1); `*.example.com`
 * matches exactly one label; exact beats wildcard; case and port are ignored.
 * Sites are compiled once per Site object, and a table built with `previous`
 * reuses the previous table's compiled sites for the Site objects they share.
 */
export class RouteTable {
  readonly version: number;
  readonly routes: readonly RouteSpec[];
  readonly #exact = new Map<string, Route>();
  readonly #wildcard = new Map<string, Route>();
  /** How many routes are pinned to a site port. */
  readonly pinnedCount: number;
  readonly #compiled = new Map<Site, CompiledSite>();
  readonly #compiledSet = new Set<CompiledSite>();
  /** Sites compiled for this table (not reused from `previous`). */
  readonly #fresh: Site[] = [];

  /**
   * @param routes one route per lowercase domain
   * @param version the store's version (0 by default)
   * @param compile builds each distinct Site's handler; absent: `compiled` is null
   * @param previous the table being replaced, whose compiled sites are reused
   * @param sitePorts lowercase domain → the site port it is pinned to (default none)
   */
  constructor(
    routes: readonly RouteSpec[],
    version = 0,
    compile?: SiteCompiler,
    previous?: RouteTable,
    sitePorts?: ReadonlyMap<string, number>,
  ) {
    this.version = version;
    this.routes = Object.freeze([...routes]);
    const reuse = previous === undefined ? undefined : previous.#compiled;
    let pinned = 0;
    for (const spec of routes) {
      let compiled: CompiledSite | null = null;
      if (compile !== undefined) {
        compiled = this.#compiled.get(spec.site) ?? null;
        if (compiled === null) {
          compiled = reuse?.get(spec.site) ?? null;
          if (compiled === null) {
            compiled = compile(spec.site);
            this.#fresh.push(spec.site);
          }
          this.#compiled.set(spec.site, compiled);
          this.#compiledSet.add(compiled);
        }
      }
      const domain = spec.domain.toLowerCase();
      const sitePort = sitePorts?.get(domain) ?? null;
      if (sitePort !== null) pinned++;
      const route: Route = { ...spec, domain, compiled, httpsSite: isHttpsSite(spec.site, domain), sitePort };
      if (domain.startsWith('*.')) this.#wildcard.set(domain.slice(2), route);
      else this.#exact.set(domain, route);
    }
    this.pinnedCount = pinned;
  }

  /** The route for a Host header value (any case, port ignored), or undefined. */
  match(hostHeader: string | undefined): Route | undefined {
    return hostHeader === undefined ? undefined : this.matchHost(normalizeHost(hostHeader));
  }

  /** The route for a host already normalised by {@link normalizeHost}. */
  matchHost(host: string): Route | undefined {
    const exact = this.#exact.get(host);
    if (exact !== undefined) return exact;
    const dot = host.indexOf('.');
    return dot > 0 && this.#wildcard.size > 0 ? this.#wildcard.get(host.slice(dot + 1)) : undefined;
  }

  /** The distinct compiled sites of this table. */
  compiledSites(): IterableIterator<CompiledSite> {
    return this.#compiled.values();
  }

  /** The distinct Site objects of this table. */
  sites(): IterableIterator<Site> {
    return this.#compiled.size > 0 ? this.#compiled.keys() : new Set(this.routes.map((r) => r.site)).values();
  }

  /** Whether this table holds `compiled` (to close the compiled sites a swap dropped); O(1). */
  holds(compiled: CompiledSite): boolean {
    return this.#compiledSet.has(compiled);
  }

  /** The Site objects compiled for this table rather than reused from the table it replaced. */
  freshSites(): readonly Site[] {
    return this.#fresh;
  }
}

/** A Host header value lowercased, without port, IPv6 brackets removed. */
export function normalizeHost(hostHeader: string): string {
  let host = hostHeader;
  if (host.charCodeAt(0) === 91 /* [ */) {
    const end = host.indexOf(']');
    host = end > 0 ? host.slice(1, end) : host;
  } else {
    const colon = host.indexOf(':');
    if (colon >= 0) host = host.slice(0, colon);
  }
  if (host.endsWith('.')) host = host.slice(0, -1);
  return hasUpper(host) ? host.toLowerCase() : host;
}

function hasUpper(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 65 && c <= 90) return true;
  }
  return false;
}
