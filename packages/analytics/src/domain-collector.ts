import type { RequestRecord } from '@proxyd/proxy-core';
import { HyperLogLog } from './hyperloglog.js';
import type { DomainRollups } from './minute-rollups.js';
import { referrerHost } from './referrer.js';
import { SlidingWindowCounter } from './sliding-window.js';
import type { AnalyticsSnapshot } from './snapshot.js';
import { SpaceSaving, type TopListState } from './space-saving.js';
import { type Percentiles, VitalDigest, type VitalState } from './vital-digest.js';

/**
 * `page_views_1m`: 60 buckets of 1 s. A request is counted for at least 59 s
 * and at most 60 s: worst case, the requests of the oldest second are
 * missing (an under-count of up to 1/60 of the window at a steady rate).
 */
export const WINDOW_1M = { buckets: 60, widthMs: 1000 } as const;
/**
 * `page_views_60m`: 120 buckets of 30 s. A request is counted for at least
 * 59 min 30 s and at most 60 min: worst case, the oldest 30 s are missing
 * (an under-count of up to 1/120, 0.83 %, of the window at a steady rate).
 */
export const WINDOW_60M = { buckets: 120, widthMs: 30_000 } as const;
/** Keys tracked by the filtered space-saving counters (the snapshot shows the top 10); each has 8 filter buckets per key. */
export const TOP_CAPACITY = { pages: 32, referrers: 16, countries: 16 } as const;
/**
 * Longest top-list key, characters: a longer path (`top_pages`) or referrer
 * host (`referrers`) is cut to its first 96 characters, so long keys sharing
 * that prefix count as one entry. Bounds a domain's memory (README, Bounds).
 */
export const MAX_KEY_LENGTH = 96;
/** Items shown in each top list (spec §8). */
export const TOP_LIST_LENGTH = 10;

/** A Web Vitals metric key of the snapshot. */
export type VitalName = 'lcp' | 'cls' | 'inp';

/** The plain-data image of one domain's collectors (structured-clone safe; see `AnalyticsState`). */
export interface DomainState {
  /** Lowercase hostname. */
  domain: string;
  /** The `page_views_1m` ring (`SlidingWindowCounter.exportSlots`). */
  views1m: Uint32Array;
  /** The `page_views_60m` ring. */
  views60m: Uint32Array;
  /** The packed HyperLogLog registers. */
  visitors: Uint8Array;
  pages: TopListState;
  referrers: TopListState;
  countries: TopListState;
  /** Requests by status class: `other` at 0, s1xx..s5xx at 1..5. */
  status: Float64Array;
  /** Body bytes sent. */
  bytes: number;
  /** Web Vitals, null before the first beacon. */
  vitals: Record<VitalName, VitalState> | null;
}

const ZERO_PERCENTILES: Readonly<Percentiles> = Object.freeze({ p50: 0, p75: 0, p95: 0, p99: 0 });

/**
 * Every collector of one domain (spec §2.4). Memory is fixed: two bucket
 * rings, a 10 KB HyperLogLog, three filtered space-saving tables and (once a beacon
 * arrives) three TDigests.
 */
export class DomainCollector {
  readonly domain: string;
  /** When this collector was created, ms since the epoch (the domain cap of a merge keeps the earliest). */
  readonly firstSeenMs: number;
  readonly #views1m = new SlidingWindowCounter(WINDOW_1M.buckets, WINDOW_1M.widthMs);
  readonly #views60m = new SlidingWindowCounter(WINDOW_60M.buckets, WINDOW_60M.widthMs);
  readonly #visitors = new HyperLogLog();
  readonly #pages = new SpaceSaving(TOP_CAPACITY.pages);
  readonly #referrers = new SpaceSaving(TOP_CAPACITY.referrers);
  readonly #countries = new SpaceSaving(TOP_CAPACITY.countries);
  /** s1xx..s5xx at 1..5, other at 0. */
  readonly #status = new Float64Array(6);
  #bytes = 0;
  #vitals: Record<VitalName, VitalDigest> | undefined;
  /** This domain's per-minute rollups (set by the collector when rollups are on; not part of the snapshot or state). */
  rollups: DomainRollups | undefined = undefined;

  /**
   * @param domain lowercase hostname
   * @param firstSeenMs creation time, ms since the epoch
   */
  constructor(domain: string, firstSeenMs = 0) {
    this.domain = domain;
    this.firstSeenMs = firstSeenMs;
  }

  /**
   * Counts one request at `nowMs`. O(1), no allocation on a top-list hit.
   * @param ipHash 32-bit hash of the client IP
   * @param country ISO 3166-1 alpha-2 of the client IP, or null
   */
  count(request: RequestRecord, ipHash: number, country: string | null, nowMs: number): void {
    this.#views1m.add(nowMs);
    this.#views60m.add(nowMs);
    this.#visitors.addHash(ipHash);
    const path = request.path;
    this.#pages.add(path.length > MAX_KEY_LENGTH ? path.slice(0, MAX_KEY_LENGTH) : path);
    const ref = referrerHost(request.referer);
    if (ref !== null && ref !== request.host) {
      this.#referrers.add(ref.length > MAX_KEY_LENGTH ? ref.slice(0, MAX_KEY_LENGTH) : ref);
    }
    if (country !== null) this.#countries.add(country);
    const s = request.status;
    const cls = s >= 100 && s < 600 ? (s / 100) | 0 : 0;
    this.#status[cls] = (this.#status[cls] as number) + 1;
    this.#bytes += request.bytesSent;
  }

