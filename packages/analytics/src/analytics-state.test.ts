import v8 from 'node:v8';
import type { RequestRecord } from '@proxyd/proxy-core';
import { Value } from 'typebox/value';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { type Analytics, createAnalytics } from './analytics.js';
import { type AnalyticsState, mergeAnalyticsStates } from './analytics-state.js';
import type { VitalName } from './domain-collector.js';
import { AnalyticsError } from './errors.js';
import { openCountryLookup } from './geoip.js';
import { hashString } from './hash.js';
import { type AnalyticsSnapshot, AnalyticsSnapshotSchema } from './snapshot.js';

// One Analytics fed a sequence of requests and beacons against the same
// sequence split over 2 or 3 Analytics (the workers): merging the workers'
// exported states must give the one collector's snapshots.

function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1_664_525) + 1_013_904_223) >>> 0;
    return s / 2 ** 32;
  };
}

function lognormal(rand: () => number, median: number, sigma: number): number {
  const u1 = rand() || 1e-12;
  const z = Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * rand());
  return median * Math.exp(sigma * z);
}

/** Linear interpolation between closest ranks (what the digests approximate). */
function exactPercentile(sorted: readonly number[], q: number): number {
  const pos = q * (sorted.length - 1);
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return (sorted[lo] as number) + ((sorted[hi] as number) - (sorted[lo] as number)) * (pos - lo);
}

type Event =
  | { kind: 'request'; at: number; record: RequestRecord }
  | { kind: 'beacon'; at: number; host: string; metric: VitalName; value: number };

const T0 = Date.parse('2026-03-01T10:00:00.250Z');
const DOMAINS = ['a.example', 'b.example', 'c.example'];
/** Seen by one worker only (the last one). */
const SOLO = 'solo.example';
/** 54,000 distinct client IPs. */
const CROWD = 'crowd.example';
/** A path of a.example that only the first worker sees. */
const ONLY_FIRST = '/only-first';
const STATUSES = [200, 200, 200, 200, 201, 301, 304, 404, 404, 500, 503, 101, 0, 700];
const VITALS: Record<VitalName, { median: number; sigma: number }> = {
  lcp: { median: 2000, sigma: 0.6 },
  cls: { median: 0.05, sigma: 1.0 },
  inp: { median: 150, sigma: 0.8 },
};

function record(host: string, path: string, at: number, over: Partial<RequestRecord>): RequestRecord {
  return {
    host,
    domain: host,
    analytics: true,
    method: 'GET',
    path,
    status: 200,
    bytesSent: 0,
    durationMs: 1,
    clientIp: '127.0.0.1',
    referer: undefined,
    userAgent: undefined,
    contentType: 'text/html',
    startedAt: at,
    ...over,
  };
}

/**
 * About two hours of traffic: 6,000 requests spread over two hours (plus
 * 54,000 for {@link CROWD}), then a 2,000-request burst in the last minute;
 * 24,000 beacons (a.example and b.example); 21 paths per domain and 8
 * referrer hosts (fewer keys than the top lists hold, so those are exact) and
 * client IPs from a pool of 1,500 whose countries are at most 12.
 */
function traffic(ips: readonly string[]): Event[] {
  const rand = seeded(2026);
  const events: Event[] = [];
  let at = T0;
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T;
  const referrers = [
    ...Array.from({ length: 8 }, (_, i) => `https://ref${i}.example.net/x?${i}`),
    undefined,
    'not a url',
  ];
  for (let i = 0; i < 8000; i++) {
    at += i < 6000 ? Math.floor(rand() * 2400) : Math.floor(rand() * 30);
    const host = rand() < 0.02 ? SOLO : pick(DOMAINS);
    // Skewed paths, so the top lists have an order to get right.
    const path = host === 'a.example' && rand() < 0.01 ? ONLY_FIRST : `/p${Math.floor(rand() ** 2 * 20)}`;
    const referer = rand() < 0.1 ? `http://${host}/self` : pick(referrers);
    events.push({
      kind: 'request',
      at,
      record: record(host, path, at, {
        status: pick(STATUSES),
        bytesSent: Math.floor(rand() * 50_000),
        clientIp: pick(ips),
        referer,
      }),
    });
    // A crowd: 9 distinct private IPs (no country) a request, 54,000 in all, past HyperLogLog's
    // linear-counting range (2.5 × 16,384), so the estimate reads every register's value.
    for (let c = 0; c < 9 && i < 6000; c++) {
      const k = i * 9 + c;
      const ip = `10.${k >>> 16}.${(k >>> 8) & 255}.${k & 255}`;
      events.push({ kind: 'request', at, record: record(CROWD, '/', at, { clientIp: ip, bytesSent: 1 }) });
    }
    for (let b = 0; b < 6 && i % 2 === 0; b++) {
      const metric = pick(['lcp', 'cls', 'inp'] as const);
      const { median, sigma } = VITALS[metric];
      events.push({
        kind: 'beacon',
        at,
        host: rand() < 0.7 ? 'a.example' : 'b.example',
        metric,
        value: lognormal(rand, median, sigma),
      });
    }
  }
  return events;
}

