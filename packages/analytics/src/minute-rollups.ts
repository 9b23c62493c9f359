import type { RequestRecord } from '@proxyd/proxy-core';
import type { VitalName } from './domain-collector.js';
import { HyperLogLog } from './hyperloglog.js';
import { isPageView } from './page-view.js';
import { referrerHost } from './referrer.js';
import {
  emptyPageVitals,
  type MinuteRollup,
  type PageVitals,
  ROLLUP_DIMENSIONS,
  ROLLUP_HLL_PRECISION,
  ROLLUP_MAX_KEYS,
  ROLLUP_MAX_VITAL_PATHS,
  ROLLUP_OTHER_KEY,
  type RollupDimension,
  rateVital,
} from './rollup.js';
import type { UserAgentInfo } from './user-agent.js';
import { parseUtm } from './utm.js';

/** One UTC minute, ms. */
export const MINUTE_MS = 60_000;
/**
 * Finished minutes a domain keeps until `drainRollups` takes them: past
 * this backlog (nobody drains, e.g. history off) the oldest are dropped, so
 * memory stays bounded.
 */
export const ROLLUP_BACKLOG_MINUTES = 3;
/** Longest breakdown key or vitals path, characters (a longer one is cut, as the snapshot's top lists do). */
export const MAX_ROLLUP_KEY_LENGTH = 96;

/** Index of each dimension in a builder's arrays. */
const DIM = Object.fromEntries(ROLLUP_DIMENSIONS.map((d, i) => [d, i])) as Record<RollupDimension, number>;

const cut = (key: string): string => (key.length > MAX_ROLLUP_KEY_LENGTH ? key.slice(0, MAX_ROLLUP_KEY_LENGTH) : key);

/** A fresh flat copy: a key sliced from a request header would otherwise keep the whole header alive. */
const flat = (key: string): string => Buffer.from(key, 'utf8').toString('utf8');

/** What one domain counts in one minute, in mutable form (Maps, a live HyperLogLog); finished into a {@link MinuteRollup}. */
class MinuteBuilder {
  readonly minute: number;
  requests = 0;
  pageViews = 0;
  botRequests = 0;
  bytes = 0;
  /** s1xx..s5xx at 1..5, other at 0. */
  readonly status = new Float64Array(6);
  readonly visitors = new HyperLogLog(ROLLUP_HLL_PRECISION);
  /** Per dimension: key → page views (at most ROLLUP_MAX_KEYS keys). */
  readonly keys: Map<string, number>[] = ROLLUP_DIMENSIONS.map(() => new Map());
  /** Per dimension: page views of keys past the bound. */
  readonly other = new Float64Array(ROLLUP_DIMENSIONS.length);
  vitals: Map<string, PageVitals> | undefined;
  vitalsOther: PageVitals | undefined;

  constructor(minute: number) {
    this.minute = minute;
  }

  add(dim: number, key: string): void {
    const keys = this.keys[dim] as Map<string, number>;
    const k = cut(key);
    const n = keys.get(k);
    if (n !== undefined) keys.set(k, n + 1);
    else if (keys.size < ROLLUP_MAX_KEYS && k !== ROLLUP_OTHER_KEY) keys.set(flat(k), 1);
    else this.other[dim] = (this.other[dim] as number) + 1;
  }

  pageVitals(path: string): PageVitals {
    this.vitals ??= new Map();
    let v = this.vitals.get(path);
    if (v === undefined) {
      if (this.vitals.size >= ROLLUP_MAX_VITAL_PATHS || path === ROLLUP_OTHER_KEY) {
        this.vitalsOther ??= emptyPageVitals();
        return this.vitalsOther;
      }
      v = emptyPageVitals();
      this.vitals.set(flat(path), v);
    }
    return v;
  }

  finish(domain: string): MinuteRollup {
    const s = this.status;
    const breakdowns = {} as Record<RollupDimension, Record<string, number>>;
    for (const d of ROLLUP_DIMENSIONS) {
      const out = Object.create(null) as Record<string, number>;
      for (const [key, n] of this.keys[DIM[d]] as Map<string, number>) out[key] = n;
      const other = this.other[DIM[d]] as number;
      if (other > 0) out[ROLLUP_OTHER_KEY] = other;
      breakdowns[d] = out;
    }
    const vitals = Object.create(null) as Record<string, PageVitals>;
    if (this.vitals !== undefined) for (const [path, v] of this.vitals) vitals[path] = v;
    if (this.vitalsOther !== undefined) vitals[ROLLUP_OTHER_KEY] = this.vitalsOther;
    return {
      domain,
      minute: this.minute,
      requests: this.requests,
      page_views: this.pageViews,
      bot_requests: this.botRequests,
      bytes_sent: this.bytes,
      status: {
        s1xx: s[1] as number,
        s2xx: s[2] as number,
        s3xx: s[3] as number,
        s4xx: s[4] as number,
        s5xx: s[5] as number,
        other: s[0] as number,
      },
      visitors: this.visitors.exportRegisters(),
      breakdowns,
      vitals,
    };
  }
}

