import { connect } from 'node:net';
import type { InjectOptions } from 'fastify';
import { describe, expect, it } from 'vitest';
import type { AdminAppOptions } from './app.js';
import { memoryStats } from './endpoints/stats-memory.test-helpers.js';
import { AdminError } from './errors.js';
import {
  AUTH,
  MemoryRouteStore,
  memoryAnalytics,
  memoryCertificates,
  memoryDiscovery,
  ScriptedReload,
  sampleCertificate,
  sampleDiscovery,
  sampleSnapshot,
  testApp,
} from './memory-ports.test-helpers.js';
import { openApiDocument } from './openapi.js';
import { type Document, operationsOf } from './openapi.test-helpers.js';

// Issue 21: every status the app answers is declared on the operation it
// answers for, and every declared status is one the app answers. A sweep of
// requests per operation of the document (tokens, path segments, bodies)
// runs against apps whose ports answer, are absent, or fail.

const doc = openApiDocument() as unknown as Document;
const OPS = operationsOf(doc);

/** Statuses the listener answers around the app (timeouts, Expect, header size): checked over TCP below. */
const LISTENER = ['408', '417', '431'];

/** Path segments a client may send for a parameter (`raw` ones are put in the URL as they are). */
const SEGMENTS: Array<{ value: string; raw?: true }> = [
  { value: 'a.test' },
  { value: 'missing.test' },
  { value: 'A.Test' },
  { value: '' },
  { value: 'x'.repeat(300) },
  { value: '%E2%84%AAelvin.test', raw: true },
  { value: '%zz', raw: true },
  { value: 'bad_chars!' },
  { value: 'assets/app.js?v=1' },
  // A breakdown dimension (GET /stats/{domain}/breakdown/{dimension}); a domain name elsewhere.
  { value: 'pages' },
];

const ROUTE = { domain: 'new.test', upstream: '127.0.0.1:8080', tls: false };
const BODIES: Array<{ payload?: string; type?: string }> = [
  {},
  { payload: JSON.stringify(ROUTE) },
  { payload: JSON.stringify({ source: 'ctl', routes: [ROUTE] }) },
  { payload: JSON.stringify({ source: 'ctl', routes: [ROUTE, ROUTE] }) },
  { payload: JSON.stringify({ ...ROUTE, domain: 'bad domain' }) },
  { payload: '{' },
  { payload: '{}', type: ';;' },
  { payload: 'x'.repeat(70_000) },
];

function urlsOf(path: string): string[] {
  const names = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1] as string);
  if (names.length === 0) return [path];
  return SEGMENTS.flatMap((segment) => {
    const value = segment.raw ? segment.value : encodeURIComponent(segment.value);
    // Every parameter the same value, and each one alone (the others valid).
    const variants = [
      names.map(() => value),
      ...names.map((_, i) => names.map((_n, j) => (i === j ? value : 'a.test'))),
    ];
    return variants.map((values) => values.reduce((url, v, i) => url.replace(`{${names[i]}}`, v), path));
  });
}

const fail = () => {
  throw new Error('port failed');
};
const failing = async () => fail();

/** The apps a sweep runs against: ports that answer, none, failing, and a limit of one request. */
function configurations(): Array<Partial<AdminAppOptions>> {
  const routes = () => {
    const store = new MemoryRouteStore();
    store.table.set('a.test', {
      domain: 'a.test',
      upstream: '127.0.0.1:80',
      tls: false,
      rate_limit_rps: null,
      under_attack: false,
      source: null,
    });
    return store;
  };
  const answering = () => ({
    routes: routes(),
    analytics: memoryAnalytics([sampleSnapshot('a.test')]),
    // Answers from a fixed set, so that every operation of the sweep finds the entries.
    cache: { enabled: true, purge: (key: string) => ['a.test/a.test', 'a.test/assets/app.js?v=1'].includes(key) },
    reload: new ScriptedReload([{ ok: false, errorText: 'Proxyfile:1: unexpected "}"' }]),
    metrics: { render: async () => 'up 1\n' },
    certificates: memoryCertificates([sampleCertificate('a.test')]),
    discovery: memoryDiscovery(sampleDiscovery()),
    stats: memoryStats({ minutes: { 'a.test': [{ t: 0, page_views: 1 }] } }),
  });
  const broken = {
    routes: Object.assign(routes(), { list: fail, upsert: failing, remove: failing, applySnapshot: failing }),
    analytics: { list: failing, get: failing },
    cache: { enabled: true, purge: failing },
    reload: { reload: failing },
    metrics: { render: failing },
    certificates: { list: failing },
    discovery: { status: failing },
    stats: {
      domains: failing,
      hasDomain: async () => true,
      timeseries: failing,
      totals: failing,
      breakdown: failing,
      vitals: failing,
    },
  };
  // A clock 6 s later at every reading: past the reload cooldown (5 s) between any two requests.
  let now = 1_800_000_000_000;
  const unlimited = { rateLimit: { max: 1_000_000, windowMs: 60_000 }, clock: () => (now += 6_000) };
  const full = () => {
    const limit = async () => {
      throw new AdminError('ADMIN_ROUTE_LIMIT', 'the table holds at most 1 routes (this write would make it 2)');
    };
    return Object.assign(routes(), { upsert: limit, applySnapshot: limit });
  };
  // With `storage redis` and Redis away: every route write is 503 (issue 31).
  const away = () => {
    const unavailable = async () => {
      throw new AdminError(
        'ADMIN_STORAGE_UNAVAILABLE',
        'redis is unreachable (connect ECONNREFUSED); the write was not applied',
        {
          headers: { 'retry-after': '2' },
        },
      );
    };
    return Object.assign(routes(), { upsert: unavailable, remove: unavailable, applySnapshot: unavailable });
  };
  return [
    { ...answering(), ...unlimited },
    { ...answering(), routes: full(), ...unlimited },
    { ...answering(), routes: away(), ...unlimited },
    { routes: routes(), ...unlimited },
    { ...broken, ...unlimited },
    { ...answering(), rateLimit: { max: 1, windowMs: 60_000 } },
  ];
}

