import { floorTo, INTERVAL_MS } from './shared/range.js';
import type {
  BreakdownItem,
  DashboardSource,
  Dimension,
  HistoryReader,
  Interval,
  LiveSnapshot,
  Range,
  TimeseriesPoint,
  Totals,
  VitalCounts,
  VitalsPage,
} from './source.js';

/** What one domain did in one minute, in a form tests write by hand (visitors as a plain count). */
export interface TestMinute {
  domain: string;
  minute: number;
  page_views?: number;
  visitors?: number;
  requests?: number;
  bot_requests?: number;
  bytes_sent?: number;
  s2xx?: number;
  s4xx?: number;
  s5xx?: number;
  breakdowns?: Partial<Record<Dimension, Record<string, number>>>;
  vitals?: Record<string, Partial<Record<'lcp' | 'cls' | 'inp', VitalCounts>>>;
}

const zeroCounts = (): VitalCounts => ({ good: 0, needs_improvement: 0, poor: 0 });

/**
 * A history store in memory with the contract's query semantics (every
 * bucket of the range, zeros included; breakdowns descending; vitals by
 * samples), for the dashboard's tests. Visitors are summed per bucket (the
 * real store unions HyperLogLogs within a day).
 */
export class MemoryHistory implements HistoryReader {
  readonly minutes: TestMinute[] = [];
  /** Query calls, for tests that check what was asked. */
  readonly calls: { method: string; domain: string; range: Range; interval?: Interval; limit?: number }[] = [];

  add(...minutes: TestMinute[]): this {
    this.minutes.push(...minutes);
    return this;
  }

  #in(domain: string, range: Range): TestMinute[] {
    return this.minutes.filter((m) => m.domain === domain && m.minute >= range.from && m.minute < range.to);
  }

  domains(): string[] {
    return [...new Set(this.minutes.map((m) => m.domain))].sort();
  }

  timeseries(domain: string, range: Range, interval: Interval): TimeseriesPoint[] {
    this.calls.push({ method: 'timeseries', domain, range, interval });
    const points: TimeseriesPoint[] = [];
    for (let t = floorTo(range.from, interval); t < range.to; t += INTERVAL_MS[interval]) {
      const rows = this.#in(domain, { from: t, to: t + INTERVAL_MS[interval] });
      const sum = (f: (m: TestMinute) => number | undefined) => rows.reduce((n, m) => n + (f(m) ?? 0), 0);
      points.push({
        t,
        page_views: sum((m) => m.page_views),
        visitors: sum((m) => m.visitors),
        requests: sum((m) => m.requests),
        bot_requests: sum((m) => m.bot_requests),
        bytes_sent: sum((m) => m.bytes_sent),
      });
    }
    return points;
  }

  totals(domain: string, range: Range): Totals {
    this.calls.push({ method: 'totals', domain, range });
    const rows = this.#in(domain, range);
    const sum = (f: (m: TestMinute) => number | undefined) => rows.reduce((n, m) => n + (f(m) ?? 0), 0);
    return {
      page_views: sum((m) => m.page_views),
      visitors: sum((m) => m.visitors),
      requests: sum((m) => m.requests),
      bot_requests: sum((m) => m.bot_requests),
      bytes_sent: sum((m) => m.bytes_sent),
      status: {
        s1xx: 0,
        s2xx: sum((m) => m.s2xx),
        s3xx: 0,
        s4xx: sum((m) => m.s4xx),
        s5xx: sum((m) => m.s5xx),
        other: 0,
      },
    };
  }

  breakdown(domain: string, dimension: Dimension, range: Range, limit = 10): BreakdownItem[] {
    this.calls.push({ method: 'breakdown', domain, range, limit });
    const counts = new Map<string, number>();
    for (const m of this.#in(domain, range)) {
      for (const [key, n] of Object.entries(m.breakdowns?.[dimension] ?? {}))
        counts.set(key, (counts.get(key) ?? 0) + n);
    }
    return [...counts]
      .map(([key, page_views]) => ({ key, page_views }))
      .sort((a, b) => b.page_views - a.page_views || (a.key < b.key ? -1 : 1))
      .slice(0, limit);
  }

  vitals(domain: string, range: Range, limit = 20): VitalsPage[] {
    this.calls.push({ method: 'vitals', domain, range, limit });
    const pages = new Map<string, VitalsPage>();
    for (const m of this.#in(domain, range)) {
      for (const [path, metrics] of Object.entries(m.vitals ?? {})) {
        const page = pages.get(path) ?? {
          path,
          lcp: { ...zeroCounts(), samples: 0 },
          cls: { ...zeroCounts(), samples: 0 },
          inp: { ...zeroCounts(), samples: 0 },
        };
        for (const metric of ['lcp', 'cls', 'inp'] as const) {
          const c = metrics[metric];
          if (c === undefined) continue;
          page[metric].good += c.good;
          page[metric].needs_improvement += c.needs_improvement;
          page[metric].poor += c.poor;
          page[metric].samples += c.good + c.needs_improvement + c.poor;
        }
        pages.set(path, page);
      }
    }
    const samples = (p: VitalsPage) => p.lcp.samples + p.cls.samples + p.inp.samples;
    return [...pages.values()].sort((a, b) => samples(b) - samples(a)).slice(0, limit);
  }
}

/** A live snapshot with the spec's fields, zeros unless given. */
export function liveSnapshot(domain: string, fields: Partial<LiveSnapshot> = {}): LiveSnapshot {
  const p = { p50: 0, p75: 0, p95: 0, p99: 0 };
  return {
    domain,
    page_views_1m: 0,
    page_views_60m: 0,
    unique_visitors: 0,
    top_pages: [],
    referrers: [],
    countries: [],
    status_codes: { s1xx: 0, s2xx: 0, s3xx: 0, s4xx: 0, s5xx: 0, other: 0 },
    bytes_sent: 0,
    web_vitals: { lcp: p, cls: p, inp: p },
    timestamp: new Date(0).toISOString(),
    ...fields,
  };
}

/** A {@link DashboardSource} over a {@link MemoryHistory} (or none) and fixed live snapshots. */
export function memorySource(history: MemoryHistory | null, live: LiveSnapshot[] = []): DashboardSource {
  return {
    history,
    live: {
      list: async () => live,
      get: async (domain) => live.find((s) => s.domain === domain),
    },
  };
}
