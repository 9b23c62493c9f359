import { randomBytes } from 'node:crypto';
import type { RequestRecord } from '@proxyd/proxy-core';
import { ANALYTICS_STATE_VERSION, type AnalyticsState } from './analytics-state.js';
import { DomainCollector, type VitalName } from './domain-collector.js';
import { AnalyticsError } from './errors.js';
import { hashString } from './hash.js';
import { DomainRollups } from './minute-rollups.js';
import type { MinuteRollup } from './rollup.js';
import type { AnalyticsSnapshot } from './snapshot.js';
import { UserAgentCache } from './user-agent.js';

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
  /** Count per-minute rollups for `drainRollups` (default true; off, the per-request cost is the snapshot's alone). */
  rollups?: boolean;
}

/** Smallest visitor salt, bytes (two 32-bit hash seeds). */
export const MIN_SALT_BYTES = 8;

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
  /** Whether each domain counts per-minute rollups (`DomainCollector.rollups`). */
  readonly #rollupsOn: boolean;
  readonly #userAgents = new UserAgentCache();
  #seedA = 0;
  #seedB = 0;
  /** The visitor hash: hash(salt, client IP, user agent), 32 bits (README, "Visitors"). */
  readonly #visitorHash = (ip: string, uaHash: number): number => {
    let h = hashString(ip, this.#seedA) ^ Math.imul(uaHash ^ this.#seedB, 0x9e3779b1);
    h ^= h >>> 16;
    h = Math.imul(h, 0x85ebca6b);
    h ^= h >>> 13;
    h = Math.imul(h, 0xc2b2ae35);
    h ^= h >>> 16;
    return h >>> 0;
  };

  constructor(options: CollectorOptions = {}) {
    this.#now = options.now ?? Date.now;
    this.#maxDomains = options.maxDomains ?? DEFAULT_MAX_DOMAINS;
    this.#country = options.country;
    this.#onDomainCap = options.onDomainCap;
    this.#rollupsOn = options.rollups !== false;
    this.setVisitorSalt(randomBytes(32));
  }

  /**
   * Sets the salt of the visitor hash (at least {@link MIN_SALT_BYTES}
   * bytes; random per process until set). The control plane gives every
   * worker the day's salt, so their visitor registers merge.
   */
  setVisitorSalt(salt: Buffer): void {
    if (!Buffer.isBuffer(salt) || salt.length < MIN_SALT_BYTES) {
      throw new AnalyticsError(
        'ANALYTICS_BAD_OPTION',
        `visitor salt of ${salt?.length} bytes, want >= ${MIN_SALT_BYTES}`,
      );
    }
    this.#seedA = salt.readUInt32LE(0) ^ hashString(salt.toString('latin1'), 1);
    this.#seedB = salt.readUInt32LE(4) ^ hashString(salt.toString('latin1'), 2);
  }

  /** The parsed User-Agent cache (tests, bench). */
  get userAgents(): UserAgentCache {
    return this.#userAgents;
  }

  /**
   * Every complete minute's rollup (minute start + 60 s ≤ `nowMs`) of every
   * domain, oldest first per domain, forgotten here once returned; each
   * domain's current minute stays until it is complete. Empty when rollups
   * are off.
   */
  drainRollups(nowMs: number = this.#now()): MinuteRollup[] {
    const out: MinuteRollup[] = [];
    for (const collector of this.#domains.values()) collector.rollups?.drain(nowMs, out);
    return out;
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
      if (this.#rollupsOn) collector.rollups = new DomainRollups(host);
    }
    return collector;
  }

  /** Counts one finished request (the data plane's `onRequest` hook). O(1). */
  record(record: RequestRecord): void {
    if (record.domain === null || !record.analytics) return;
    if (record.path.startsWith(RESERVED_PREFIX)) {
      // Not in the snapshot; in a tracked domain's rollup `requests` (never a page view).
      const rollups = this.#domains.get(record.host)?.rollups;
      if (rollups !== undefined) {
        rollups.count(record, this.#userAgents.get(record.userAgent), null, this.#visitorHash, this.#now());
      }
      return;
    }
    const collector = this.#collector(record.host);
    if (collector === undefined) {
      if (record.host.length === 0) return;
      if (this.#dropped++ === 0) this.#onDomainCap?.({ maxDomains: this.#maxDomains, host: record.host });
      return;
    }
    const ipHash = hashString(record.clientIp);
    const country = this.#country === undefined ? null : this.#country(record.clientIp, ipHash);
    const now = this.#now();
    collector.count(record, ipHash, country, now);
    const rollups = collector.rollups;
    if (rollups !== undefined) {
      rollups.count(record, this.#userAgents.get(record.userAgent), country, this.#visitorHash, now);
    }
  }

  /**
   * Buffers one validated Web Vitals observation for `host` (ignored past
   * the domain cap) and, given the page's `path`, counts its rating in that
   * page's rollup vitals.
   */
  observe(host: string, metric: VitalName, value: number, path?: string | null): void {
    const collector = this.#collector(host);
    if (collector === undefined) return;
    collector.observe(metric, value);
    if (path != null) collector.rollups?.observe(path, metric, value, this.#now());
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
