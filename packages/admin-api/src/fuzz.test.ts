import { isIPv6 } from 'node:net';
import fc from 'fast-check';
import type { InjectOptions } from 'fastify';
import { Registry } from 'prom-client';
import { afterAll, describe, expect, it } from 'vitest';
import { createAdminApp } from './app.js';
import {
  MemoryCache,
  MemoryRouteStore,
  memoryAnalytics,
  ScriptedReload,
  sampleSnapshot,
  TOKEN,
} from './memory-ports.test-helpers.js';

// An oracle written independently of domain.ts/upstream.ts: RFC 1035 labels, optional "*." prefix.
const ORACLE_DOMAIN = /^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;
function oracleDomain(d: unknown): boolean {
  return typeof d === 'string' && d.length <= 253 && ORACLE_DOMAIN.test(d.toLowerCase());
}
function oracleUpstream(u: unknown): boolean {
  if (typeof u !== 'string') return false;
  const m = /^(?:\[([^\]]+)\]|([A-Za-z0-9.-]+)):([1-9][0-9]{0,4})$/.exec(u);
  if (!m || Number(m[3]) > 65535) return false;
  if (m[1] !== undefined) return isIPv6(m[1]);
  const host = m[2] as string;
  return host.length <= 253 && host.split('.').every((l) => /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/.test(l));
}
function oracleSource(s: unknown): boolean {
  return s === undefined || s === null || (typeof s === 'string' && /^[\x21-\x7e]{1,128}$/.test(s));
}
function oracleRouteCreate(body: unknown): boolean {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return false;
  const b = body as Record<string, unknown>;
  const keys = Object.keys(b);
  if (keys.some((k) => !['domain', 'upstream', 'tls', 'source'].includes(k))) return false;
  return oracleDomain(b.domain) && oracleUpstream(b.upstream) && typeof b.tls === 'boolean' && oracleSource(b.source);
}

const unicode = fc.string({ unit: 'grapheme', maxLength: 20 });
const label = fc.stringMatching(/^[a-zA-Z0-9]([a-zA-Z0-9-]{0,8}[a-zA-Z0-9])?$/);
const domain = fc.oneof(
  { weight: 6, arbitrary: fc.domain() },
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
  { weight: 1, arbitrary: unicode },
  { weight: 1, arbitrary: fc.anything() },
);
const source = fc.option(fc.oneof(fc.stringMatching(/^[a-z0-9/@.-]{1,20}$/), unicode, fc.anything()), {
  nil: undefined,
});
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
      fc.domain(),
      fc.domain().map((d) => `*.${d.toUpperCase()}`),
    ),
    upstream: fc
      .tuple(fc.oneof(fc.domain(), fc.ipV4()), fc.integer({ min: 1, max: 65535 }))
      .map(([h, p]) => `${h}:${p}`),
    tls: fc.boolean(),
    source: fc.option(fc.stringMatching(/^[a-z0-9/@.-]{1,20}$/), { nil: undefined }),
  },
  { requiredKeys: ['domain', 'upstream', 'tls'] },
);
const snapshotBody = fc.record(
  {
    source: fc.oneof({ weight: 4, arbitrary: fc.constantFrom('ctl-a', 'ctl-b') }, source),
    routes: fc.array(
      fc.oneof(
        { weight: 4, arbitrary: validRoute.map(({ source: _s, ...r }) => r) },
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
    ),
  },
  { weight: 1, arbitrary: fc.integer({ min: 60_000, max: 70_000 }).map((n) => `{"domain":"${'a'.repeat(n)}"}`) },
);
const segment = fc.oneof(
  { weight: 4, arbitrary: domain.map((d) => (typeof d === 'string' ? encodeURIComponent(d) : 'x')) },
  { weight: 2, arbitrary: fc.stringMatching(/^[A-Za-z0-9._~*%-]{0,12}$/) },
  { weight: 1, arbitrary: fc.constantFrom('', '%', '%zz', '%00', '%2F', '..', '%C0%AF', 'snapshot') },
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
      '/reload',
      '/openapi.json',
      '/',
      '/routes/',
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
const headerValue = fc.stringMatching(/^[\x20-\x7e]{0,40}$/);
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
  query: fc.constant(''),
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
    fc.domain().map((d) => `/routes/${d}`),
    segment.map((s) => `/routes/${s}`),
  ),
  query,
  headers,
  body: fc.option(jsonBody, { nil: undefined }),
});
const request = fc.oneof(
  { weight: 4, arbitrary: anyRequest },
  { weight: 3, arbitrary: postRoute },
  { weight: 2, arbitrary: putSnapshot },
  { weight: 1, arbitrary: deleteRoute },
);

