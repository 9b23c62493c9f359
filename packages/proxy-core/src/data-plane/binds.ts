import type { RouteSpec } from '@proxyd/model';

/** The key of the main listeners (http_port and https_port) in {@link ListenerBinds}. */
export const MAIN_LISTENERS = -1;

/** The address of every IPv4 interface. */
const ANY_V4 = '0.0.0.0';
/** The address of every interface: Node's `::` listener is dual-stack (IPv4 arrives as `::ffff:a.b.c.d`). */
const ANY = '::';
const MAPPED_V4 = '::ffff:';

/**
 * Whether a connection that arrived at `localAddress` reaches a site bound
 * to `binds` (canonical addresses, see `parseBindAddress`): `::` takes
 * every address, `0.0.0.0` every IPv4 address (IPv4-mapped IPv6 included),
 * any other address only itself.
 */
export function answersOn(binds: readonly string[], localAddress: string | undefined): boolean {
  if (localAddress === undefined) return false;
  const local =
    localAddress.startsWith(MAPPED_V4) && localAddress.includes('.')
      ? localAddress.slice(MAPPED_V4.length)
      : localAddress;
  const v4 = !local.includes(':');
  for (const bind of binds) {
    if (bind === local || bind === ANY || (v4 && bind === ANY_V4)) return true;
  }
  return false;
}

/**
 * The addresses to listen on for a set of bind addresses, without overlap:
 * `::` covers everything, `0.0.0.0` every IPv4 address (a specific address
 * beside a wildcard of its family would not bind: `EADDRINUSE`). The
 * wildcard's listener still sees which address a connection arrived at, so
 * {@link answersOn} keeps each site to its own.
 */
export function listenAddresses(binds: Iterable<string>): string[] {
  const all = new Set(binds);
  if (all.has(ANY)) return [ANY];
  if (!all.has(ANY_V4)) return [...all];
  return [ANY_V4, ...[...all].filter((a) => a.includes(':'))];
}

/**
 * The local addresses each listener port is asked to bind, as routes come
 * and go: the main listeners bind `defaultBind` and every address a route
 * served there names (`bind`); a site port binds what its routes name (a
 * route without `bind`: `defaultBind`). It only grows, as listeners are not
 * closed before the data plane is; a route that left still has its
 * listener, where {@link answersOn} finds no site for it.
 */
export class ListenerBinds {
  readonly defaultBind: readonly string[];
  /** Port (or {@link MAIN_LISTENERS}) → the addresses asked for. */
  readonly #wanted = new Map<number, Set<string>>();
  /** Whether some route names its own `bind`: only then may a listener refuse a route. */
  #restricted = false;

  constructor(defaultBind: readonly string[]) {
    this.defaultBind = defaultBind;
    this.#wanted.set(MAIN_LISTENERS, new Set(defaultBind));
  }

  /** Whether some route seen so far names its own `bind`. */
  get restricted(): boolean {
    return this.#restricted;
  }

  /**
   * Takes the addresses `routes` ask for; `portOf(domain)` is the site port
   * a route is pinned to (null: the main listeners). Returns the ports
   * whose address set grew. O(routes given).
   */
  add(routes: Iterable<RouteSpec>, portOf: (domain: string) => number | null): Set<number> {
    const grew = new Set<number>();
    for (const route of routes) {
      const own = route.site.bind;
      if (own.length > 0) this.#restricted = true;
      const port = portOf(route.domain.toLowerCase()) ?? MAIN_LISTENERS;
      let wanted = this.#wanted.get(port);
      if (wanted === undefined) {
        wanted = new Set();
        this.#wanted.set(port, wanted);
      }
      for (const address of own.length > 0 ? own : this.defaultBind) {
        if (!wanted.has(address)) {
          wanted.add(address);
          grew.add(port);
        }
      }
    }
    return grew;
  }

  /** The addresses to listen on at `port` (or {@link MAIN_LISTENERS}). */
  addresses(port: number): string[] {
    return listenAddresses(this.#wanted.get(port) ?? this.defaultBind);
  }
}
