import type { RequestRecord } from '@proxyd/proxy-core';
import { HyperLogLog } from './hyperloglog.js';
import { referrerHost } from './referrer.js';
import { SlidingWindowCounter } from './sliding-window.js';
import type { AnalyticsSnapshot } from './snapshot.js';
import { SpaceSaving } from './space-saving.js';
import { VitalDigest } from './vital-digest.js';

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

/**
 * Every collector of one domain (spec §2.4). Memory is fixed: two bucket
 * rings, a 10 KB HyperLogLog, three filtered space-saving tables and (once a beacon
 * arrives) three TDigests.
 */
export class DomainCollector {
  readonly domain: string;
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

  /** @param domain lowercase hostname */
  constructor(domain: string) {
    this.domain = domain;
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
    const zero = { p50: 0, p75: 0, p95: 0, p99: 0 };
    const v = this.#vitals;
    const s = this.#status;
    return {
      domain: this.domain,
      page_views_1m: this.#views1m.count(nowMs),
      page_views_60m: this.#views60m.count(nowMs),
      unique_visitors: this.#visitors.estimate(),
      top_pages: this.#pages.top(TOP_LIST_LENGTH).map((i) => ({ path: i.key, views: i.count })),
      referrers: this.#referrers.top(TOP_LIST_LENGTH).map((i) => ({ domain: i.key, count: i.count })),
      countries: this.#countries.top(TOP_LIST_LENGTH).map((i) => ({ country: i.key, count: i.count })),
      status_codes: {
        s1xx: s[1] as number,
        s2xx: s[2] as number,
        s3xx: s[3] as number,
        s4xx: s[4] as number,
        s5xx: s[5] as number,
        other: s[0] as number,
      },
      bytes_sent: this.#bytes,
      web_vitals: {
        lcp: v ? v.lcp.percentiles() : { ...zero },
        cls: v ? v.cls.percentiles() : { ...zero },
        inp: v ? v.inp.percentiles() : { ...zero },
      },
      timestamp: new Date(nowMs).toISOString(),
    };
  }
}