describe('fuzz: random and malformed admin requests', () => {
  const store = new MemoryRouteStore();
  const registry = new Registry();
  const app = createAdminApp({
    routes: store,
    token: TOKEN,
    transport: 'tcp',
    rateLimit: { max: Number.MAX_SAFE_INTEGER, windowMs: 60_000 },
    analytics: memoryAnalytics([sampleSnapshot('a.example')]),
    cache: new MemoryCache(['a.example/x']),
    reload: new ScriptedReload([]),
    metrics: { render: () => registry.metrics() },
    metricsRegistry: registry,
  });
  afterAll(() => app.close());
  let count = 0;
  const statuses = new Map<number, number>();

  it('never answers 500 or crashes, always answers with the CORS header, and changes routes only for valid writes', async () => {
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        count++;
        const before = JSON.stringify(store.list().sort((a, b) => a.domain.localeCompare(b.domain)));
        const options: InjectOptions = {
          method: r.method as NonNullable<InjectOptions['method']>,
          url: `${r.path}${r.query}`,
          headers: r.headers,
        };
        if (r.body !== undefined) options.payload = r.body;
        const res = await app.inject(options);
        statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
        expect(res.statusCode).toBeGreaterThanOrEqual(200);
        expect(res.statusCode).toBeLessThan(500);
        expect(res.headers['access-control-allow-origin']).toBe('null');
        if (res.statusCode >= 400 && r.method !== 'HEAD') {
          const plain = res.headers['content-type'] === 'text/plain; charset=utf-8';
          if (!plain) {
            const body = res.json() as Record<string, unknown>;
            expect(typeof body.error === 'string' || body.purged === false).toBe(true);
          }
        }
        const after = JSON.stringify(store.list().sort((a, b) => a.domain.localeCompare(b.domain)));
        const authorized =
          /^bearer[ \t]+/i.test(r.headers.authorization ?? '') &&
          r.headers.authorization?.replace(/^bearer[ \t]+/i, '').trim() === TOKEN;
        const write = res.statusCode >= 200 && res.statusCode < 300 && ['POST', 'PUT', 'DELETE'].includes(r.method);
        if (!write) expect(after).toBe(before);
        if (r.method === 'POST' && r.path === '/routes' && r.query === '') {
          const parsed = (() => {
            try {
              return r.body === undefined || r.body === '' ? undefined : JSON.parse(r.body);
            } catch {
              return Symbol('malformed');
            }
          })();
          const valid =
            authorized &&
            r.headers['content-type'] !== ';;' &&
            r.body !== undefined &&
            r.body.length <= 65_536 &&
            oracleRouteCreate(parsed);
          expect(res.statusCode === 201, `oracle says ${valid} for ${r.body}`).toBe(valid);
        }
      }),
      { numRuns: 5_000, seed: 20261122, endOnFailure: true },
    );
    console.log(
      `fuzz: ${count} requests, statuses ${JSON.stringify(Object.fromEntries([...statuses].sort()))}, ${store.table.size} routes at the end`,
    );
    expect(count).toBeGreaterThanOrEqual(5_000);
    expect(statuses.get(201) ?? 0).toBeGreaterThan(100);
    expect(statuses.get(400) ?? 0).toBeGreaterThan(300);
    expect(statuses.get(405) ?? 0).toBeGreaterThan(50);
    expect(statuses.get(404) ?? 0).toBeGreaterThan(50);
  }, 120_000);
});
