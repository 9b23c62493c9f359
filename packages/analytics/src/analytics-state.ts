import { DomainCollector, type DomainState } from './domain-collector.js';
import { AnalyticsError } from './errors.js';
import type { AnalyticsSnapshot } from './snapshot.js';

/** The version of {@link AnalyticsState}; raised whenever its shape or meaning changes. */
export const ANALYTICS_STATE_VERSION = 1;

/**
 * A plain-data image of one process's collectors (`Analytics.exportState`):
 * plain objects, arrays, numbers, strings and typed arrays only, so it
 * crosses Node IPC with `serialization: 'advanced'` (structured clone).
 */
export interface AnalyticsState {
  /** {@link ANALYTICS_STATE_VERSION} of the process that exported it. */
  version: typeof ANALYTICS_STATE_VERSION;
  /** That process's domain cap (`maxDomains`). */
  maxDomains: number;
  /** Requests that process did not count because of its domain cap. */
  droppedRequests: number;
  /**
   * Every domain that process tracks, also those not in {@link domains}: the
   * name, when its collector was created (first request or beacon, ms since
   * the epoch) and the requests it counted. What the domain cap of a merge reads.
   */
  tracked: { domains: string[]; firstSeenMs: Float64Array; requests: Float64Array };
  /** The collectors of every tracked domain, or of the one domain asked for; no order. */
  domains: DomainState[];
}

/** The one view over several processes' collectors: the shapes of `Analytics.list/get/droppedRequests`. */
export interface MergedAnalytics {
  /** Snapshots of every domain kept (of those exported), sorted by domain. */
  list(): AnalyticsSnapshot[];
  /** One domain's snapshot (lowercased), or undefined when no state holds it or the cap left it out. */
  get(domain: string): AnalyticsSnapshot | undefined;
  /** The states' dropped requests plus every request of the domains the cap left out. */
  droppedRequests(): number;
}

/**
 * Merges the states of several processes (each worker's
 * `Analytics.exportState()`) into the view one collector fed all their
 * traffic would give, within the sketches' error (README, "Several
 * processes"). Windows add up by absolute time bucket, visitors by
 * HyperLogLog register max, top lists by the space-saving merge, status
 * classes, bytes and dropped counts add up, and Web Vitals are read over
 * every digest's centroids and every pending observation. The domain cap is
 * the smallest of the states': of every tracked domain, those created first
 * (earliest in any state, ties by name) are kept, and the requests of the
 * others count as dropped. Snapshots are taken at `now` (ms since the epoch).
 * Pure: the states are not modified; each domain is merged when read.
 * Throws ANALYTICS_BAD_STATE for a state of another version or shape.
 */
export function mergeAnalyticsStates(states: readonly AnalyticsState[], now: number = Date.now()): MergedAnalytics {
  let maxDomains = Number.POSITIVE_INFINITY;
  let dropped = 0;
  const tracked = new Map<string, { firstSeenMs: number; requests: number }>();
  const byDomain = new Map<string, DomainState[]>();
  for (const state of states) {
    check(state);
    maxDomains = Math.min(maxDomains, state.maxDomains);
    dropped += state.droppedRequests;
    const t = state.tracked;
    for (let i = 0; i < t.domains.length; i++) {
      const domain = t.domains[i] as string;
      const firstSeenMs = t.firstSeenMs[i] as number;
      const requests = t.requests[i] as number;
      const entry = tracked.get(domain);
      if (entry === undefined) tracked.set(domain, { firstSeenMs, requests });
      else {
        entry.firstSeenMs = Math.min(entry.firstSeenMs, firstSeenMs);
        entry.requests += requests;
      }
    }
    for (const d of state.domains) {
      const list = byDomain.get(d.domain);
      if (list === undefined) byDomain.set(d.domain, [d]);
      else list.push(d);
    }
  }
  if (tracked.size > maxDomains) {
    const order = [...tracked].sort(([a, x], [b, y]) => x.firstSeenMs - y.firstSeenMs || (a < b ? -1 : a > b ? 1 : 0));
    for (const [domain, entry] of order.slice(maxDomains)) {
      dropped += entry.requests;
      byDomain.delete(domain);
    }
  }
  const snapshot = (domain: string): AnalyticsSnapshot | undefined => {
    const list = byDomain.get(domain);
    return list && DomainCollector.mergedSnapshot(domain, list, now);
  };
  return {
    list: () => [...byDomain.keys()].sort().map((d) => snapshot(d) as AnalyticsSnapshot),
    get: (domain) => snapshot(domain.toLowerCase()),
    droppedRequests: () => dropped,
  };
}

/** Throws ANALYTICS_BAD_STATE unless `state` is a state of this version (the sketches check their own sizes). */
function check(state: AnalyticsState): void {
  if (state?.version !== ANALYTICS_STATE_VERSION) {
    throw new AnalyticsError(
      'ANALYTICS_BAD_STATE',
      `version ${String(state?.version)}, want ${ANALYTICS_STATE_VERSION}`,
    );
  }
  const t = state.tracked;
  if (
    !Array.isArray(state.domains) ||
    !Array.isArray(t?.domains) ||
    t.firstSeenMs?.length !== t.domains.length ||
    t.requests?.length !== t.domains.length
  ) {
    throw new AnalyticsError('ANALYTICS_BAD_STATE', 'tracked domains or collectors missing');
  }
}
