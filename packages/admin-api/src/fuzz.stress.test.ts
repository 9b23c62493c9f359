import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import { isIPv6 } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RouteStore } from '@proxyd/route-store';
import fc from 'fast-check';
import type { InjectOptions } from 'fastify';
import { Registry } from 'prom-client';
import { afterAll, describe, expect, it } from 'vitest';
import { type AdminApp, createAdminApp } from './app.js';
import {
  MemoryCache,
  MemoryRouteStore,
  memoryAnalytics,
  memoryCertificates,
  memoryDiscovery,
  ScriptedReload,
  sampleCertificate,
  sampleDiscovery,
  sampleSnapshot,
  TOKEN,
} from './memory-ports.test-helpers.js';
import type { AdminRoute, RouteStorePort } from './ports.js';

// ---------------------------------------------------------------------------
// Oracles, written from the spec and the README, independently of
// domain.ts / upstream.ts / source.ts / auth.ts and of the endpoints.
// ---------------------------------------------------------------------------

const BODY_LIMIT = 65_536;
/** Methods whose body the server reads (and limits) even where it is ignored. */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
// Issue 15: "_" is valid in names, in the admin API as in the Proxyfile (DNS and Caddy allow it).
const ORACLE_DOMAIN = /^(\*\.)?([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*$/;
function oracleDomain(d: unknown): d is string {
  return typeof d === 'string' && d.length <= 253 && ORACLE_DOMAIN.test(d.toLowerCase());
}
function oracleUpstream(u: unknown): u is string {
  if (typeof u !== 'string') return false;
  const m = /^(?:\[([^\]]+)\]|([A-Za-z0-9_.-]+)):([1-9][0-9]{0,4})$/.exec(u);
  if (!m || Number(m[3]) > 65535) return false;
  // An IPv6 zone ("%eth0") names an interface of this host only: not an upstream address.
  if (m[1] !== undefined) return isIPv6(m[1]) && !m[1].includes('%');
  const host = m[2] as string;
  return host.length <= 253 && host.split('.').every((l) => /^[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?$/.test(l));
}
const oracleSourceTag = (s: unknown): s is string => typeof s === 'string' && /^[\x21-\x7e]{1,128}$/.test(s);
const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
const onlyKeys = (o: Record<string, unknown>, allowed: string[]) => Object.keys(o).every((k) => allowed.includes(k));

type Desired = { domain: string; upstream: string; tls: boolean };

/** A valid POST /routes body, or undefined. */
function oracleRouteCreate(body: unknown): (Desired & { source: string | null }) | undefined {
  if (!isObject(body) || !onlyKeys(body, ['domain', 'upstream', 'tls', 'source'])) return undefined;
  const { domain, upstream, tls, source } = body;
  if (!oracleDomain(domain) || !oracleUpstream(upstream) || typeof tls !== 'boolean') return undefined;
  if (source !== undefined && source !== null && !oracleSourceTag(source)) return undefined;
  return { domain, upstream, tls, source: source ?? null };
}

/** A valid PUT /routes/snapshot body (source required, routes optional, no duplicate domain), or undefined. */
function oracleSnapshot(body: unknown): { source: string; routes: Desired[] } | undefined {
  if (!isObject(body) || !onlyKeys(body, ['source', 'routes']) || !oracleSourceTag(body.source)) return undefined;
  if (body.routes !== undefined && !Array.isArray(body.routes)) return undefined;
  const routes: Desired[] = [];
  const seen = new Set<string>();
  for (const entry of (body.routes ?? []) as unknown[]) {
    if (!isObject(entry) || !onlyKeys(entry, ['domain', 'upstream', 'tls'])) return undefined;
    const { domain, upstream, tls } = entry;
    if (!oracleDomain(domain) || !oracleUpstream(upstream) || typeof tls !== 'boolean') return undefined;
    if (seen.has(domain.toLowerCase())) return undefined;
    seen.add(domain.toLowerCase());
    routes.push({ domain, upstream, tls });
  }
  return { source: body.source, routes };
}

/** `Authorization: Bearer <token>`, scheme in any case. */
const oracleBearer = (h: string | undefined) =>
  h !== undefined && /^bearer[ \t]+/i.test(h) && h.replace(/^bearer[ \t]+/i, '').trim() === TOKEN;

/**
 * An independent model of the route set: one route per lowercase domain, a
 * write replaces the domain's route whoever owned it, a snapshot replaces
 * exactly what its source owns. Upstreams are canonical (lowercase).
 */
class RouteModel {
  readonly routes = new Map<string, { upstream: string; tls: boolean; source: string | null }>();

  upsert(r: Desired & { source: string | null }): AdminRoute {
    const domain = r.domain.toLowerCase();
    this.routes.set(domain, { upstream: r.upstream.toLowerCase(), tls: r.tls, source: r.source });
    return this.view(domain);
  }

  remove(domain: string): boolean {
    return this.routes.delete(domain);
  }

  snapshot(source: string, desired: Desired[]) {
    const wanted = new Map(desired.map((r) => [r.domain.toLowerCase(), r]));
    let removed = 0;
    for (const [domain, route] of this.routes) {
      if (route.source === source && !wanted.has(domain)) {
        this.routes.delete(domain);
        removed++;
      }
    }
    for (const [domain, r] of wanted)
      this.routes.set(domain, { upstream: r.upstream.toLowerCase(), tls: r.tls, source });
    const lines = [...wanted]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([domain, r]) => `${domain} ${r.upstream.toLowerCase()} ${r.tls}\n`);
    const route_hash = createHash('sha256')
      .update(`${source}\n${lines.join('')}`)
      .digest('hex');
    return { source, applied: wanted.size, removed, total_routes: this.routes.size, route_hash };
  }

  view(domain: string): AdminRoute {
    const r = this.routes.get(domain);
    if (r === undefined) throw new Error(`model has no ${domain}`);
    return { domain, upstream: r.upstream, tls: r.tls, rate_limit_rps: null, under_attack: false, source: r.source };
  }

  list(): AdminRoute[] {
    return [...this.routes.keys()].sort().map((d) => this.view(d));
  }
}

interface FuzzRequest {
  method: string;
  path: string;
  query: string;
  headers: Partial<Record<'authorization' | 'content-type' | 'accept' | 'x-random', string>>;
  body: string | undefined;
}

/** What the oracle expects: an exact status, and for a success the model change and the exact body. */
interface Prediction {
  status: number;
  apply?: (model: RouteModel) => unknown;
}

/**
 * The request target as the server receives it: over a socket the raw path;
 * through `inject()` the path light-my-request sends, i.e. resolved as a
 * WHATWG URL (dot segments removed; a leading "//" kept).
 */
function received(r: FuzzRequest, transport: 'inject' | 'unix'): { path: string; target: string } {
  const raw = `${r.path}${r.query}`;
  let target = raw;
  if (transport === 'inject') {
    const u = raw.startsWith('//') ? new URL(`http://localhost${raw}`) : new URL(raw, 'http://localhost');
    target = u.pathname + u.search;
  }
  const q = target.indexOf('?');
  return { path: q < 0 ? target : target.slice(0, q), target };
}

function parseJson(text: string | undefined): { ok: true; value: unknown } | { ok: false } {
  if (text === undefined || text.length === 0) return { ok: false };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

/**
 * The oracle: the exact status of a request to the route-writing endpoints
 * (and 401/405/health), or undefined for requests it does not model (their
 * only obligations: no 5xx and no change of the route table).
 */
function predict(r: FuzzRequest, transport: 'inject' | 'unix', model: RouteModel): Prediction | undefined {
  const { path } = received(r, transport);
  // A path that does not percent-decode to UTF-8 is refused before anything else.
  try {
    decodeURIComponent(path);
  } catch {
    return { status: 400 };
  }
  if ((r.method === 'GET' || r.method === 'HEAD') && path === '/health') return { status: 200 };
  if (r.method !== 'OPTIONS' && transport !== 'unix' && !oracleBearer(r.headers.authorization)) {
    return { status: 401 };
  }
  // The body is read only for methods that carry one (not GET, HEAD or PURGE), before routing.
  const contentType = r.headers['content-type'];
  const bytes = r.body === undefined ? 0 : Buffer.byteLength(r.body);
  if (BODY_METHODS.has(r.method)) {
    if (contentType === ';;') return { status: 400 };
    if (bytes > BODY_LIMIT) return { status: 413 };
  }
  if (r.method === 'OPTIONS') return { status: 405 };

  if ((r.method === 'POST' && path === '/routes') || (r.method === 'PUT' && path === '/routes/snapshot')) {
    const parsed = parseJson(r.body);
    if (!parsed.ok) return { status: 400 };
    if (r.method === 'POST') {
      const route = oracleRouteCreate(parsed.value);
      return route === undefined ? { status: 400 } : { status: 201, apply: (m) => m.upsert(route) };
    }
    const snapshot = oracleSnapshot(parsed.value);
    return snapshot === undefined
      ? { status: 400 }
      : { status: 200, apply: (m) => m.snapshot(snapshot.source, snapshot.routes) };
  }

  if (r.method === 'DELETE' && path.startsWith('/routes/')) {
    const rest = path.slice('/routes/'.length);
    if (rest.startsWith('/')) return { status: 400 };
    if (rest.includes('/')) return { status: 404 };
    const segment = decodeURIComponent(rest);
    if (segment.length === 0) return { status: 400 };
    if (Buffer.byteLength(segment, 'utf8') > 253) return { status: 414 };
    // Issue 20: a character outside ASCII is refused before lowercasing (U+212A would become "k").
    if ([...segment].some((c) => (c.codePointAt(0) ?? 0) > 0x7f)) return { status: 400 };
    const domain = segment.toLowerCase();
    if (!model.routes.has(domain)) return { status: 404 };
    return {
      status: 200,
      apply: (m) => {
        m.remove(domain);
        return { deleted: domain };
      },
    };
  }
  return undefined;
}

// ---------------------------------------------------------------------------
// Request generators.
// ---------------------------------------------------------------------------

/** A few domains every generator draws from, so writes replace, snapshots take over and deletes hit. */
const POOL = ['a.test', 'b.test', 'c.test', '*.w.test', 'd.example', 'e.example', 'snapshot'];
const poolDomain = fc.tuple(fc.constantFrom(...POOL), fc.boolean()).map(([d, upper]) => (upper ? d.toUpperCase() : d));
const unicode = fc.string({ unit: 'grapheme', maxLength: 20 });
const label = fc.stringMatching(/^[a-zA-Z0-9]([a-zA-Z0-9-]{0,8}[a-zA-Z0-9])?$/);
const domain = fc.oneof(
  { weight: 4, arbitrary: poolDomain },
  { weight: 4, arbitrary: fc.domain() },
  { weight: 2, arbitrary: fc.domain().map((d) => `*.${d}`) },
  { weight: 2, arbitrary: fc.domain().map((d) => d.toUpperCase()) },
  { weight: 1, arbitrary: fc.array(label, { minLength: 1, maxLength: 4 }).map((l) => l.join('.')) },
  { weight: 1, arbitrary: unicode },
  {
    weight: 1,
    arbitrary: fc.constantFrom('', '*', '*.', 'a..b', '-a.b', 'a-.b', 'x'.repeat(64), `${'a.'.repeat(127)}a`),
  },
  { weight: 1, arbitrary: fc.anything() },
);
const port = fc.oneof(
  fc.integer({ min: 1, max: 65535 }).map(String),
  fc.constantFrom('0', '65536', '080', '', '-1', '1e3', '99999'),
);
const upstream = fc.oneof(
  { weight: 5, arbitrary: fc.tuple(fc.domain(), port).map(([h, p]) => `${h}:${p}`) },
  { weight: 2, arbitrary: fc.tuple(fc.ipV4(), port).map(([h, p]) => `${h}:${p}`) },
  { weight: 2, arbitrary: fc.tuple(fc.ipV6(), port).map(([h, p]) => `[${h}]:${p}`) },
  { weight: 1, arbitrary: fc.tuple(fc.ipV6(), port).map(([h, p]) => `${h}:${p}`) },
  { weight: 1, arbitrary: fc.constantFrom('[fe80::1%eth0]:80', '[FE80::A%25lo]:8080', 'Host.Example:80', '[::1]:1') },
  { weight: 1, arbitrary: unicode },
  { weight: 1, arbitrary: fc.anything() },
);
const sourceTag = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom('ctl-a', 'ctl-b', 'k8s/ingress@node-1') },
  fc.stringMatching(/^[a-z0-9/@.-]{1,20}$/),
);
const source = fc.option(fc.oneof({ weight: 4, arbitrary: sourceTag }, unicode, fc.anything()), { nil: undefined });
const routeBody = fc
  .record(
    { domain, upstream, tls: fc.oneof({ weight: 5, arbitrary: fc.boolean() }, fc.anything()), source },
    { requiredKeys: [] },
  )
  .chain((r) =>
    fc.oneof(
      { weight: 5, arbitrary: fc.constant(r) },
      fc.dictionary(fc.string({ maxLength: 8 }), fc.anything()).map((extra) => ({ ...extra, ...r })),
    ),
  );
