import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdminApp } from './app.js';
import { MemoryCache, MemoryRouteStore, ScriptedReload, TOKEN } from './memory-ports.test-helpers.js';
import { openApiDocument } from './openapi.js';
import { generateClient } from './openapi-client.test-helpers.js';

describe('a client generated from the OpenAPI document', () => {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'admin-openapi-client-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('generates with openapi-typescript, type-checks strictly and runs against a live app', async () => {
    const generated = await generateClient(openApiDocument(), dir);
    expect(generated.compileOutput).toBe('');
    // No PURGE operation in the generated types (OpenAPI 3.1 cannot name it); its body types are there.
    expect(generated.schema).not.toMatch(/purgeCache/);
    expect(generated.schema).toMatch(/CachePurged: \{/);

    const store = new MemoryRouteStore();
    const app = createAdminApp({
      routes: store,
      token: TOKEN,
      transport: 'tcp',
      reload: new ScriptedReload([]),
      cache: new MemoryCache(['gen.example/a/b?x=1']),
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const address = app.server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      const { createClient } = (await import(pathToFileURL(generated.modulePath).href)) as {
        createClient(
          base: string,
          token: string,
        ): Record<string, (...args: unknown[]) => Promise<{ ok: boolean; status: number; body: unknown }>>;
      };
      const client = createClient(`http://127.0.0.1:${port}`, TOKEN);
      expect(await client.health?.()).toMatchObject({ ok: true, status: 200, body: { status: 'ok' } });
      expect(await client.createRoute?.({ domain: 'Gen.Example', upstream: '127.0.0.1:3000', tls: false })).toEqual({
        ok: true,
        status: 201,
        body: {
          domain: 'gen.example',
          upstream: '127.0.0.1:3000',
          tls: false,
          rate_limit_rps: null,
          under_attack: false,
          source: null,
        },
      });
      expect((await client.listRoutes?.())?.body).toHaveLength(1);
      const snap = await client.putSnapshot?.({
        source: 'gen',
        routes: [{ domain: 's.example', upstream: 'h:1', tls: true }],
      });
      expect(snap).toMatchObject({
        ok: true,
        status: 200,
        body: { source: 'gen', applied: 1, removed: 0, total_routes: 2 },
      });
      expect(await client.deleteRoute?.({ domain: 'gen.example' })).toEqual({
        ok: true,
        status: 200,
        body: { deleted: 'gen.example' },
      });
      expect(await client.deleteRoute?.({ domain: 'gen.example' })).toEqual({
        ok: false,
        status: 404,
        body: { error: 'route not found' },
      });
      expect(await client.listAnalytics?.()).toEqual({ ok: true, status: 200, body: [] });
      expect(await client.reload?.()).toEqual({ ok: true, status: 200, body: { message: 'reloaded' } });
      expect((await client.reload?.())?.body).toMatchObject({ error: 'reload too soon' });
      expect(await client.purge?.('Gen.Example', 'a/b?x=1')).toEqual({ ok: true, status: 200, body: { purged: true } });
      expect(await client.purge?.('gen.example', 'a/b?x=1')).toEqual({
        ok: false,
        status: 404,
        body: { purged: false, reason: 'not found' },
      });
      expect([...store.table.keys()]).toEqual(['s.example']);
    } finally {
      await app.close();
    }
  }, 120_000);
});
