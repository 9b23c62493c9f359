import { createHash } from 'node:crypto';
import type { FastifyBaseLogger, InjectOptions } from 'fastify';
import { expect } from 'vitest';
import { type AdminAppOptions, createAdminApp } from './app.js';
import type {
  AdminRoute,
  AnalyticsPort,
  AnalyticsSnapshot,
  AuditEvent,
  CachePort,
  CertificateInfo,
  CertificatesPort,
  DiscoveryPort,
  DiscoveryStatus,
  ReloadPort,
  RouteStorePort,
  SnapshotResult,
  SnapshotWrite,
} from './ports.js';

/** An in-memory route store with the semantics DESIGN.md gives the real one (tests only). */
export class MemoryRouteStore implements RouteStorePort {
  readonly table = new Map<string, AdminRoute>();
  writes = 0;

  list(): AdminRoute[] {
    return [...this.table.values()]
      .map((r) => ({ ...r }))
      .sort((a, b) => (a.domain < b.domain ? -1 : a.domain > b.domain ? 1 : 0));
  }

  async upsert(route: { domain: string; upstream: string; tls: boolean; source: string | null }): Promise<AdminRoute> {
    this.writes++;
    // Canonical upstream, as the real store keeps it: the host lowercased.
    const stored: AdminRoute = {
      ...route,
      upstream: route.upstream.toLowerCase(),
      rate_limit_rps: null,
      under_attack: false,
    };
    this.table.set(route.domain, stored);
    return { ...stored };
  }

  async remove(domain: string): Promise<boolean> {
    this.writes++;
    return this.table.delete(domain);
  }

  async applySnapshot(snapshot: SnapshotWrite): Promise<SnapshotResult> {
    this.writes++;
    const wanted = new Set(snapshot.routes.map((r) => r.domain));
    let removed = 0;
    for (const [domain, route] of this.table) {
      if (route.source === snapshot.source && !wanted.has(domain)) {
        this.table.delete(domain);
        removed++;
      }
    }
    for (const r of snapshot.routes) {
      this.table.set(r.domain, {
        ...r,
        upstream: r.upstream.toLowerCase(),
        source: snapshot.source,
        rate_limit_rps: null,
        under_attack: false,
      });
    }
    // The README's route_hash: lines sorted by domain, upstream lowercased, every line ending in "\n".
    const sorted = [...snapshot.routes].sort((a, b) => (a.domain < b.domain ? -1 : a.domain > b.domain ? 1 : 0));
    const text = sorted.map((r) => `${r.domain} ${r.upstream.toLowerCase()} ${r.tls}\n`).join('');
    const route_hash = createHash('sha256').update(`${snapshot.source}\n${text}`).digest('hex');
    return {
      source: snapshot.source,
      applied: snapshot.routes.length,
      removed,
      total_routes: this.table.size,
      route_hash,
    };
  }
}

/** A fixed analytics reader. */
export function memoryAnalytics(snapshots: AnalyticsSnapshot[]): AnalyticsPort {
  return {
    list: () => snapshots,
    get: (domain) => snapshots.find((s) => s.domain === domain),
  };
}

/** A sample analytics snapshot for `domain`. */
export function sampleSnapshot(domain: string): AnalyticsSnapshot {
  const p = { p50: 1, p75: 2, p95: 3, p99: 4 };
  return {
    domain,
    page_views_1m: 2,
    page_views_60m: 5,
    unique_visitors: 1,
    top_pages: [{ path: '/', views: 5 }],
    referrers: [{ domain: 'search.example', count: 1 }],
    countries: [{ country: 'DE', count: 5 }],
    status_codes: { s1xx: 0, s2xx: 5, s3xx: 0, s4xx: 0, s5xx: 0, other: 0 },
    bytes_sent: 1234,
    web_vitals: { lcp: p, cls: { p50: 0.01, p75: 0.02, p95: 0.05, p99: 0.1 }, inp: p },
    timestamp: '2026-11-22T21:00:00Z',
  };
}

/** A certificate manager that answers the given rows (copies, so a test can compare); counts its calls. */
export function memoryCertificates(rows: CertificateInfo[]): CertificatesPort & { calls: number } {
  const port = {
    calls: 0,
    list: async () => {
      port.calls++;
      return rows.map((r) => ({ ...r }));
    },
  };
  return port;
}

/** A sample managed name: a valid certificate from an ACME CA, renewal due in 60 days. */
export function sampleCertificate(name: string, overrides: Partial<CertificateInfo> = {}): CertificateInfo {
  return {
    name,
    issuer: 'https://acme.example/directory',
    notAfter: Date.UTC(2027, 1, 20, 21, 0, 0),
    status: 'valid',
    lastError: null,
    nextAttemptAt: Date.UTC(2027, 0, 21, 21, 0, 0),
    ...overrides,
  };
}

/** A docker source that answers the given status (a copy, so a test can compare); counts its calls. */
export function memoryDiscovery(status: DiscoveryStatus): DiscoveryPort & { calls: number } {
  const port = {
    calls: 0,
    status: async () => {
      port.calls++;
      return { ...status, warnings: status.warnings.map((w) => ({ ...w })) };
    },
  };
  return port;
}