const validRoute = fc.record(
  {
    domain: fc.oneof(
      { weight: 3, arbitrary: poolDomain },
      fc.domain(),
      fc.domain().map((d) => `*.${d.toUpperCase()}`),
    ),
    upstream: fc
      .tuple(fc.oneof(fc.domain(), fc.ipV4()), fc.integer({ min: 1, max: 65535 }))
      .map(([h, p]) => `${h}:${p}`),
    tls: fc.boolean(),
    source: fc.option(sourceTag, { nil: undefined }),
  },
  { requiredKeys: ['domain', 'upstream', 'tls'] },
);
const snapshotBody = fc.record(
  {
    source: fc.oneof({ weight: 6, arbitrary: fc.constantFrom('ctl-a', 'ctl-b') }, source),
    routes: fc.array(
      fc.oneof(
        { weight: 8, arbitrary: validRoute.map(({ source: _s, ...r }) => r) },
        { weight: 2, arbitrary: routeBody },
        fc.anything(),
      ),
      { maxLength: 6 },
    ),
  },
  { requiredKeys: [] },
);
const jsonBody = fc.oneof(
  { weight: 6, arbitrary: routeBody.map((b) => JSON.stringify(b) ?? '') },
  { weight: 4, arbitrary: snapshotBody.map((b) => JSON.stringify(b) ?? '') },
  { weight: 2, arbitrary: fc.json() },
  { weight: 2, arbitrary: fc.string({ maxLength: 60 }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '',
      '{',
      '{"domain":',
      'null',
      '[]',
      '{"__proto__":{"x":1}}',
      '{"constructor":{"prototype":{}}}',
      '{"source":"ctl-a","routes":[{"domain":"a.test","upstream":"h:1","tls":true},{"domain":"A.TEST","upstream":"h:2","tls":false}]}',
    ),
  },
  { weight: 1, arbitrary: fc.integer({ min: 60_000, max: 70_000 }).map((n) => `{"domain":"${'a'.repeat(n)}"}`) },
);
const segment = fc.oneof(
  { weight: 4, arbitrary: domain.map((d) => (typeof d === 'string' ? encodeURIComponent(d) : 'x')) },
  { weight: 2, arbitrary: fc.stringMatching(/^[A-Za-z0-9._~*%-]{0,12}$/) },
  { weight: 1, arbitrary: fc.constantFrom('', '%', '%zz', '%00', '%2F', '..', '.', '%C0%AF', 'snapshot') },
  { weight: 1, arbitrary: fc.integer({ min: 250, max: 300 }).map((n) => 'A'.repeat(n)) },
  { weight: 1, arbitrary: fc.integer({ min: 80, max: 90 }).map((n) => encodeURIComponent('\u212a'.repeat(n))) },
);
const path = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      '/health',
      '/routes',
      '/routes/snapshot',
      '/metrics',
      '/analytics',
      '/certificates',
      '/discovery',
      '/reload',
      '/openapi.json',
      '/',
      '/routes/',
      '/routes//',
      '/cache/',
    ),
  },
  { weight: 3, arbitrary: segment.map((s) => `/routes/${s}`) },
  { weight: 2, arbitrary: segment.map((s) => `/analytics/${s}`) },
  {
    weight: 2,
    arbitrary: fc.tuple(segment, segment, fc.boolean()).map(([h, p, twice]) => `/cache/${h}/${twice ? '/' : ''}${p}`),
  },
  { weight: 1, arbitrary: fc.array(segment, { maxLength: 4 }).map((s) => `/${s.join('/')}`) },
);
const query = fc.option(
  fc.stringMatching(/^[a-z0-9=&%]{0,10}$/).map((q) => `?${q}`),
  { nil: '' },
);
const method = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PURGE') },
  { weight: 1, arbitrary: fc.constantFrom('PATCH', 'OPTIONS', 'HEAD', 'PROPFIND', 'LOCK', 'SEARCH', 'TRACE') },
);
const headerValue = fc.stringMatching(/^[\x21-\x7e]([\x20-\x7e]{0,38}[\x21-\x7e])?$/);
const headers = fc.record(
  {
    authorization: fc.oneof(
      { weight: 8, arbitrary: fc.constant(`Bearer ${TOKEN}`) },
      fc.constantFrom(`bearer ${TOKEN}`, `Bearer ${TOKEN}x`, 'Bearer', `Basic ${TOKEN}`, ''),
      headerValue,
    ),
    'content-type': fc.constantFrom(
      'application/json',
      'application/json; charset=utf-8',
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/octet-stream',
      '*/*',
      ';;',
    ),
    accept: fc.constantFrom('*/*', 'text/html', 'application/xml'),
    'x-random': headerValue,
  },
  { requiredKeys: [] },
);
const authorized = fc.oneof(
  { weight: 4, arbitrary: headers.map((h) => ({ ...h, authorization: `Bearer ${TOKEN}` })) },
  headers,
);
const anyRequest = fc.record({ method, path, query, headers, body: fc.option(jsonBody, { nil: undefined }) });
const postRoute = fc.record({
  method: fc.constant('POST'),
  path: fc.constant('/routes'),
  query,
  headers: authorized,
  body: fc.option(
    fc.oneof(
      { weight: 4, arbitrary: validRoute.map((b) => JSON.stringify(b)) },
      { weight: 4, arbitrary: routeBody.map((b) => JSON.stringify(b) ?? '') },
      jsonBody,
    ),
    { nil: undefined, freq: 10 },
  ),
});
const putSnapshot = fc.record({
  method: fc.constant('PUT'),
  path: fc.constant('/routes/snapshot'),
  query,
  headers: authorized,
  body: fc.option(fc.oneof({ weight: 5, arbitrary: snapshotBody.map((b) => JSON.stringify(b) ?? '') }, jsonBody), {
    nil: undefined,
    freq: 10,
  }),
});
const deleteRoute = fc.record({
  method: fc.constant('DELETE'),
  path: fc.oneof(
    { weight: 4, arbitrary: poolDomain.map((d) => `/routes/${encodeURIComponent(d)}`) },
    fc.domain().map((d) => `/routes/${d}`),
    segment.map((s) => `/routes/${s}`),
    fc.constantFrom('/routes//', '/routes//a.test', '/routes/a.test/'),
  ),
  query,
  headers: authorized,
  body: fc.option(jsonBody, { nil: undefined, freq: 4 }),
});
const request: fc.Arbitrary<FuzzRequest> = fc.oneof(
  { weight: 4, arbitrary: anyRequest },
  { weight: 3, arbitrary: postRoute },
  { weight: 2, arbitrary: putSnapshot },
  { weight: 2, arbitrary: deleteRoute },
);

