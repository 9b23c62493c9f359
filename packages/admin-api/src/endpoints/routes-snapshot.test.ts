import { describe, expect, it } from 'vitest';
import { AUTH, testApp } from '../memory-ports.test-helpers.js';

const put = (payload: unknown) => ({
  method: 'PUT' as const,
  url: '/routes/snapshot',
  headers: { ...AUTH, 'content-type': 'application/json' },
  payload: typeof payload === 'string' ? payload : JSON.stringify(payload),
});

describe('PUT /routes/snapshot', () => {
  it('200: applies the list, removes the source routes absent from it, leaves other sources alone; audit', async () => {
    const { app, store, audit } = testApp();
    await store.upsert({ domain: 'old.example', upstream: 'h:1', tls: false, source: 'ctl' });
    await store.upsert({ domain: 'other.example', upstream: 'h:1', tls: false, source: 'someone-else' });
    const res = await app.inject(
      put({ source: 'ctl', routes: [{ domain: 'New.Example', upstream: '10.0.0.1:80', tls: false }] }),
    );
    expect(res.statusCode).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBe('null');
    const body = res.json() as Record<string, unknown>;
    expect(body).toMatchObject({ source: 'ctl', applied: 1, removed: 1, total_routes: 2 });
    expect(body.route_hash).toMatch(/^[0-9a-f]{64}$/);
    expect([...store.table.keys()].sort()).toEqual(['new.example', 'other.example']);
    expect(audit).toEqual([{ action: 'routes_snapshot', principal: 'admin', resource: 'ctl' }]);
    await app.close();
  });

  it('route_hash is the same for the same set in any order; omitted routes removes everything of the source', async () => {
    const { app, store } = testApp();
    const a = { domain: 'a.example', upstream: 'h:1', tls: false };
    const b = { domain: 'b.example', upstream: 'h:2', tls: true };
    const h1 = (await app.inject(put({ source: 'ctl', routes: [a, b] }))).json().route_hash;
    const h2 = (await app.inject(put({ source: 'ctl', routes: [b, a] }))).json().route_hash;
    expect(h1).toBe(h2);
    const cleared = (await app.inject(put({ source: 'ctl' }))).json();
    expect(cleared).toMatchObject({ applied: 0, removed: 2, total_routes: 0 });
    expect(store.table.size).toBe(0);
    await app.close();
  });

  const bad: Array<[string, unknown, string]> = [
    ['malformed JSON', '{', 'invalid JSON: '],
    ['missing source', { routes: [] }, 'invalid source: source is required'],
    ['empty source', { source: '' }, 'invalid source: source is empty'],
    ['source with spaces', { source: 'my ctl' }, 'invalid source: '],
    ['source too long', { source: 'x'.repeat(129) }, 'invalid source: '],
    ['routes not an array', { source: 'c', routes: {} }, 'invalid JSON: routes must be array'],
    [
      'bad domain in the list',
      {
        source: 'c',
        routes: [
          { domain: 'ok.example', upstream: 'h:1', tls: false },
          // Issue 15: "_" is valid in names now (as in the Proxyfile), so the bad domain is "bad!domain".
          { domain: 'bad!domain', upstream: 'h:1', tls: false },
        ],
      },
      'invalid domain: routes[1]: ',
    ],
    [
      'bad upstream in the list',
      { source: 'c', routes: [{ domain: 'ok.example', upstream: 'h', tls: false }] },
      'invalid upstream address: routes[0]: ',
    ],
    [
      'port out of range',
      { source: 'c', routes: [{ domain: 'ok.example', upstream: 'h:70000', tls: false }] },
      'invalid upstream address: ',
    ],
    [
      'missing tls',
      { source: 'c', routes: [{ domain: 'ok.example', upstream: 'h:1' }] },
      'invalid JSON: routes[0]: tls is required',
    ],
    [
      'duplicate domain',
      {
        source: 'c',
        routes: [
          { domain: 'd.example', upstream: 'h:1', tls: false },
          { domain: 'D.example', upstream: 'h:2', tls: false },
        ],
      },
      'duplicate domain: "d.example" appears more than once in routes',
    ],
    [
      'unknown field in an entry',
      { source: 'c', routes: [{ domain: 'ok.example', upstream: 'h:1', tls: false, x: 1 }] },
      'invalid JSON: routes[0] has unknown property "x"',
    ],
  ];
  for (const [name, payload, message] of bad) {
    it(`400 for ${name}; the table is untouched`, async () => {
      const { app, store, audit } = testApp();
      await store.upsert({ domain: 'keep.example', upstream: 'h:1', tls: false, source: 'c' });
      const before = store.list();
      const res = await app.inject(put(payload));
      expect(res.statusCode).toBe(400);
      const error = (res.json() as { error: string }).error;
      if (message.endsWith(': ')) expect(error.startsWith(message), error).toBe(true);
      else expect(error).toBe(message);
      expect(store.list()).toEqual(before);
      expect(audit).toEqual([]);
      await app.close();
    });
  }

  it('413 over 64 KB, 401 without token, 429 over the limit', async () => {
    const { app } = testApp({ rateLimit: { max: 1, windowMs: 60_000 } });
    const routes = Array.from({ length: 2000 }, (_, i) => ({ domain: `d${i}.example`, upstream: 'h:1', tls: false }));
    const big = await app.inject(put({ source: 'c', routes }));
    expect(big.statusCode).toBe(413);
    expect(big.json()).toEqual({ error: 'request body too large' });
    expect((await app.inject({ ...put({ source: 'c' }), headers: {} })).statusCode).toBe(401);
    expect((await app.inject(put({ source: 'c' }))).statusCode).toBe(429);
    await app.close();
  });
});