/** A sample discovery state: connected to Docker's socket, three containers, one invalid label. */
export function sampleDiscovery(overrides: Partial<DiscoveryStatus> = {}): DiscoveryStatus {
  return {
    enabled: true,
    socket: 'unix:///var/run/docker.sock',
    connected: true,
    apiVersion: '1.41',
    lastError: null,
    containers: 3,
    warnings: [{ container: 'web-1 (3f2a9c1e4b7d)', label: 'proxy.port', reason: '"80x" is not a port 1-65535' }],
    ...overrides,
  };
}

/** A cache holding the given keys; `purge` removes one. */
export class MemoryCache implements CachePort {
  readonly keys: Set<string>;
  constructor(
    keys: string[],
    readonly enabled = true,
  ) {
    this.keys = new Set(keys);
  }
  purge(key: string): boolean {
    return this.keys.delete(key);
  }
}

/** A reload trigger that answers from a queue of results. */
export class ScriptedReload implements ReloadPort {
  calls = 0;
  constructor(private readonly results: Array<{ ok: true; message: string } | { ok: false; errorText: string }>) {}
  async reload() {
    this.calls++;
    return this.results.shift() ?? { ok: true as const, message: 'reloaded' };
  }
}

/** Collects audit events. */
export function auditLog(): { events: AuditEvent[]; sink: (e: AuditEvent) => void } {
  const events: AuditEvent[] = [];
  return { events, sink: (e) => events.push(e) };
}

/** A controllable clock in ms. */
export function manualClock(start = 1_800_000_000_000): { now: () => number; advance(ms: number): void } {
  let t = start;
  return { now: () => t, advance: (ms) => (t += ms) };
}

/** The bearer token test apps use. */
export const TOKEN = 'test-token-0123456789';
/** Headers that authenticate against a test app. */
export const AUTH = { authorization: `Bearer ${TOKEN}` } as const;

/** Builds an admin app over in-memory ports with a manual clock and an audit log. */
export function testApp(overrides: Partial<AdminAppOptions> = {}) {
  const store = new MemoryRouteStore();
  const clock = manualClock();
  const audit = auditLog();
  const app = createAdminApp({
    routes: store,
    token: TOKEN,
    clock: clock.now,
    audit: audit.sink,
    transport: 'tcp',
    ...overrides,
  });
  return { app, store, clock, audit: audit.events };
}

/** A pino-shaped logger that keeps the error lines. */
export function errorLog(): { logger: FastifyBaseLogger; errors: unknown[][] } {
  const errors: unknown[][] = [];
  const noop = () => {};
  const logger = {
    level: 'info',
    info: noop,
    warn: noop,
    debug: noop,
    trace: noop,
    fatal: noop,
    silent: noop,
    error: (...args: unknown[]) => errors.push(args),
    child: () => logger,
  } as unknown as FastifyBaseLogger;
  return { logger, errors };
}

/**
 * Checks that an endpoint whose port method fails answers 500 `internal
 * error`, logs the error once and never sends its message: for each error
 * (an Error, a SyntaxError, one carrying an HTTP status of a client library,
 * a bare string containing `secret`), thrown synchronously and rejected.
 * `build` makes the app with a port whose one method is `method`.
 */
export async function expectPortFailuresHidden(
  secret: string,
  status: number,
  build: (method: () => never, logger: FastifyBaseLogger) => ReturnType<typeof testApp>,
  request: InjectOptions,
): Promise<void> {
  const thrown = [
    new Error(secret),
    new SyntaxError(`Unexpected token in JSON at ${secret}`), // not a 400 "invalid JSON": the request was fine
    Object.assign(new Error(secret), { statusCode: status }), // a client library's error: still ours, not the caller's
    secret,
  ];
  for (const error of thrown) {
    const methods: Array<() => never> = [
      () => Promise.reject(error) as never,
      () => {
        throw error;
      },
    ];
    for (const method of methods) {
      const { logger, errors } = errorLog();
      const { app } = build(method, logger);
      const res = await app.inject(request);
      expect(res.statusCode).toBe(500);
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(res.headers['access-control-allow-origin']).toBe('null');
      expect(res.json()).toEqual({ error: 'internal error' });
      expect(res.body).not.toContain(secret);
      expect(errors).toHaveLength(1);
      expect(errors[0]?.[0]).toEqual({ err: error, target: 'proxy::admin' });
      await app.close();
    }
  }
}

/**
 * Checks that GET `url` needs the token (401 without or with a wrong one, the
 * port never asked) and shares the rate limit (429 with `Retry-After` past one
 * request a minute). `build` makes the app with a port counting its `calls`
 * and the given rate limit.
 */
export async function expectAuthAndRateLimit(
  url: string,
  build: (rateLimit: NonNullable<AdminAppOptions['rateLimit']>) => {
    app: ReturnType<typeof testApp>['app'];
    port: { calls: number };
  },
): Promise<void> {
  const { app, port } = build({ max: 1, windowMs: 60_000 });
  for (const headers of [{}, { authorization: 'Bearer wrong' }]) {
    const res = await app.inject({ method: 'GET', url, headers });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual({ error: 'unauthorized' });
  }
  expect(port.calls).toBe(0);
  const get = { method: 'GET' as const, url, headers: AUTH };
  expect((await app.inject(get)).statusCode).toBe(200);
  const limited = await app.inject(get);
  expect(limited.statusCode).toBe(429);
  expect(limited.json()).toEqual({ error: 'rate limit exceeded' });
  expect(limited.headers['retry-after']).toBe('60');
  expect(port.calls).toBe(1);
  await app.close();
}
