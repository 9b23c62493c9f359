import type { ReverseProxyHandler, RouteSnapshot, RouteSpec, Site } from '@proxyd/model';
import { changesFrom, isCatchAllDomain, isHttpsSite, stateOf } from '@proxyd/model/rules';
import type { CompiledSite } from './pipeline.js';

/** Compiles a Site into its request handler (once per Site object). */
export type SiteCompiler = (site: Site) => CompiledSite;

/** One entry of a {@link RouteTable}: the route plus what the data plane precomputed for it. */
export interface Route extends RouteSpec {
  /** The site's compiled handler; null when the table was built without a compiler. */
  readonly compiled: CompiledSite | null;
  /**
   * Whether the domain names an HTTPS site: the address that produced this
   * domain has no `http://` scheme and the site's `tls` is not `off`
   * (the model's `isHttpsSite`). Whether a request is redirected is `wantsHttps` (redirect.ts).
   */
  readonly httpsSite: boolean;
  /**
   * The site port the route is served on only (its address names a port
   * other than http_port and https_port; 0: served nowhere, see
   * `sitePortsOf`); null when it is served on the main listeners.
   */
  readonly sitePort: number | null;
}

/** What {@link RouteTable.update} changed in the compiled sites. */
export interface TableChange {
  /** Sites compiled by this update (new Site objects). */
  readonly fresh: readonly Site[];
  /** Site objects no route uses any more. */
  readonly droppedSites: readonly Site[];
  /** Their compiled sites (to close). */
  readonly dropped: readonly CompiledSite[];
}

interface SiteEntry {
  readonly compiled: CompiledSite | null;
  /** Routes of the table using this Site object. */
  refs: number;
  /** The compiled site this Site object shares with its look-alikes ({@link sharesCompiled}); null: its own. */
  readonly shared: SharedCompile | null;
}

/** One compiled site used by several Site objects that differ only in `addresses` (API routes). */
interface SharedCompile {
  /** The Site object it was compiled for (the others equal it but for `addresses`). */
  readonly site: Site;
  readonly compiled: CompiledSite | null;
  /** Site objects of the table using it. */
  sites: number;
}

interface Changes {
  fresh: Site[];
  droppedSites: Site[];
  dropped: CompiledSite[];
}

/** Key of the catch-all served on the main listeners in {@link RouteTable}'s fallbacks. */
const MAIN = -1;

/**
 * The host → route map of the data plane. Exact hosts match in O(1);
 * `*.example.com` matches exactly one label; exact beats wildcard; case and
 * port are ignored. Catch-all routes (domain `*` or `*:<port>`, a Proxyfile's
 * `:8080 {`) never match a host: {@link fallback} gives the one of a
 * listener, for a request no named route on that listener serves. Sites are compiled once per Site object and kept while
 * a route uses the object. {@link update} changes the table in place: with
 * a snapshot's `changes` (the model's `RouteChanges`) in O(changed routes), else by
 * comparing every route (O(n)); a request already matched keeps its
 * {@link Route}, so it finishes on the route it started with.
 */
export class RouteTable {
  #version: number;
  /** The {@link stateOf} the table served: the next changes apply to it. */
  #state: object;
  readonly #exact = new Map<string, Route>();
  readonly #wildcard = new Map<string, Route>();
  /** Catch-all routes by domain (`*`, `*:8080`). */
  readonly #catchAll = new Map<string, Route>();
  /** The catch-all of each site port ({@link MAIN}: the main listeners); the last put wins. */
  readonly #fallbacks = new Map<number, Route>();
  readonly #sites = new Map<Site, SiteEntry>();
  /** Compiled sites shared by look-alike Site objects, by their reverse-proxy handler. */
  readonly #shared = new Map<ReverseProxyHandler, SharedCompile[]>();
  #compiledCount = 0;
  /** Reverse-proxy handlers of the table's sites (a handler object shared by sites counts once per site). */
  readonly #handlers = new Set<ReverseProxyHandler>();
  readonly #handlerRefs = new Map<ReverseProxyHandler, number>();
  readonly #compile: SiteCompiler | undefined;
  #pinned = 0;

  /**
   * @param routes one route per lowercase domain (the first changes apply to this array)
   * @param version the store's version (0 by default)
   * @param compile builds each distinct Site's handler; absent: `compiled` is null
   * @param sitePorts lowercase domain → the site port it is pinned to (default none)
   */
  constructor(
    routes: readonly RouteSpec[],
    version = 0,
    compile?: SiteCompiler,
    sitePorts?: ReadonlyMap<string, number>,
  ) {
    this.#compile = compile;
    this.#version = version;
    this.#state = routes;
    const changes: Changes = { fresh: [], droppedSites: [], dropped: [] };
    for (const spec of routes) this.#put(spec, sitePorts, changes);
  }

  /** The version of the routes served (the store's). */
  get version(): number {
    return this.#version;
  }

  /** How many routes are pinned to a site port. */
  get pinnedCount(): number {
    return this.#pinned;
  }