  /** Requests counted (every status class). */
  get requests(): number {
    const s = this.#status;
    return (
      (s[0] as number) + (s[1] as number) + (s[2] as number) + (s[3] as number) + (s[4] as number) + (s[5] as number)
    );
  }

  /** Buffers one Web Vitals observation. */
  observe(metric: VitalName, value: number): void {
    this.#vitals ??= { lcp: new VitalDigest(), cls: new VitalDigest(), inp: new VitalDigest() };
    this.#vitals[metric].observe(value);
  }

  /** Merges every pending Web Vitals buffer (the aggregation cycle). */
  flush(): void {
    if (this.#vitals === undefined) return;
    this.#vitals.lcp.flush();
    this.#vitals.cls.flush();
    this.#vitals.inp.flush();
  }

  /** The snapshot at `nowMs` (never flushes). */
  snapshot(nowMs: number): AnalyticsSnapshot {
    const v = this.#vitals;
    return buildSnapshot(
      this.domain,
      nowMs,
      this.#views1m,
      this.#views60m,
      this.#visitors,
      [this.#pages, this.#referrers, this.#countries],
      this.#status,
      this.#bytes,
      v ? [v.lcp.percentiles(), v.cls.percentiles(), v.inp.percentiles()] : null,
    );
  }

  /** A copy of every counter, sketch and pending observation (never flushes). */
  exportState(): DomainState {
    const v = this.#vitals;
    return {
      domain: this.domain,
      views1m: this.#views1m.exportSlots(),
      views60m: this.#views60m.exportSlots(),
      visitors: this.#visitors.exportRegisters(),
      pages: this.#pages.exportState(),
      referrers: this.#referrers.exportState(),
      countries: this.#countries.exportState(),
      status: this.#status.slice(),
      bytes: this.#bytes,
      vitals: v ? { lcp: v.lcp.exportState(), cls: v.cls.exportState(), inp: v.inp.exportState() } : null,
    };
  }

  /**
   * The snapshot at `nowMs` of one domain's states from several collectors
   * (same domain): windows by absolute bucket, visitors by register max, top
   * lists by the space-saving merge, status classes and bytes summed, Web
   * Vitals over every centroid and pending observation.
   */
  static mergedSnapshot(domain: string, states: readonly DomainState[], nowMs: number): AnalyticsSnapshot {
    const status = new Float64Array(6);
    let bytes = 0;
    const vitals: Record<VitalName, VitalState[]> = { lcp: [], cls: [], inp: [] };
    let anyVitals = false;
    for (const s of states) {
      if (s.status.length !== 6) throw new RangeError(`${s.status.length} status classes`);
      for (let i = 0; i < 6; i++) status[i] = (status[i] as number) + (s.status[i] as number);
      bytes += s.bytes;
      if (s.vitals !== null) {
        anyVitals = true;
        vitals.lcp.push(s.vitals.lcp);
        vitals.cls.push(s.vitals.cls);
        vitals.inp.push(s.vitals.inp);
      }
    }
    return buildSnapshot(
      domain,
      nowMs,
      SlidingWindowCounter.merge(
        WINDOW_1M.buckets,
        WINDOW_1M.widthMs,
        states.map((s) => s.views1m),
      ),
      SlidingWindowCounter.merge(
        WINDOW_60M.buckets,
        WINDOW_60M.widthMs,
        states.map((s) => s.views60m),
      ),
      HyperLogLog.merge(states.map((s) => s.visitors)),
      [
        SpaceSaving.merge(
          TOP_CAPACITY.pages,
          states.map((s) => s.pages),
        ),
        SpaceSaving.merge(
          TOP_CAPACITY.referrers,
          states.map((s) => s.referrers),
        ),
        SpaceSaving.merge(
          TOP_CAPACITY.countries,
          states.map((s) => s.countries),
        ),
      ],
      status,
      bytes,
      anyVitals
        ? [
            VitalDigest.mergedPercentiles(vitals.lcp),
            VitalDigest.mergedPercentiles(vitals.cls),
            VitalDigest.mergedPercentiles(vitals.inp),
          ]
        : null,
    );
  }
}

/** One §2.4 snapshot from a domain's collectors (live or merged). */
function buildSnapshot(
  domain: string,
  nowMs: number,
  views1m: SlidingWindowCounter,
  views60m: SlidingWindowCounter,
  visitors: HyperLogLog,
  [pages, referrers, countries]: readonly [SpaceSaving, SpaceSaving, SpaceSaving],
  s: Float64Array,
  bytes: number,
  vitals: readonly [Percentiles, Percentiles, Percentiles] | null,
): AnalyticsSnapshot {
  return {
    domain,
    page_views_1m: views1m.count(nowMs),
    page_views_60m: views60m.count(nowMs),
    unique_visitors: visitors.estimate(),
    top_pages: pages.top(TOP_LIST_LENGTH).map((i) => ({ path: i.key, views: i.count })),
    referrers: referrers.top(TOP_LIST_LENGTH).map((i) => ({ domain: i.key, count: i.count })),
    countries: countries.top(TOP_LIST_LENGTH).map((i) => ({ country: i.key, count: i.count })),
    status_codes: {
      s1xx: s[1] as number,
      s2xx: s[2] as number,
      s3xx: s[3] as number,
      s4xx: s[4] as number,
      s5xx: s[5] as number,
      other: s[0] as number,
    },
    bytes_sent: bytes,
    web_vitals: {
      lcp: vitals ? vitals[0] : { ...ZERO_PERCENTILES },
      cls: vitals ? vitals[1] : { ...ZERO_PERCENTILES },
      inp: vitals ? vitals[2] : { ...ZERO_PERCENTILES },
    },
    timestamp: new Date(nowMs).toISOString(),
  };
}
