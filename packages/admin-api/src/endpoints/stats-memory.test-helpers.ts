import type {
  StatsBreakdownItem,
  StatsDimension,
  StatsInterval,
  StatsPageVitals,
  StatsPort,
  StatsRange,
  StatsRangeTotals,
  StatsSeriesPoint,
} from '../ports.js';

/** One call the port answered, with what it was asked. */
export interface StatsCall {
  method: string;
  domain?: string;
  range?: StatsRange;
  interval?: StatsInterval;
  dimension?: StatsDimension;
  limit?: number;
}

/**
 * A stats port over fixed per-minute counts of a few domains (tests only):
 * time series summed into buckets, totals summed, breakdowns and vitals
 * answered from fixed lists cut to `limit`. It records every call.
 */
export function memoryStats(data: {
  minutes: Record<string, Array<{ t: number; page_views: number; visitors?: number }>>;
  breakdown?: StatsBreakdownItem[];
  vitals?: StatsPageVitals[];
}): StatsPort & { calls: StatsCall[] } {
  const calls: StatsCall[] = [];
  const inRange = (domain: string, range: StatsRange) =>
    (data.minutes[domain] ?? []).filter((m) => m.t >= range.from && m.t < range.to);
  const step: Record<StatsInterval, number> = { minute: 60_000, hour: 3_600_000, day: 86_400_000 };
  return {
    calls,
    domains() {
      calls.push({ method: 'domains' });
      return Object.keys(data.minutes).sort();
    },
    hasDomain(domain) {
      calls.push({ method: 'hasDomain', domain });
      return Object.hasOwn(data.minutes, domain);
    },
    timeseries(domain, range, interval) {
      calls.push({ method: 'timeseries', domain, range, interval });
      const ms = step[interval];
      const points: StatsSeriesPoint[] = [];
      for (let t = Math.floor(range.from / ms) * ms; t < range.to; t += ms) {
        const minutes = inRange(domain, { from: t, to: t + ms });
        const page_views = minutes.reduce((a, m) => a + m.page_views, 0);
        const visitors = minutes.reduce((a, m) => a + (m.visitors ?? 0), 0);
        points.push({
          t,
          page_views,
          visitors,
          requests: page_views * 2,
          bot_requests: 0,
          bytes_sent: page_views * 100,
        });
      }
      return points;
    },
    async totals(domain, range): Promise<StatsRangeTotals> {
      calls.push({ method: 'totals', domain, range });
      const minutes = inRange(domain, range);
      const page_views = minutes.reduce((a, m) => a + m.page_views, 0);
      return {
        page_views,
        visitors: minutes.reduce((a, m) => a + (m.visitors ?? 0), 0),
        requests: page_views * 2,
        bot_requests: 0,
        bytes_sent: page_views * 100,
        status: { s1xx: 0, s2xx: page_views * 2, s3xx: 0, s4xx: 0, s5xx: 0, other: 0 },
      };
    },
    breakdown(domain, dimension, range, limit) {
      calls.push({ method: 'breakdown', domain, dimension, range, limit });
      return (data.breakdown ?? []).slice(0, limit);
    },
    vitals(domain, range, limit) {
      calls.push({ method: 'vitals', domain, range, limit });
      return (data.vitals ?? []).slice(0, limit);
    },
  };
}

/** A page's vitals with `good` LCP samples and nothing else. */
export function lcpOnly(path: string, good: number, poor = 0): StatsPageVitals {
  const zero = { good: 0, needs_improvement: 0, poor: 0, samples: 0 };
  return { path, lcp: { good, needs_improvement: 0, poor, samples: good + poor }, cls: { ...zero }, inp: { ...zero } };
}
