import { type AdminApp, type AdminRoute, createAdminApp, type RouteStorePort } from '@proxyd/admin-api';
import { parse } from '@proxyd/proxyfile';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { splitHostPort } from './control-plane.js';

// Issue 15: a domain (or an upstream) is valid in every route source or in none.

const TOKEN = 'value-rules-token';

/** Accepts every write: only the admin API's own validation decides. */
const acceptingStore: RouteStorePort = {
  list: () => [],
  upsert: async (w): Promise<AdminRoute> => ({ ...w, rate_limit_rps: null, under_attack: false }),
  remove: async () => false,
  applySnapshot: async (s) => ({
    source: s.source,
    applied: 0,
    removed: 0,
    total_routes: 0,
    route_hash: '0'.repeat(64),
  }),
};

let app: AdminApp;
beforeAll(async () => {
  app = createAdminApp({ routes: acceptingStore, token: TOKEN, rateLimit: { max: 100_000, windowMs: 60_000 } });
  await app.ready();
});
afterAll(() => app.close());

async function adminAccepts(domain: string, upstream: string): Promise<boolean> {
  const res = await app.inject({
    method: 'POST',
    url: '/routes',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    payload: { domain, upstream, tls: false },
  });
  if (res.statusCode !== 201 && res.statusCode !== 400) throw new Error(`POST /routes answered ${res.statusCode}`);
  return res.statusCode === 201;
}

function proxyfileAccepts(site: string, upstream: string): boolean {
  try {
    parse(`${site} {\n\treverse_proxy ${upstream}\n}\n`);
    return true;
  } catch {
    return false;
  }
}

const d253 = `${'a'.repeat(61)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(63)}`;

/** Domains written the same way in a Proxyfile site address and a POST /routes body. */
const DOMAINS: [string, boolean][] = [
  ['example.com', true],
  ['Example.COM', true],
  ['a_b.test', true],
  ['_acme-challenge.a.test', true],
  ['*.a.test', true],
  ['*.com', true],
  ['localhost', true],
  ['x-1.example', true],
  ['127.0.0.1', true],
  [`${'a'.repeat(63)}.example`, true],
  [d253, true],
  [`a${d253}`, false],
  [`${'a'.repeat(64)}.example`, false],
  ['a..b', false],
  ['.a', false],
  ['a.', false],
  ['-a.example', false],
  ['a-.example', false],
  ['a.*.example', false],
  ['**.example', false],
  ['*.', false],
  ['*', false],
  ['é.example', false],
  ['a!b.test', false],
];

/** Upstreams written as bare `host:port` (the form both sources take). */
const UPSTREAMS: [string, boolean][] = [
  ['127.0.0.1:80', true],
  ['localhost:1', true],
  ['backend.internal:65535', true],
  ['Host-1.Example:3000', true],
  ['my_app:8080', true],
  ['[::1]:8080', true],
  ['[2001:db8::1]:443', true],
  ['h:0', false],
  ['h:65536', false],
  ['h:080', false],
  ['[zz]:80', false],
  ['[fe80::1%eth0]:80', false],
  ['a..b:80', false],
  ['-h:80', false],
  ['*.a.test:80', false],
];

describe('one value rule for the Proxyfile and the admin API (issue 15)', () => {
  it.each(DOMAINS)('domain %j: valid %s in both', async (domain, valid) => {
    expect({
      proxyfile: proxyfileAccepts(domain, '127.0.0.1:80'),
      admin: await adminAccepts(domain, '127.0.0.1:80'),
    }).toEqual({
      proxyfile: valid,
      admin: valid,
    });
  });
  it.each(UPSTREAMS)('upstream %j: valid %s in both', async (upstream, valid) => {
    expect({ proxyfile: proxyfileAccepts('a.test', upstream), admin: await adminAccepts('a.test', upstream) }).toEqual({
      proxyfile: valid,
      admin: valid,
    });
  });
});

describe('splitHostPort (listen addresses)', () => {
  it.each([
    ['127.0.0.1:6190', { host: '127.0.0.1', port: 6190 }],
    ['localhost:0', { host: 'localhost', port: 0 }],
    ['[::1]:0', { host: '::1', port: 0 }],
    ['0.0.0.0:65535', { host: '0.0.0.0', port: 65535 }],
  ])('splits %j', (text, value) => expect(splitHostPort(text)).toEqual(value));
  it.each(['localhost', ':6190', '127.0.0.1:65536', '::1:80', '[::1]', 'a b:80', 'http://h:80'])('rejects %j', (text) =>
    expect(() => splitHostPort(text)).toThrow(`invalid listen address "${text}", expected host:port`),
  );
});