/**
 * One domain's rollups: the minute being counted and the finished minutes
 * not yet drained (at most {@link ROLLUP_BACKLOG_MINUTES}). Counting is
 * by the time a request is recorded (its response's close), like the
 * snapshot's windows; a clock that steps back counts into the earliest
 * minute not yet drained, so a drained minute never comes back.
 */
export class DomainRollups {
  readonly domain: string;
  #current: MinuteBuilder | undefined;
  readonly #finished: MinuteRollup[] = [];
  /** Start of the earliest minute that may still be counted (every earlier one was drained). */
  #floor = 0;
  #dropped = 0;

  /** @param domain lowercase host */
  constructor(domain: string) {
    this.domain = domain;
  }

  /** Finished minutes dropped past the backlog since start. */
  get droppedMinutes(): number {
    return this.#dropped;
  }

  #builder(nowMs: number): MinuteBuilder {
    const minute = Math.max(nowMs - (nowMs % MINUTE_MS), this.#floor);
    const current = this.#current;
    if (current !== undefined && current.minute >= minute) return current;
    if (current !== undefined) this.#keep(current.finish(this.domain));
    const next = new MinuteBuilder(minute);
    this.#current = next;
    return next;
  }

  #keep(rollup: MinuteRollup): void {
    if (this.#finished.length >= ROLLUP_BACKLOG_MINUTES) {
      this.#finished.shift();
      this.#dropped++;
    }
    this.#finished.push(rollup);
  }

  /**
   * Counts one request at `nowMs`: every request in `requests`, its status
   * class and bytes; a bot's in `bot_requests`; a page view (`isPageView`)
   * in `page_views`, the visitors (`visitorHash`) and every breakdown.
   * @param country ISO 3166-1 alpha-2 of the client, or null
   * @param visitorHash the salted hash of (client IP, user agent), called for page views only
   */
  count(
    record: RequestRecord,
    ua: UserAgentInfo,
    country: string | null,
    visitorHash: (ip: string, uaHash: number) => number,
    nowMs: number,
  ): void {
    const b = this.#builder(nowMs);
    b.requests++;
    b.bytes += record.bytesSent;
    const s = record.status;
    const cls = s >= 100 && s < 600 ? (s / 100) | 0 : 0;
    b.status[cls] = (b.status[cls] as number) + 1;
    if (ua.bot) b.botRequests++;
    if (!isPageView(record, ua.bot)) return;
    b.pageViews++;
    b.visitors.addHash(visitorHash(record.clientIp, ua.hash));
    const path = record.path;
    b.add(DIM.pages, path);
    const ref = referrerHost(record.referer);
    const external = ref !== null && ref !== record.host;
    if (ref === null || external) b.add(DIM.entry_pages, path);
    if (external) b.add(DIM.referrers, ref as string);
    if (country !== null) b.add(DIM.countries, country);
    b.add(DIM.browsers, ua.browser);
    b.add(DIM.os, ua.os);
    b.add(DIM.devices, ua.device);
    const utm = parseUtm(record.query);
    if (utm.source !== null) b.add(DIM.utm_source, utm.source);
    if (utm.medium !== null) b.add(DIM.utm_medium, utm.medium);
    if (utm.campaign !== null) b.add(DIM.utm_campaign, utm.campaign);
  }

  /** Counts one Web Vitals observation of page `path` at `nowMs`: its rating by the §2.4 thresholds. */
  observe(path: string, metric: VitalName, value: number, nowMs: number): void {
    const counts = this.#builder(nowMs).pageVitals(cut(path))[metric];
    counts[rateVital(metric, value)]++;
  }

  /**
   * Moves every complete minute (start + 60 s ≤ `nowMs`) into `out`, oldest
   * first, and forgets it; the current minute stays until it is complete.
   */
  drain(nowMs: number, out: MinuteRollup[]): void {
    for (const r of this.#finished) out.push(r);
    this.#finished.length = 0;
    const current = this.#current;
    if (current !== undefined && current.minute + MINUTE_MS <= nowMs) {
      out.push(current.finish(this.domain));
      this.#current = undefined;
      this.#floor = current.minute + MINUTE_MS;
    }
  }
}
