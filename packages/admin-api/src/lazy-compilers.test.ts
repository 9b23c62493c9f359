import { describe, expect, it } from 'vitest';
import { pendingSchemaWarmups, schemaCompilersLoaded } from './lazy-compilers.js';
import { AUTH, testApp } from './memory-ports.test-helpers.js';

// Issue 32: the admin app loads ajv and fast-json-stringify at its first
// request and compiles each route's schemas at their first use. Unit test
// files share a worker's module cache (vitest.config.ts: isolate false), so
// another file may have loaded them already: that a daemon has not loaded
// them before its first admin request is pinned by
// tests-e2e/worker-modules.test.ts, against the built daemon.

describe('schema compilers on first use (issue 32)', () => {
  it('answers a bad URL and the first request, with both compilers loaded after it', async () => {
    const { app } = testApp();
    await app.ready();
    // A bad URL is answered before the hooks, by Fastify's default serializer: it needs neither.
    const bad = await app.inject({ method: 'GET', url: '/routes/%E0%A4%A', headers: AUTH });
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toEqual({ error: 'invalid URL: malformed percent-encoding in the path' });
    const first = await app.inject({ method: 'GET', url: '/routes', headers: AUTH });
    expect(first.statusCode).toBe(200);
    expect(first.json()).toEqual([]);
    expect(schemaCompilersLoaded()).toBe(true);
    await app.close();
  });

  it('validates and serializes with the compilers it loaded: refusals and answers as before', async () => {
    const { app } = testApp();
    const refused = await app.inject({
      method: 'POST',
      url: '/routes',
      headers: { ...AUTH, 'content-type': 'application/json' },
      payload: { domain: 'a.example', upstream: '127.0.0.1:3000', tls: false, extra: 1 },
    });
    expect(refused.statusCode).toBe(400);
    expect(refused.json()).toHaveProperty('error');
    const created = await app.inject({
      method: 'POST',
      url: '/routes',
      headers: { ...AUTH, 'content-type': 'application/json' },
      payload: { domain: 'a.example', upstream: '127.0.0.1:3000', tls: false },
    });
    expect(created.statusCode).toBe(201);
    const listed = await app.inject({ method: 'GET', url: '/routes', headers: AUTH });
    expect(listed.statusCode).toBe(200);
    expect(listed.json()).toEqual([expect.objectContaining({ domain: 'a.example', upstream: '127.0.0.1:3000' })]);
    await app.close();
  });

  it('warms both compilers in the background after the first request, before any route compiles (issue 30)', async () => {
    const { app } = testApp();
    await app.ready();
    // Fastify asked for a validator and a serializer compiler: each has its warm-up queued (or running).
    const first = await app.inject({ method: 'GET', url: '/health' });
    expect(first.statusCode).toBe(200);
    // One warm-up a turn of the event loop, none left after a few turns: the first POST /routes pays no warm-up.
    for (let turn = 0; turn < 20 && pendingSchemaWarmups() > 0; turn++) await new Promise(setImmediate);
    expect(pendingSchemaWarmups()).toBe(0);
    await app.close();
  });
});