  /** How many domains the table holds. */
  get size(): number {
    return this.#exact.size + this.#wildcard.size + this.#catchAll.size;
  }

  /** Whether any catch-all route is in the table (else {@link fallback} is always undefined). */
  get hasFallbacks(): boolean {
    return this.#fallbacks.size > 0;
  }

  /**
   * The catch-all route of a listener: the one pinned to `localPort` for a
   * site port, the unpinned one for a main listener (`main`); undefined when
   * there is none. Catch-alls are plain HTTP: the front door asks only for
   * plain-HTTP requests.
   */
  fallback(localPort: number | undefined, main: boolean): Route | undefined {
    return this.#fallbacks.get(main ? MAIN : (localPort ?? 0));
  }

  /**
   * Serves the snapshot's routes from now on, in place. With `changes` whose
   * base is the table served now (the model's `changesFrom`): only the
   * changed domains are touched, O(changes), and `snapshot.routes` is not
   * read. Without: every route is compared with the
   * table (same domain, Site object, origin, source and pin: kept), O(n).
   * `sitePorts` gives the pin of every route (lowercase domain → port); with
   * `changes`, the pins of unchanged routes must not have changed. Returns
   * the sites compiled and dropped; the caller closes the dropped ones.
   */
  update(snapshot: RouteSnapshot, sitePorts?: ReadonlyMap<string, number>): TableChange {
    const out: Changes = { fresh: [], droppedSites: [], dropped: [] };
    const changes = changesFrom(this.#state, snapshot);
    if (changes !== null) {
      for (const domain of changes.removed) this.#delete(domain, out);
      for (const spec of changes.upserted) this.#put(spec, sitePorts, out);
    } else {
      const domains = new Set<string>();
      for (const spec of snapshot.routes) domains.add(this.#put(spec, sitePorts, out));
      if (domains.size < this.size) {
        const gone: string[] = [];
        for (const domain of this.#exact.keys()) if (!domains.has(domain)) gone.push(domain);
        for (const route of this.#wildcard.values()) if (!domains.has(route.domain)) gone.push(route.domain);
        for (const domain of this.#catchAll.keys()) if (!domains.has(domain)) gone.push(domain);
        for (const domain of gone) this.#delete(domain, out);
      }
    }
    this.#state = stateOf(snapshot);
    this.#version = snapshot.version;
    return out;
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

  /** The route of a lowercase domain (`*.example.com` for a wildcard route, `*:8080` for a catch-all), or undefined. */
  get(domain: string): Route | undefined {
    if (domain.charCodeAt(0) !== 42 /* * */) return this.#exact.get(domain);
    return domain.startsWith('*.') ? this.#wildcard.get(domain.slice(2)) : this.#catchAll.get(domain);
  }

  /** The distinct compiled sites of this table. */
  *compiledSites(): IterableIterator<CompiledSite> {
    for (const entry of this.#sites.values())
      if (entry.shared === null && entry.compiled !== null) yield entry.compiled;
    for (const list of this.#shared.values()) for (const s of list) if (s.compiled !== null) yield s.compiled;
  }

  /** How many compiled sites the table holds (a site compiled once for look-alike Site objects counts once). */
  get compiledCount(): number {
    return this.#compiledCount;
  }

  /** The distinct Site objects of this table. */
  sites(): IterableIterator<Site> {
    return this.#sites.keys();
  }

  /** The reverse-proxy handlers of this table's sites (the site's own and its `handle` blocks'). */
  handlers(): ReadonlySet<ReverseProxyHandler> {
    return this.#handlers;
  }

  /** Adds or replaces the route of `spec`'s domain; returns the lowercase domain. */
  #put(spec: RouteSpec, sitePorts: ReadonlyMap<string, number> | undefined, out: Changes): string {
    const domain = spec.domain.toLowerCase();
    const sitePort = sitePorts?.get(domain) ?? null;
    const old = this.get(domain);
    if (
      old !== undefined &&
      old.site === spec.site &&
      old.origin === spec.origin &&
      old.source === spec.source &&
      old.sitePort === sitePort
    ) {
      return domain;
    }
    // Acquire before release: a route replaced with the same Site object keeps its compiled site.
    const compiled = this.#acquire(spec.site, out);
    const route: Route = {
      domain,
      origin: spec.origin,
      source: spec.source,
      site: spec.site,
      compiled,
      httpsSite: isHttpsSite(spec.site, domain),
      sitePort,
    };
    if (isCatchAllDomain(domain)) {
      this.#catchAll.set(domain, route);
      if (old !== undefined) this.#unsetFallback(old);
      this.#fallbacks.set(sitePort ?? MAIN, route);
    } else if (domain.startsWith('*.')) this.#wildcard.set(domain.slice(2), route);
    else this.#exact.set(domain, route);
    if (sitePort !== null) this.#pinned++;
    if (old !== undefined) this.#release(old, out);
    return domain;
  }

  #delete(domain: string, out: Changes): void {
    const old = this.get(domain);
    if (old === undefined) return;
    if (isCatchAllDomain(domain)) {
      this.#catchAll.delete(domain);
      this.#unsetFallback(old);
    } else if (domain.startsWith('*.')) this.#wildcard.delete(domain.slice(2));
    else this.#exact.delete(domain);
    this.#release(old, out);
  }

  /** Takes a catch-all out of its listener's slot; another catch-all of that listener, if any, takes it. */
  #unsetFallback(route: Route): void {
    const key = route.sitePort ?? MAIN;
    if (this.#fallbacks.get(key) !== route) return;
    this.#fallbacks.delete(key);
    for (const other of this.#catchAll.values()) {
      if (other !== route && (other.sitePort ?? MAIN) === key) this.#fallbacks.set(key, other);
    }
  }

  #acquire(site: Site, out: Changes): CompiledSite | null {
    const entry = this.#sites.get(site);
    if (entry !== undefined) {
      entry.refs++;
      return entry.compiled;
    }
    const shared = this.#sharedFor(site);
    const compiled = shared === null ? this.#compileOne(site) : shared.compiled;
    this.#sites.set(site, { compiled, refs: 1, shared });
    for (const handler of proxyHandlers(site)) {
      const refs = this.#handlerRefs.get(handler) ?? 0;
      this.#handlerRefs.set(handler, refs + 1);
      if (refs === 0) this.#handlers.add(handler);
    }
    if (this.#compile !== undefined) out.fresh.push(site);
    return compiled;
  }

  /** Lets go of a route that left the table: its site, when no other route uses it. */
  #release(route: Route, out: Changes): void {
    if (route.sitePort !== null) this.#pinned--;
    const entry = this.#sites.get(route.site);
    if (entry === undefined || --entry.refs > 0) return;
    this.#sites.delete(route.site);
    for (const handler of proxyHandlers(route.site)) {
      const refs = (this.#handlerRefs.get(handler) ?? 1) - 1;
      if (refs > 0) {
        this.#handlerRefs.set(handler, refs);
      } else {
        this.#handlerRefs.delete(handler);
        this.#handlers.delete(handler);
      }
    }
    out.droppedSites.push(route.site);
    const { shared } = entry;
    if (shared !== null && --shared.sites > 0) return;
    if (shared !== null) this.#unshare(shared);
    if (entry.compiled !== null) {
      this.#compiledCount--;
      out.dropped.push(entry.compiled);
    }
  }

  #compileOne(site: Site): CompiledSite | null {
    if (this.#compile === undefined) return null;
    this.#compiledCount++;
    return this.#compile(site);
  }

  /**
   * The compiled site `site` shares with a look-alike (compiled now when it
   * is the first), or null when it compiles its own: an API route's site is
   * a shallow copy of one template per (upstream, tls), so 100,000 routes
   * to one upstream are one compiled pipeline, not 100,000 (issue 30).
   */
  #sharedFor(site: Site): SharedCompile | null {
    if (!sharesCompiled(site)) return null;
    const handler = site.handler as ReverseProxyHandler;
    let list = this.#shared.get(handler);
    for (const candidate of list ?? []) {
      if (sameButAddresses(candidate.site, site)) {
        candidate.sites++;
        return candidate;
      }
    }
    const shared: SharedCompile = { site, compiled: this.#compileOne(site), sites: 1 };
    if (list === undefined) {
      list = [];
      this.#shared.set(handler, list);
    }
    list.push(shared);
    return shared;
  }

  #unshare(shared: SharedCompile): void {
    const handler = shared.site.handler as ReverseProxyHandler;
    const list = this.#shared.get(handler);
    if (list === undefined) return;
    const rest = list.filter((s) => s !== shared);
    if (rest.length === 0) this.#shared.delete(handler);
    else this.#shared.set(handler, rest);
  }
}

/**
 * Whether a site may share its compiled pipeline with Site objects equal to
 * it but for `addresses`: it proxies (the handler object is the key), and it
 * keeps no per-site state a domain could see in another's (a `cache`, the
 * `rate_limit` counters: a Proxyfile block's domains share those, two API
 * routes must not).
 */
function sharesCompiled(site: Site): boolean {
  return site.handler?.kind === 'reverse_proxy' && site.cache === null && site.rate_limit === null;
}

/** Whether two sites hold the same objects in every field but `addresses` (shallow copies of one template). */
function sameButAddresses(a: Site, b: Site): boolean {
  const keys = Object.keys(a) as (keyof Site)[];
  if (keys.length !== Object.keys(b).length) return false;
  for (const key of keys) if (key !== 'addresses' && a[key] !== b[key]) return false;
  return true;
}

/** The reverse-proxy handlers of a site: its own and its `handle` blocks', `reverse_proxy @name …` included. */
export function proxyHandlers(site: Site): ReverseProxyHandler[] {
  const handlers: ReverseProxyHandler[] = [];
  for (const block of [site, ...site.handles]) {
    if (block.handler?.kind === 'reverse_proxy') handlers.push(block.handler);
    if (block.matched_proxies !== undefined) for (const p of block.matched_proxies) handlers.push(p.handler);
  }
  return handlers;
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
