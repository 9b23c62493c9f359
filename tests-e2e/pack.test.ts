import { execFile } from 'node:child_process';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = fileURLToPath(new URL('..', import.meta.url));
const tsc = path.join(root, 'node_modules/.bin/tsc');

// Packages must work as libraries outside the monorepo: pack them, install the
// tarballs in a scratch project with npm, type-check a consumer, run it.
describe('packages as libraries outside the monorepo', () => {
  const dirs: string[] = [];
  afterAll(async () => {
    await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
  });

  it('model, proxy-core, route-store and proxyfile install from their tarballs and import with types', async () => {
    const scratch = await mkdtemp(path.join(tmpdir(), 'proxyd-pack-'));
    dirs.push(scratch);
    for (const pkg of ['packages/model', 'packages/proxy-core', 'packages/route-store', 'packages/proxyfile']) {
      await run('pnpm', ['pack', '--pack-destination', scratch], { cwd: path.join(root, pkg) });
    }
    const tarballs = (await readdir(scratch)).filter((f) => f.endsWith('.tgz'));
    expect(tarballs).toHaveLength(4);
    await writeFile(
      path.join(scratch, 'package.json'),
      JSON.stringify({ name: 'scratch', private: true, type: 'module' }),
    );
    // --prefer-offline: the dependencies are in npm's cache after the first run; the registry is asked only for what is not.
    await run(
      'npm',
      ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error', ...tarballs.map((t) => `./${t}`)],
      {
        cwd: scratch,
        timeout: 120_000,
      },
    );
    await writeFile(
      path.join(scratch, 'consumer.ts'),
      [
        "import type { Config } from '@proxyd/model';",
        "import { RouteTable } from '@proxyd/proxy-core';",
        "import { parse, ProxyfileError, routesFromConfig } from '@proxyd/proxyfile';",
        "const config: Config = parse('http://a.test {\\n\\treverse_proxy 127.0.0.1:9000\\n}\\n');",
        'const table = new RouteTable(routesFromConfig(config));',
        'const port: number = config.sites[0]?.addresses[0]?.port ?? -1;',
        "let position = '';",
        "try { parse('a.test {\\n\\treverse_proxy nope\\n}\\n'); } catch (e) { if (e instanceof ProxyfileError) position = e.position.line + ':' + e.position.column; }",
        "console.log(JSON.stringify({ route: table.match('A.test:80')?.domain, port, position }));",
        '',
      ].join('\n'),
    );
    await writeFile(
      path.join(scratch, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          target: 'ES2022',
          strict: true,
          outDir: 'out',
          typeRoots: [path.join(root, 'node_modules/@types')],
          types: ['node'],
        },
        files: ['consumer.ts'],
      }),
    );
    await run(tsc, ['-p', scratch], { cwd: scratch });
    const { stdout } = await run(process.execPath, [path.join(scratch, 'out/consumer.js')], { cwd: scratch });
    expect(JSON.parse(stdout)).toEqual({ route: 'a.test', port: -1, position: '2:16' });
  });
});
