import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { RouteStore } from '@proxyd/route-store';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AdminApp, createAdminApp } from './app.js';
import { AUTH, TOKEN } from './memory-ports.test-helpers.js';
import { SnapshotResponse } from './schemas.js';

type Desired = { domain: string; upstream: string; tls: boolean };

/**
 * `route_hash` written from the README's definition alone (not from
 * route-store's code): lines `domain upstream tls\n` with domain and upstream
 * lowercased, sorted by domain in code-unit order, after `source\n`.
 */
function documentedRouteHash(source: string, routes: readonly Desired[]): string {
  const lines = routes.map((r) => {
    const domain = r.domain.toLowerCase();
    return { domain, line: `${domain} ${r.upstream.toLowerCase()} ${r.tls ? 'true' : 'false'}\n` };
  });
  lines.sort((a, b) => (a.domain < b.domain ? -1 : a.domain > b.domain ? 1 : 0));
  return createHash('sha256')
    .update(`${source}\n${lines.map((l) => l.line).join('')}`, 'utf8')
    .digest('hex');
}

const readme = () => readFile(new URL('../README.md', import.meta.url), 'utf8');

describe('route_hash: the documented formula against the real RouteStore behind the admin API', () => {
  let store: RouteStore;
  let app: AdminApp;
  const put = async (body: unknown) => {
    const res = await app.inject({ method: 'PUT', url: '/routes/snapshot', headers: AUTH, payload: body as object });
    expect(res.statusCode, res.body).toBe(200);
    return (res.json() as { route_hash: string }).route_hash;
  };

  beforeAll(async () => {
    ({ store } = await RouteStore.open({ stateFile: null }));
    app = createAdminApp({ routes: store, token: TOKEN, transport: 'tcp', rateLimit: { max: 1e9, windowMs: 60_000 } });
  });
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  it("the README's example request gets the README's example hash", async () => {
    const text = await readme();
    const request = /<!-- route-hash-example -->\s*```json\n([^`]+)\n```/.exec(text)?.[1];
    const expected = /`route_hash` = `([0-9a-f]{64})`/.exec(text)?.[1];
    expect(request, 'README example request').toBeDefined();
    expect(expected, 'README example hash').toBeDefined();
    const body = JSON.parse(request as string) as { source: string; routes: Desired[] };
    expect(await put(body)).toBe(expected);
    expect(documentedRouteHash(body.source, body.routes)).toBe(expected);
  });

  it('the README and the OpenAPI description of route_hash state the same definition', async () => {
    const description = (SnapshotResponse.properties.route_hash as { description?: string }).description as string;
    expect(description).toMatch(/SHA-256/);
    const prose = (await readme()).replace(/\n>\s*/g, ' ').replace(/\s+/g, ' ');
    expect(prose).toContain(description);
  });

  it('an empty or omitted list hashes source + "\\n" alone', async () => {
    const empty = createHash('sha256').update('ctl-empty\n').digest('hex');
    expect(await put({ source: 'ctl-empty', routes: [] })).toBe(empty);
    expect(await put({ source: 'ctl-empty' })).toBe(empty);
  });

  it('for random sets (any order, any letter case, IPv4/IPv6/hostname upstreams) the API answers the documented hash', async () => {
    const label = fc.stringMatching(/^[a-zA-Z0-9]([a-zA-Z0-9-]{0,6}[a-zA-Z0-9])?$/);
    const domain = fc
      .tuple(fc.boolean(), fc.array(label, { minLength: 1, maxLength: 3 }))
      .map(([wild, labels]) => `${wild ? '*.' : ''}${labels.join('.')}`);
    // A host name whose last label is all digits is an address or refused (`127.1`): names end in a letter here.
    const nameLabels = fc
      .array(label, { minLength: 1, maxLength: 3 })
      .filter((labels) => !/^\d+$/.test(labels[labels.length - 1] as string));
    const upstream = fc.oneof(
      fc.tuple(nameLabels, fc.integer({ min: 1, max: 65535 })),
      fc.tuple(fc.ipV4(), fc.integer({ min: 1, max: 65535 })),
      fc.tuple(fc.ipV6(), fc.integer({ min: 1, max: 65535 })),
    );
    const route = fc.record({
      domain,
      upstream: upstream.map(([host, port]) =>
        Array.isArray(host)
          ? `${host.join('.')}:${port}`
          : host.includes(':')
            ? `[${host.toUpperCase()}]:${port}`
            : `${host}:${port}`,
      ),
      tls: fc.boolean(),
    });
    const set = fc.uniqueArray(route, { maxLength: 8, selector: (r) => r.domain.toLowerCase() });
    const source = fc.stringMatching(/^[\x21-\x7e]{1,20}$/);
    await fc.assert(
      fc.asyncProperty(source, set, fc.func(fc.integer()), async (src, routes, order) => {
        const hash = await put({ source: src, routes });
        expect(hash).toBe(documentedRouteHash(src, routes));
        const reordered = [...routes]
          .map((r, i) => ({ r, k: order(i) }))
          .sort((a, b) => a.k - b.k)
          .map(({ r }) => ({ ...r, domain: r.domain.toUpperCase() }));
        expect(await put({ source: src, routes: reordered })).toBe(hash);
      }),
      { numRuns: 200, seed: 20261201 },
    );
  });
});