describe('issue 21: the statuses the document declares are the statuses the app answers', () => {
  // The timeout: 46,080 inject() calls (36 operations × the sweep × 5 apps), 10-25 s alone, more under load.
  it('per operation, over a sweep of tokens, path segments, bodies and port states', async () => {
    const observed = new Map<string, Set<string>>(OPS.map((o) => [`${o.method} ${o.path}`, new Set<string>()]));
    const record = (key: string, status: number) => observed.get(key)?.add(String(status));
    for (const overrides of configurations()) {
      const { app } = testApp(overrides);
      for (const { method, path } of OPS) {
        const key = `${method} ${path}`;
        // A GET with a query the stats endpoints refuse (the others read no query).
        const urls = urlsOf(path);
        for (const url of method === 'GET' ? [...urls, `${urls[0]}?format=x`] : urls) {
          for (const headers of [{}, { authorization: 'Bearer wrong' }, AUTH]) {
            for (const body of BODIES) {
              const request: InjectOptions = { method: method as 'GET', url, headers: { ...headers } };
              if (body.payload !== undefined) request.payload = body.payload;
              if (body.type !== undefined) (request.headers as Record<string, string>)['content-type'] = body.type;
              record(key, (await app.inject(request)).statusCode);
            }
          }
        }
      }
      await app.close();
    }
    const declared = Object.fromEntries(
      OPS.map(({ method, path, op }) => [
        `${method} ${path}`,
        Object.keys(op.responses)
          .filter((s) => !LISTENER.includes(s))
          .sort(),
      ]),
    );
    const seen = Object.fromEntries([...observed].map(([key, set]) => [key, [...set].sort()]));
    expect(seen).toEqual(declared);
  }, 120_000);

  it('per operation over TCP, the listener statuses: 417 for an unmet Expect, 431 for huge headers, 408 when slow', async () => {
    const { app } = testApp({
      transport: 'auto',
      timeouts: { headersMs: 300, requestMs: 600, idleMs: 5_000, keepAliveMs: 5_000, checkIntervalMs: 100 },
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const port = (app.server.address() as { port: number }).port;
    /** Writes `text` on a fresh connection and resolves the status line's code once the server answers. */
    const exchange = (text: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = connect({ host: '127.0.0.1', port }, () => socket.write(text));
        let read = '';
        const timer = setTimeout(() => socket.destroy(new Error(`no answer to ${text.slice(0, 40)}`)), 5_000);
        socket.setEncoding('utf8');
        socket.on('data', (chunk: string) => {
          read += chunk;
          const code = /^HTTP\/1\.1 (\d{3}) /.exec(read)?.[1];
          if (code !== undefined) {
            clearTimeout(timer);
            socket.destroy();
            resolve(code);
          }
        });
        socket.on('error', reject);
      });
    try {
      const results = await Promise.all(
        OPS.map(async ({ method, path, op }) => {
          const url = urlsOf(path)[0] as string;
          const head = `${method} ${url} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${AUTH.authorization}\r\n`;
          const answered = [
            await exchange(`${head}Expect: x-nothing\r\n\r\n`),
            await exchange(`${head}X-Big: ${'b'.repeat(20_000)}\r\n\r\n`),
            await exchange(`${head}X-Slow: 1\r\n`), // the headers never end
          ];
          return { key: `${method} ${path}`, answered, declared: LISTENER.filter((s) => s in op.responses) };
        }),
      );
      for (const { key, answered, declared } of results) {
        expect({ key, answered }).toEqual({ key, answered: ['417', '431', '408'] });
        expect({ key, declared }).toEqual({ key, declared: LISTENER });
      }
    } finally {
      await app.close();
    }
  });
});
