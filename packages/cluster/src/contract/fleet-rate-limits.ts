import type { Limiter } from './rate-limits.js';

/**
 * Where the daemons of a fleet add up their `rate_limit` windows (the
 * daemon implements it over Redis). One call carries one sync's counts.
 */
export interface RateWindowExchange {
  /**
   * Adds each `delta` to the fleet's count of `field` in the 1-second
   * window `window` (epoch seconds) and returns the fleet's counts after,
   * in order. Rejects while the exchange is unreachable.
   */
  add(window: readonly number[], field: readonly string[], delta: readonly number[]): Promise<number[]>;
}

/** Options of {@link FleetRateLimits}. */
export interface FleetRateLimitsOptions {
  /** A client address → its key (proxy-core's `rateLimitKey`: IPv4 as is, IPv6 by its /64). */
  keyOf(ip: string): string;
  /** The wall clock, ms (default `Date.now`): windows are epoch seconds, the same on every node. */
  now?: () => number;
  /** How often this node's counts go out and the fleet's come back, ms (default {@link FLEET_RATE_SYNC_MS}). */
  syncMs?: number;
  /** Clients tracked per limit and domain at most (default 100,000); further ones share one count. */
  maxKeys?: number;
  /** A failed sync (the limits go on with the counts known, then this node's alone). */
  onError?(error: Error): void;
}

/** Default sync period, ms: the fleet's counts a node sees are at most this (plus a round trip) old. */
export const FLEET_RATE_SYNC_MS = 100;
const WINDOW_MS = 1000;

/** One client of one domain under one limit. */
interface Entry {
  /** `<limit> <domain> <key>`: the field in the exchange, made once. */
  readonly field: string;
  window: number;
  /** Admitted here in the current window, and how many of those the exchange has. */
  cur: number;
  sent: number;
  /** The other nodes' admissions in the current window, as last synced. */
  remote: number;
  /** The same three of the previous window. */
  prev: number;
  prevSent: number;
  prevRemote: number;
  /** Whether the previous window's counts were synced after it ended. */
  prevFinal: boolean;
  /** Whether it is in the next sync. */
  touched: boolean;
}

/**
 * `rate_limit` counted across a fleet (`storage redis { rate_limit_scope
 * fleet }`): the spec's sliding-window estimator over 1-second windows,
 * `previous × (1 − elapsed/1000) + current + 1 ≤ n`, where each window's
 * count is this node's admissions plus the other nodes' as last synced.
 *
 * The request path stays in memory: `admit` is O(1) and never waits for
 * the network. Every {@link FLEET_RATE_SYNC_MS} the clients seen since the
 * last sync go out in one call: this node's new admissions per window
 * (`HINCRBY` in Redis) and the fleet's counts back. So a node sees the
 * others' admissions at most one sync period plus a round trip late, and a
 * client spread over `k` nodes at rate `r` can pass at most about
 * `(k − 1) × r × 0.1 s` more than `n` in a second (bounded staleness, never
 * unbounded). A window's last 100 ms are synced once more after it ends, so
 * the sliding estimate's "previous" is the fleet's whole count. Windows are
 * epoch seconds on every node: nodes' clocks must agree (NTP) to well under
 * a second. The exchange away: the counts known age out with their
 * windows, and each node limits on its own counts (as with `node` scope).
 */
export class FleetRateLimits {
  readonly #exchange: RateWindowExchange;
  readonly #keyOf: (ip: string) => string;
  readonly #now: () => number;
  readonly #syncMs: number;
  readonly #maxKeys: number;
  readonly #onError: (error: Error) => void;
  readonly #limiters = new Map<number, Limiter>();
  /** limit → domain → key → entry. */
  readonly #entries = new Map<number, Map<string, Map<string, Entry>>>();
  #touched: Entry[] = [];
  #syncing = false;
  #timer: NodeJS.Timeout | undefined;
  #swept = 0;

  constructor(exchange: RateWindowExchange, options: FleetRateLimitsOptions) {
    this.#exchange = exchange;
    this.#keyOf = options.keyOf;
    this.#now = options.now ?? Date.now;
    this.#syncMs = options.syncMs ?? FLEET_RATE_SYNC_MS;
    this.#maxKeys = options.maxKeys ?? 100_000;
    this.#onError = options.onError ?? (() => {});
  }