// ---------------------------------------------------------------------------
// Targets: the app through inject() or over a real Unix socket.
// ---------------------------------------------------------------------------

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders | http.OutgoingHttpHeaders;
  body: string;
}

function viaInject(app: AdminApp) {
  return async (r: FuzzRequest): Promise<Answer> => {
    const options: InjectOptions = {
      method: r.method as NonNullable<InjectOptions['method']>,
      url: `${r.path}${r.query}`,
      headers: r.headers,
    };
    if (r.body !== undefined) options.payload = r.body;
    const res = await app.inject(options);
    return { status: res.statusCode, headers: res.headers, body: res.body };
  };
}

function viaSocket(socketPath: string) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const send = (r: FuzzRequest): Promise<Answer> =>
    new Promise((resolve, reject) => {
      const headers: http.OutgoingHttpHeaders = { ...r.headers };
      if (r.body !== undefined && r.body.length > 0) headers['content-length'] = Buffer.byteLength(r.body);
      const req = http.request({ socketPath, agent, method: r.method, path: `${r.path}${r.query}`, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }),
        );
      });
      req.on('error', reject);
      req.end(r.body !== undefined && r.body.length > 0 ? r.body : undefined);
    });
  return { send, close: () => agent.destroy() };
}

/** The port's routes, sorted by domain, in the admin representation. */
const listed = (store: RouteStorePort) =>
  [...store.list()].sort((a, b) => (a.domain < b.domain ? -1 : a.domain > b.domain ? 1 : 0));

