import type { RequestRecord } from '@proxyd/proxy-core';
import { ANALYTICS_STATE_VERSION, type AnalyticsState } from './analytics-state.js';
import { DomainCollector, type VitalName } from './domain-collector.js';
import { hashString } from './hash.js';
import type { AnalyticsSnapshot } from './snapshot.js';

/** Domains tracked at most; requests for further domains are not counted. */
export const DEFAULT_MAX_DOMAINS = 1000;
/** The aggregation cycle (spec §8), ms. */
export const DEFAULT_CYCLE_MS = 60_000;
/** The reserved path prefix of the analytics script and beacon (never counted). */
export const RESERVED_PREFIX = '/_proxyd/';

/** Looks up the country (ISO 3166-1 alpha-2) of a client IP; null when unknown. */
export type CountryLookup = (ip: string, ipHash: number) => string | null;

/** What {@link CollectorOptions.onDomainCap} is told when the first request is dropped. */
export interface DomainCapReached {
  /** The cap (`maxDomains`). */
  maxDomains: number;
  /** The host whose request was dropped first. */
  host: string;
}

/** Options of {@link AnalyticsCollector}. */
export interface CollectorOptions {
  /** Clock, ms since the epoch (default `Date.now`; tests inject one). */
  now?: () => number;
  /** Domains tracked at most (default {@link DEFAULT_MAX_DOMAINS}). */
  maxDomains?: number;
  /** Country lookup (default: none, `countries` stays empty). */
  country?: CountryLookup;
  /** Called once, on the first request dropped past `maxDomains`. */
  onDomainCap?: (info: DomainCapReached) => void;
}

/**
 * Every domain's collectors, keyed by lowercase host. What counts as a
 * request: every request the data plane routed (`record.domain !== null`) to
 * a site with analytics on (`record.analytics`), any method and status, bots
 * included, except the analytics script and beacon (`/_proxyd/*`). Unrouted
 * requests are not counted, so arbitrary Host headers cannot create domains.
 * Past `maxDomains` tracked domains, requests for new domains are dropped
 * (counted in `droppedRequests`, `onDomainCap` told once) and their beacons
 * ignored; tracked domains keep counting.
 */
export class AnalyticsCollector {
  readonly #domains = new Map<string, DomainCollector>();
  readonly #now: () => number;
  readonly #maxDomains: number;
  readonly #country: CountryLookup | undefined;
  readonly #onDomainCap: ((info: DomainCapReached) => void) | undefined;
  #dropped = 0;

  constructor(options: CollectorOptions = {}) {
    this.#now = options.now ?? Date.now;
    this.#maxDomains = options.maxDomains ?? DEFAULT_MAX_DOMAINS;
    this.#country = options.country;
    this.#onDomainCap = options.onDomainCap;
  }

  /** Requests not counted because the domain cap was reached. */
  get droppedRequests(): number {
    return this.#dropped;
  }

  /** Number of tracked domains. */
  get size(): number {
    return this.#domains.size;
  }

  #collector(host: string): DomainCollector | undefined {
    let collector = this.#domains.get(host);
    if (collector === undefined) {
      if (this.#domains.size >= this.#maxDomains || host.length === 0) return undefined;
      collector = new DomainCollector(host, this.#now());
      this.#domains.set(host, collector);
    }
    return collector;
  }

  /** Counts one finished request (the data plane's `onRequest` hook). O(1). */
  record(record: RequestRecord): void {
    if (record.domain === null || !record.analytics || record.path.startsWith(RESERVED_PREFIX)) return;
    const collector = this.#collector(record.host);
    if (collector === undefined) {
      if (record.host.length === 0) return;
      if (this.#dropped++ === 0) this.#onDomainCap?.({ maxDomains: this.#maxDomains, host: record.host });
      return;
    }
    const ipHash = hashString(record.clientIp);
    const country = this.#country === undefined ? null : this.#country(record.clientIp, ipHash);
    collector.count(record, ipHash, country, this.#now());
  }

  /** Buffers one validated Web Vitals observation for `host` (ignored past the domain cap). */
  observe(host: string, metric: VitalName, value: number): void {
    this.#collector(host)?.observe(metric, value);
  }

  /** Merges every domain's pending Web Vitals (the aggregation cycle). */
  flush(): void {
    for (const collector of this.#domains.values()) collector.flush();
  }

  /** Snapshots of every domain with traffic, sorted by domain (never flushes). */
  list(): AnalyticsSnapshot[] {
    const now = this.#now();
    return [...this.#domains.keys()].sort().map((d) => (this.#domains.get(d) as DomainCollector).snapshot(now));
  }

  /** The snapshot of one domain (lowercased), or undefined (never flushes). */
  get(domain: string): AnalyticsSnapshot | undefined {
    return this.#domains.get(domain.toLowerCase())?.snapshot(this.#now());
  }

  /**
   * A plain-data copy of the collectors of every domain, or only of `domain`
   * (lowercased; none when it is not tracked), with the index of every
   * tracked domain, the cap and the dropped count, for `mergeAnalyticsStates`
   * in another process (structured-clone safe). Never flushes and changes
   * nothing.
   */
  exportState(domain?: string): AnalyticsState {
    const n = this.#domains.size;
    const tracked = { domains: new Array<string>(n), firstSeenMs: new Float64Array(n), requests: new Float64Array(n) };
    let i = 0;
    for (const collector of this.#domains.values()) {
      tracked.domains[i] = collector.domain;
      tracked.firstSeenMs[i] = collector.firstSeenMs;
      tracked.requests[i++] = collector.requests;
    }
    const domains = [];
    if (domain === undefined) for (const collector of this.#domains.values()) domains.push(collector.exportState());
    else {
      const collector = this.#domains.get(domain.toLowerCase());
      if (collector !== undefined) domains.push(collector.exportState());
    }
    return {
      version: ANALYTICS_STATE_VERSION,
      maxDomains: this.#maxDomains,
      droppedRequests: this.#dropped,
      tracked,
      domains,
    };
  }
}