/** A split of the events over `workers` Analytics: which worker gets event `i`. */
interface Split {
  name: string;
  workers: number;
  worker(i: number, event: Event, rand: () => number): number;
}

function routed(inner: (i: number, workers: number, rand: () => number) => number): Split['worker'] {
  return function (this: Split, i, event, rand) {
    if (event.kind === 'request' && event.record.host === SOLO) return this.workers - 1;
    if (event.kind === 'request' && event.record.path === ONLY_FIRST) return 0;
    return inner(i, this.workers, rand);
  };
}

const SPLITS: Split[] = [
  { name: 'round-robin over 2', workers: 2, worker: routed((i, n) => i % n) },
  { name: 'round-robin over 3', workers: 3, worker: routed((i, n) => i % n) },
  { name: 'random over 2', workers: 2, worker: routed((_, n, rand) => Math.floor(rand() * n)) },
  { name: 'random over 3', workers: 3, worker: routed((_, n, rand) => Math.floor(rand() * n)) },
];

/** The analytics clock of every instance (moved by {@link feed}). */
let clock = T0;
const opened: Analytics[] = [];

async function open(maxDomains?: number): Promise<Analytics> {
  const a = await createAnalytics({
    cycleMs: 3_600_000, // no timer flush during a test: the tests run the cycle themselves
    now: () => clock,
    ...(maxDomains === undefined ? {} : { maxDomains }),
  });
  opened.push(a);
  return a;
}

/**
 * Feeds events in order to `target(i)`. A queued record is counted at the
 * clock of its drain (the next turn of the event loop in the daemon), so
 * every instance drains (a read does) before the clock moves.
 */
function feed(events: readonly Event[], all: readonly Analytics[], target: (i: number, e: Event) => Analytics): void {
  events.forEach((e, i) => {
    if (e.at !== clock) {
      for (const a of all) a.droppedRequests();
      clock = e.at;
    }
    const a = target(i, e);
    if (e.kind === 'request') a.hooks.onRequest?.(e.record);
    else a.collector.observe(e.host, e.metric, e.value);
  });
  for (const a of all) a.droppedRequests();
}

function withoutVitals(list: readonly AnalyticsSnapshot[]): Omit<AnalyticsSnapshot, 'web_vitals'>[] {
  return list.map(({ web_vitals: _, ...rest }) => rest);
}

const Q = [
  ['p50', 0.5],
  ['p75', 0.75],
  ['p95', 0.95],
  ['p99', 0.99],
] as const;

beforeEach(() => {
  // tdigest shuffles centroids with Math.random at each compress: seeded so a run is repeatable.
  vi.spyOn(Math, 'random').mockImplementation(seeded(11));
});

afterEach(() => {
  vi.restoreAllMocks();
});

afterAll(async () => {
  for (const a of opened) await a.close();
});