const statuses = new Map<number, number>();
const exact = new Map<string, number>();
let total = 0;

/** Runs `numRuns` generated requests; after each one the store must equal the model exactly. */
async function runStream(
  label: string,
  send: (r: FuzzRequest) => Promise<Answer>,
  transport: 'inject' | 'unix',
  store: RouteStorePort,
  numRuns: number,
  seed: number,
): Promise<RouteModel> {
  const model = new RouteModel();
  await fc.assert(
    fc.asyncProperty(request, async (r) => {
      total++;
      const expected = predict(r, transport, model);
      const res = await send(r);
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      const where = `${label}: ${r.method} ${r.path.slice(0, 120)}${r.query} ${JSON.stringify(r.headers)} body ${r.body?.slice(0, 200)}`;
      expect(res.status, `${where} → ${res.body.slice(0, 200)}`).toBeGreaterThanOrEqual(200);
      expect(res.status, where).toBeLessThan(500);
      expect(res.headers['access-control-allow-origin'], where).toBe('null');
      if (res.status >= 400 && r.method !== 'HEAD' && res.headers['content-type'] !== 'text/plain; charset=utf-8') {
        const body = JSON.parse(res.body) as Record<string, unknown>;
        expect(typeof body.error === 'string' || body.purged === false, where).toBe(true);
      }
      if (expected !== undefined) {
        expect(res.status, `${where} → ${res.body.slice(0, 200)}`).toBe(expected.status);
        const key = `${r.method} ${expected.status}`;
        exact.set(key, (exact.get(key) ?? 0) + 1);
        if (expected.apply !== undefined) expect(JSON.parse(res.body), where).toEqual(expected.apply(model));
      }
      // The exact route table: unchanged unless the oracle predicted the write, then exactly that change.
      expect(listed(store), where).toEqual(model.list());
    }),
    { numRuns, seed, endOnFailure: true },
  );
  return model;
}

