import { execFile } from 'node:child_process';
import { copyFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdminApp } from './app.js';
import { MemoryRouteStore, ScriptedReload, TOKEN } from './memory-ports.test-helpers.js';
import { openApiDocument } from './openapi.js';

const run = promisify(execFile);
const require = createRequire(import.meta.url);
const packageDir = fileURLToPath(new URL('..', import.meta.url));
const generator = join(packageDir, 'node_modules', '.bin', 'openapi-typescript');
const tsc = require.resolve('typescript/bin/tsc');

describe('a client generated from the OpenAPI document', () => {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'admin-openapi-client-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('generates with openapi-typescript, type-checks strictly and runs against a live app', async () => {
    await writeFile(join(dir, 'openapi.json'), JSON.stringify(openApiDocument(), null, 2));
    await run(generator, [join(dir, 'openapi.json'), '-o', join(dir, 'schema.d.ts')], { timeout: 60_000 });
    await copyFile(join(packageDir, 'test', 'fixtures', 'openapi-client', 'client.ts'), join(dir, 'client.ts'));
    await writeFile(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          exactOptionalPropertyTypes: true,
          noUncheckedIndexedAccess: true,
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          target: 'ES2022',
          lib: ['ES2022', 'DOM'],
          types: [],
          outDir: 'out',
          skipLibCheck: false,
        },
        files: ['client.ts', 'schema.d.ts'],
      }),
    );
    await writeFile(join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
    const compiled = await run(process.execPath, [tsc, '-p', join(dir, 'tsconfig.json')], { timeout: 120_000 }).catch(
      (error: { stdout?: string }) => ({ stdout: `tsc failed:\n${error.stdout ?? String(error)}` }),
    );
    expect(compiled.stdout).toBe('');

    const store = new MemoryRouteStore();
    const app = createAdminApp({ routes: store, token: TOKEN, transport: 'tcp', reload: new ScriptedReload([]) });
    await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const address = app.server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      const { createClient } = (await import(pathToFileURL(join(dir, 'out', 'client.js')).href)) as {
        createClient(
          base: string,
          token: string,
        ): Record<string, (arg?: unknown) => Promise<{ ok: boolean; status: number; body: unknown }>>;
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
      expect([...store.table.keys()]).toEqual(['s.example']);
    } finally {
      await app.close();
    }
  }, 120_000);
});