describe('mergeAnalyticsStates: workers merged = one collector fed everything', () => {
  let events: Event[];
  /** Every beacon value per domain and metric, sorted (the exact percentiles). */
  const observed = new Map<string, number[]>();

  beforeAll(async () => {
    // A client IP pool whose countries are at most 12 (fewer than the 16 the list holds), plus IPs with none.
    const country = await openCountryLookup();
    const rand = seeded(99);
    const countries = new Set<string>();
    const ips: string[] = [];
    while (ips.length < 1500) {
      const n = (Math.floor(rand() * 223) + 1) * 2 ** 24 + Math.floor(rand() * 2 ** 24);
      const ip = `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
      const c = country(ip, hashString(ip));
      if (c !== null && !countries.has(c)) {
        if (countries.size >= 12) continue;
        countries.add(c);
      }
      ips.push(ip);
    }
    expect(countries.size).toBe(12);
    events = traffic(ips);
    for (const e of events) {
      if (e.kind !== 'beacon') continue;
      const key = `${e.host} ${e.metric}`;
      observed.set(key, [...(observed.get(key) ?? []), e.value]);
    }
    for (const values of observed.values()) values.sort((a, b) => a - b);
  });

  for (const split of SPLITS) {
    it(`${split.name}: exact windows, visitors, top lists, status classes, bytes; vitals within 5 %`, async () => {
      clock = T0;
      const single = await open();
      const workers = await Promise.all(Array.from({ length: split.workers }, () => open()));
      const all = [single, ...workers];
      feed(events, all, () => single);
      clock = T0;
      const rand = seeded(5);
      feed(events, all, (i, e) => workers[split.worker(i, e, rand)] as Analytics);
      // Every worker saw traffic; SOLO and ONLY_FIRST reached one worker each.
      const states = workers.map((w) => w.exportState());
      for (const s of states) expect(s.domains.length).toBeGreaterThan(0);
      expect(states.filter((s) => s.domains.some((d) => d.domain === SOLO))).toHaveLength(1);
      expect(
        states.filter((s) => s.domains.find((d) => d.domain === 'a.example')?.pages.keys.includes(ONLY_FIRST)),
      ).toHaveLength(1);

      // The aggregation cycle, everywhere (the one collector shows flushed vitals only).
      for (const a of all) a.flush();
      const end = clock;
      // At the end, mid-window, at the 1-minute edge, and later as the 60-minute window drains.
      for (const at of [end, end + 30_000, end + 59_500, end + 61_000, end + 1_800_000, end + 3_600_000]) {
        clock = at;
        const want = single.list();
        const merged = mergeAnalyticsStates(
          workers.map((w) => w.exportState()),
          at,
        );
        const got = merged.list();
        expect(withoutVitals(got)).toEqual(withoutVitals(want));
        for (const s of got) expect(Value.Check(AnalyticsSnapshotSchema, s)).toBe(true);
        expect(merged.droppedRequests()).toBe(0);
        expect(merged.get('A.EXAMPLE')).toEqual(got.find((s) => s.domain === 'a.example'));
        expect(merged.get('unknown.example')).toBeUndefined();
      }
      // The windows were not trivially equal: something in both, then decayed.
      clock = end;
      const a = single.get('a.example') as AnalyticsSnapshot;
      expect(a.page_views_1m).toBeGreaterThan(500);
      expect(a.page_views_60m).toBeGreaterThan(a.page_views_1m);
      expect(a.top_pages.map((p) => p.path)).toContain('/p0');
      expect(a.countries.length).toBeGreaterThan(5);
      expect(a.referrers).toHaveLength(8);
      expect(Math.abs((single.get(CROWD)?.unique_visitors as number) - 54_000)).toBeLessThan(54_000 * 0.02);

      // Web Vitals: both the one digest and the merged centroids within 5 % of the exact
      // percentile (the README bound for one digest), so within ~10 % of each other.
      const merged = mergeAnalyticsStates(workers.map((w) => w.exportState()));
      for (const domain of ['a.example', 'b.example']) {
        const one = (single.get(domain) as AnalyticsSnapshot).web_vitals;
        const many = (merged.get(domain) as AnalyticsSnapshot).web_vitals;
        for (const metric of ['lcp', 'cls', 'inp'] as const) {
          const values = observed.get(`${domain} ${metric}`) as number[];
          for (const [key, q] of Q) {
            const exact = exactPercentile(values, q);
            expect(Math.abs(many[metric][key] - exact) / exact, `${domain} ${metric} ${key} merged`).toBeLessThan(0.05);
            expect(Math.abs(one[metric][key] - exact) / exact, `${domain} ${metric} ${key} one`).toBeLessThan(0.05);
          }
        }
      }
      for (const s of merged.list()) {
        if (s.domain === 'a.example' || s.domain === 'b.example') continue;
        expect(s.web_vitals.lcp).toEqual({ p50: 0, p75: 0, p95: 0, p99: 0 });
      }
    });
  }

  it('the merged vitals include pending observations: a worker that never flushed still counts', async () => {
    clock = T0;
    const workers = [await open(), await open()];
    for (let i = 0; i < 40; i++) workers[0]?.collector.observe('v.example', 'lcp', 1000);
    for (let i = 0; i < 40; i++) workers[1]?.collector.observe('v.example', 'lcp', 3000);
    // Nothing flushed: each worker's own read shows 0.0, the merge shows the 80 observations.
    expect(workers[0]?.get('v.example')?.web_vitals.lcp.p50).toBe(0);
    const lcp = mergeAnalyticsStates(workers.map((w) => w.exportState())).get('v.example')?.web_vitals.lcp;
    expect(lcp?.p50).toBeCloseTo(2000);
    expect(lcp?.p99).toBe(3000);
    expect(lcp?.p75).toBeGreaterThan(2000);
    // A flushed worker and a pending one.
    workers[0]?.flush();
    expect(mergeAnalyticsStates(workers.map((w) => w.exportState())).get('v.example')?.web_vitals.lcp).toEqual(lcp);
  });

  it('one state with nothing pending merges to exactly its own snapshot, vitals included', async () => {
    clock = T0;
    const a = await open();
    feed(events.slice(0, 3000), [a], () => a);
    a.flush();
    const list = a.list();
    expect(list.some((s) => s.web_vitals.inp.p95 > 0)).toBe(true);
    expect(mergeAnalyticsStates([a.exportState()], clock).list()).toEqual(list);
  });
});

describe('exportState', () => {
  it('survives a structured clone (v8.serialize, as Node IPC "advanced") and gives the same merge', async () => {
    clock = T0;
    const a = await open();
    const b = await open();
    const rand = seeded(3);
    for (let i = 0; i < 500; i++) {
      clock = T0 + i * 100;
      const w = rand() < 0.5 ? a : b;
      w.hooks.onRequest?.(
        record('clone.example', `/p${i % 7}`, clock, {
          clientIp: `198.51.100.${i % 50}`,
          referer: 'https://r.example/',
        }),
      );
      w.collector.observe('clone.example', 'cls', rand());
      w.droppedRequests();
    }
    const states = [a.exportState(), b.exportState()];
    const cloned = states.map((s) => v8.deserialize(v8.serialize(s)) as AnalyticsState);
    expect(cloned).toEqual(states);
    expect(cloned[0]?.domains[0]?.visitors).toBeInstanceOf(Uint8Array);
    const merged = mergeAnalyticsStates(cloned, clock).list();
    expect(merged).toEqual(mergeAnalyticsStates(states, clock).list());
    expect(merged[0]?.page_views_1m).toBe(500);
    expect(merged[0]?.unique_visitors).toBe(50);
    expect(merged[0]?.web_vitals.cls.p50).toBeGreaterThan(0);
  });

  it('does not flush or change the live collectors; the state is a copy', async () => {
    clock = T0;
    const a = await open();
    for (let i = 0; i < 150; i++) {
      a.hooks.onRequest?.(record('live.example', `/p${i % 3}`, clock, { clientIp: `203.0.113.${i % 9}` }));
      a.collector.observe('live.example', 'lcp', 1000 + i);
    }
    // 150 observations: 100 flushed (the buffer filled), 50 pending.
    const before = a.list();
    const state = a.exportState();
    expect(state.domains[0]?.vitals?.lcp.pending).toHaveLength(50);
    expect(a.list()).toEqual(before);
    expect(a.exportState()).toEqual(state);
    // Changing the exported copy changes nothing live.
    const d = state.domains[0];
    d?.visitors.fill(31);
    d?.views1m.fill(7);
    d?.status.fill(1e6);
    d?.vitals?.lcp.means.fill(0);
    d?.pages.counts.fill(1e6);
    expect(a.list()).toEqual(before);
    // The pending 50 are still pending: the cycle flush moves the percentiles.
    a.flush();
    expect(a.get('live.example')?.web_vitals.lcp.p99).toBeGreaterThan(before[0]?.web_vitals.lcp.p99 as number);
  });

  it('drains queued records first, like a read', async () => {
    clock = T0;
    const a = await open();
    a.hooks.onRequest?.(record('queued.example', '/', clock, {}));
    expect(a.collector.get('queued.example')).toBeUndefined();
    expect(a.exportState().domains.map((d) => d.domain)).toEqual(['queued.example']);
  });
});

describe('mergeAnalyticsStates: the domain cap', () => {
  it('keeps the domains seen first, like one collector, and counts the rest as dropped', async () => {
    clock = T0;
    const single = await open(3);
    const w0 = await open(3);
    const w1 = await open(3);
    // [time offset, host, worker]: d0, d1, d2 come first; d3 and d4 later, each tracked by a
    // worker that has room; d5 past w0's own cap.
    const plan: Array<[number, string, Analytics]> = [
      [0, 'd0.example', w0],
      [1000, 'd1.example', w1],
      [2000, 'd2.example', w1],
      [3000, 'd3.example', w0],
      [4000, 'd1.example', w0],
      [5000, 'd4.example', w1],
      [6000, 'd3.example', w0],
      [7000, 'd5.example', w0],
      [8000, 'd2.example', w1],
      [9000, 'd0.example', w0],
    ];
    const send = (offset: number, host: string, to: Analytics[]) => {
      clock = T0 + offset;
      for (const a of to) {
        a.hooks.onRequest?.(record(host, '/', clock, {}));
        a.droppedRequests();
      }
    };
    for (const [offset, host, worker] of plan) send(offset, host, [single, worker]);
    expect(w0.exportState().domains).toHaveLength(3);
    const merged = mergeAnalyticsStates([w0.exportState(), w1.exportState()], clock);
    expect(merged.list()).toEqual(single.list());
    expect(merged.list().map((s) => s.domain)).toEqual(['d0.example', 'd1.example', 'd2.example']);
    expect(merged.get('d3.example')).toBeUndefined();
    // d3 twice and d4 once (left out by the merge), d5 once (w0's own cap).
    expect(single.droppedRequests()).toBe(4);
    expect(merged.droppedRequests()).toBe(4);
    // A one-domain export merges to the same snapshot, and the cap still leaves d3 out.
    const one = (domain: string) => mergeAnalyticsStates([w0.exportState(domain), w1.exportState(domain)], clock);
    expect(one('D1.example').list()).toEqual([merged.get('d1.example')]);
    expect(one('d3.example').get('d3.example')).toBeUndefined();
    expect(one('d3.example').droppedRequests()).toBe(4);
    expect(w0.exportState('nope.example').domains).toEqual([]);
    // The documented limit: a request a worker drops past its own cap stays dropped, even for
    // a domain the merge keeps (w0 tracks d0, d3, d1: not d2).
    send(10_000, 'd2.example', [single, w0]);
    const after = mergeAnalyticsStates([w0.exportState(), w1.exportState()], clock);
    expect(after.get('d2.example')?.page_views_1m).toBe((single.get('d2.example')?.page_views_1m as number) - 1);
    expect(after.droppedRequests()).toBe(single.droppedRequests() + 1);
  });

  it('ties in first-seen time keep the names that sort first; the smallest cap of the states applies', () => {
    const state = (maxDomains: number, domains: string[]): AnalyticsState => ({
      version: 1,
      maxDomains,
      droppedRequests: 1,
      tracked: {
        domains,
        firstSeenMs: new Float64Array(domains.length).fill(T0),
        requests: new Float64Array(domains.length).fill(10),
      },
      domains: domains.map((d) => emptyDomain(d)),
    });
    const merged = mergeAnalyticsStates([state(5, ['c.example', 'a.example']), state(2, ['b.example', 'a.example'])]);
    expect(merged.list().map((s) => s.domain)).toEqual(['a.example', 'b.example']);
    // 1 + 1 dropped by the states, 10 counted for c.example.
    expect(merged.droppedRequests()).toBe(12);
  });

  it('refuses a state of another version or shape (ANALYTICS_BAD_STATE)', () => {
    const tracked = { domains: [], firstSeenMs: new Float64Array(0), requests: new Float64Array(0) };
    const good = { version: 1, maxDomains: 1, droppedRequests: 0, tracked, domains: [] } as AnalyticsState;
    expect(mergeAnalyticsStates([good]).list()).toEqual([]);
    for (const bad of [
      { ...good, version: 2 },
      { ...good, tracked: { ...tracked, requests: new Float64Array(1) } },
      { ...good, domains: undefined },
      null,
    ]) {
      expect(() => mergeAnalyticsStates([bad as unknown as AnalyticsState])).toThrow(AnalyticsError);
      try {
        mergeAnalyticsStates([bad as unknown as AnalyticsState]);
      } catch (err) {
        expect((err as AnalyticsError).code).toBe('ANALYTICS_BAD_STATE');
      }
    }
    expect(mergeAnalyticsStates([]).list()).toEqual([]);
  });
});

/** A domain with no request: what a collector exports for one that only got a beacon. */
function emptyDomain(domain: string): AnalyticsState['domains'][number] {
  const top = (buckets: number) => ({ keys: [], counts: new Float64Array(0), buckets: new Uint32Array(buckets) });
  return {
    domain,
    views1m: new Uint32Array(120),
    views60m: new Uint32Array(240),
    visitors: new Uint8Array(10_241),
    pages: top(256),
    referrers: top(128),
    countries: top(128),
    status: new Float64Array(6),
    bytes: 0,
    vitals: null,
  };
}