describe('fuzz: random and malformed admin requests against an independent oracle and route model', () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
    console.log(
      `fuzz: ${total} requests, statuses ${JSON.stringify(Object.fromEntries([...statuses].sort()))}, exact predictions ${JSON.stringify(Object.fromEntries([...exact].sort()))}`,
    );
  });

  it('3,500 requests through inject() with the in-memory store (TCP rules: bearer token)', async () => {
    const store = new MemoryRouteStore();
    const registry = new Registry();
    const app = createAdminApp({
      routes: store,
      token: TOKEN,
      transport: 'tcp',
      rateLimit: { max: Number.MAX_SAFE_INTEGER, windowMs: 60_000 },
      // The oracle predicts 401 for every wrong token; the failed-auth throttle has its own tests.
      authThrottle: { maxFailures: Number.MAX_SAFE_INTEGER },
      analytics: memoryAnalytics([sampleSnapshot('a.example')]),
      certificates: memoryCertificates([sampleCertificate('a.example')]),
      discovery: memoryDiscovery(sampleDiscovery()),
      cache: new MemoryCache(['a.example/x']),
      reload: new ScriptedReload([]),
      metrics: { render: () => registry.metrics() },
      metricsRegistry: registry,
    });
    try {
      await runStream('memory/inject', viaInject(app), 'inject', store, 3_500, 20261122);
    } finally {
      await app.close();
    }
  }, 120_000);

  it('1,000 requests through inject() with the real RouteStore and a state file; the file reopens to the model', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'admin-fuzz-'));
    dirs.push(dir);
    const stateFile = join(dir, 'routes.json');
    const { store } = await RouteStore.open({ stateFile });
    const app = createAdminApp({
      routes: store,
      token: TOKEN,
      transport: 'tcp',
      rateLimit: { max: Number.MAX_SAFE_INTEGER, windowMs: 60_000 },
      // The oracle predicts 401 for every wrong token; the failed-auth throttle has its own tests.
      authThrottle: { maxFailures: Number.MAX_SAFE_INTEGER },
      cache: new MemoryCache(['a.test/x']),
      reload: new ScriptedReload([]),
    });
    try {
      const model = await runStream('RouteStore/inject', viaInject(app), 'inject', store, 1_000, 20261201);
      await store.close();
      const reopened = await RouteStore.open({ stateFile });
      expect(reopened.recovered).toBeNull();
      expect(reopened.store.list()).toEqual(model.list());
      expect(model.routes.size).toBeGreaterThan(3);
    } finally {
      await app.close();
    }
  }, 120_000);

  it('1,000 requests over a real Unix socket (no token needed) with the real RouteStore and a state file', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'admin-fuzz-sock-'));
    dirs.push(dir);
    const stateFile = join(dir, 'routes.json');
    const socketPath = join(dir, 'admin.sock');
    const { store } = await RouteStore.open({ stateFile });
    const app = createAdminApp({
      routes: store,
      token: TOKEN,
      transport: 'auto',
      rateLimit: { max: Number.MAX_SAFE_INTEGER, windowMs: 60_000 },
      socketRateLimit: { max: Number.MAX_SAFE_INTEGER, windowMs: 60_000 },
      cache: new MemoryCache(['a.test/x']),
      reload: new ScriptedReload([]),
    });
    await app.ready();
    const server = http.createServer(app.routing);
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
    const client = viaSocket(socketPath);
    try {
      const model = await runStream('RouteStore/unix', client.send, 'unix', store, 1_000, 20261202);
      await store.close();
      const reopened = await RouteStore.open({ stateFile });
      expect(reopened.store.list()).toEqual(model.list());
    } finally {
      client.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await app.close();
    }
  }, 120_000);

  it('covered the space: at least 5,000 requests, and every oracle branch was taken', () => {
    expect(total).toBeGreaterThanOrEqual(5_000);
    for (const [key, min] of [
      ['POST 201', 300],
      ['POST 400', 300],
      ['POST 413', 5],
      ['PUT 200', 200],
      ['PUT 400', 100],
      ['DELETE 200', 50],
      ['DELETE 404', 50],
      ['DELETE 400', 20],
      ['DELETE 414', 10],
    ] as const) {
      expect(exact.get(key) ?? 0, key).toBeGreaterThanOrEqual(min);
    }
    expect(statuses.get(401) ?? 0).toBeGreaterThan(100);
    expect(statuses.get(405) ?? 0).toBeGreaterThan(50);
  });
});