  /** The limiter of `rate_limit <limit>/s` (one per limit value, shared by every site with it). */
  limiter(limit: number): Limiter {
    let limiter = this.#limiters.get(limit);
    if (limiter === undefined) {
      const domains = new Map<string, Map<string, Entry>>();
      this.#entries.set(limit, domains);
      limiter = { admit: (domain, ip) => this.#admit(limit, domains, domain, ip) };
      this.#limiters.set(limit, limiter);
    }
    return limiter;
  }

  /** Starts syncing every `syncMs`. */
  start(): void {
    if (this.#timer !== undefined) return;
    this.#timer = setInterval(() => void this.sync(), this.#syncMs);
    this.#timer.unref();
  }

  /** Stops syncing. */
  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #admit(limit: number, domains: Map<string, Map<string, Entry>>, domain: string, ip: string): boolean {
    const now = this.#now();
    const window = Math.floor(now / WINDOW_MS);
    let clients = domains.get(domain);
    if (clients === undefined) {
      clients = new Map();
      domains.set(domain, clients);
    }
    const client = this.#keyOf(ip);
    const key = clients.size >= this.#maxKeys && !clients.has(client) ? '(overflow)' : client;
    let e = clients.get(key);
    if (e === undefined) {
      e = {
        field: `${limit} ${domain} ${key}`,
        window,
        cur: 0,
        sent: 0,
        remote: 0,
        prev: 0,
        prevSent: 0,
        prevRemote: 0,
        prevFinal: true,
        touched: false,
      };
      clients.set(key, e);
    } else if (e.window !== window) roll(e, window);
    if (!e.touched) {
      e.touched = true;
      this.#touched.push(e);
    }
    // previous × (1 − elapsed/1000) + current + 1 ≤ limit, scaled by 1000 to stay in integers.
    const remaining = WINDOW_MS - (Math.floor(now) - window * WINDOW_MS);
    if ((e.prev + e.prevRemote) * remaining + (e.cur + e.remote + 1) * WINDOW_MS > limit * WINDOW_MS) return false;
    e.cur++;
    return true;
  }

  /**
   * One sync: the clients seen since the last one, this node's new
   * admissions out and the fleet's counts in (a call in flight: nothing).
   * Resolves when done; a failure goes to `onError` and the deltas go out
   * with the next sync.
   */
  async sync(): Promise<void> {
    if (this.#syncing) return;
    const window = Math.floor(this.#now() / WINDOW_MS);
    this.#sweep(window);
    if (this.#touched.length === 0) return;
    const batch = this.#touched;
    this.#touched = [];
    const windows: number[] = [];
    const fields: string[] = [];
    const deltas: number[] = [];
    /** Per row: the entry, whether it is the previous window, the local count it reported. */
    const rows: Array<[Entry, boolean, number]> = [];
    for (const e of batch) {
      e.touched = false;
      if (e.window !== window) roll(e, window);
      if (!e.prevFinal) {
        windows.push(window - 1);
        fields.push(e.field);
        deltas.push(e.prev - e.prevSent);
        rows.push([e, true, e.prev]);
      }
      windows.push(window);
      fields.push(e.field);
      deltas.push(e.cur - e.sent);
      rows.push([e, false, e.cur]);
    }
    this.#syncing = true;
    try {
      const totals = await this.#exchange.add(windows, fields, deltas);
      for (let i = 0; i < rows.length; i++) {
        const [e, previous, local] = rows[i] as [Entry, boolean, number];
        const total = totals[i] ?? 0;
        const w = windows[i] as number;
        // The entry may have rolled on while the call was out.
        if (e.window === w) {
          if (previous) continue;
          e.sent = local;
          e.remote = Math.max(0, total - local);
        } else if (e.window === w + 1) {
          e.prevSent = local;
          e.prevRemote = Math.max(0, total - local);
          e.prevFinal = true;
        }
      }
    } catch (err) {
      // The deltas go out with the next sync: the entries are seen again.
      for (const e of batch) {
        if (!e.touched && (e.cur > e.sent || !e.prevFinal)) {
          e.touched = true;
          this.#touched.push(e);
        }
      }
      this.#onError(err as Error);
    } finally {
      this.#syncing = false;
    }
  }

  /** Clients tracked (for tests and metrics). */
  size(): number {
    let n = 0;
    for (const domains of this.#entries.values()) for (const clients of domains.values()) n += clients.size;
    return n;
  }

  /** Once a second: forgets the clients idle for two windows (their estimate is 0 everywhere). */
  #sweep(window: number): void {
    if (window === this.#swept) return;
    this.#swept = window;
    for (const domains of this.#entries.values()) {
      for (const [domain, clients] of domains) {
        for (const [key, e] of clients) if (e.window < window - 1 && !e.touched) clients.delete(key);
        if (clients.size === 0) domains.delete(domain);
      }
    }
  }
}

/** Moves an entry on to `window`: the current counts become the previous (or both reset after a gap). */
function roll(e: Entry, window: number): void {
  if (e.window === window - 1) {
    e.prev = e.cur;
    e.prevSent = e.sent;
    e.prevRemote = e.remote;
    // Synced once more: what this node had not sent, and the other nodes' last admissions of that window.
    e.prevFinal = false;
  } else {
    e.prev = 0;
    e.prevSent = 0;
    e.prevRemote = 0;
    e.prevFinal = true;
  }
  e.cur = 0;
  e.sent = 0;
  e.remote = 0;
  e.window = window;
}
