import { execFile } from 'node:child_process';
import { copyFile, mkdtemp, open, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONFORMANCE_FILES, ROOT, runConformance } from './support/conformance.js';

const run = promisify(execFile);

// Issue 21: the single executable (`pnpm build:sea`, Node's SEA): one file,
// no node_modules, no Node.js needed beside it. Built as the README says,
// copied alone into a scratch directory, and run from there; its data-plane
// workers are the executable itself, and its assets (analytics script, GeoIP
// database) come from inside it.
describe('the single executable, alone in a scratch directory', () => {
  let dir: string;
  let bin: string;
  let appVersion = '';

  beforeAll(async () => {
    appVersion = (
      JSON.parse(await readFile(path.join(ROOT, 'apps/proxyd/package.json'), 'utf8')) as { version: string }
    ).version;
    await run(process.execPath, [path.join(ROOT, 'apps/proxyd/scripts/build-sea.mjs')], {
      cwd: ROOT,
      timeout: 180_000,
    });
    dir = await mkdtemp(path.join(tmpdir(), 'proxyd-sea-'));
    bin = path.join(dir, 'proxyd');
    await copyFile(path.join(ROOT, 'dist/proxyd'), bin);
    await run('chmod', ['755', bin]);
  }, 300_000);

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('is one native executable that runs with no node on PATH and nothing beside it', async () => {
    expect(await readdir(dir)).toEqual(['proxyd']);
    const file = await open(bin);
    const head = Buffer.alloc(4);
    await file.read(head, 0, 4, 0);
    await file.close();
    expect(head).toEqual(Buffer.from([0x7f, 0x45, 0x4c, 0x46])); // ELF, not a script for a node on PATH
    const env = { PATH: '/nonexistent', HOME: dir };
    expect((await run(bin, ['--version'], { cwd: dir, env })).stdout.trim()).toBe(appVersion);
    // The build info is embedded: the commit it was built from, and the Node.js inside.
    expect((await run(bin, ['version'], { cwd: dir, env })).stdout).toMatch(
      new RegExp(
        `^v${appVersion.replaceAll('.', '\\.')} commit [0-9a-f]{12}(\\+dirty)? built \\S+ node ${process.version} linux/`,
      ),
    );
    // A command that needs the bundled admin-api schemas.
    const openapi = JSON.parse((await run(bin, ['openapi'], { cwd: dir, env, maxBuffer: 16 << 20 })).stdout) as {
      openapi: string;
    };
    expect(openapi.openapi).toMatch(/^3\./);
  });

  it('validates the example Proxyfile of packaging/', async () => {
    const { stdout } = await run(bin, ['validate', '--config', path.join(ROOT, 'packaging/Proxyfile.example')], {
      cwd: dir,
    });
    expect(stdout).toMatch(/^Valid configuration: 4 sites, 4 upstreams/);
  });

  it('passes the conformance end-to-end files against the executable', async () => {
    const result = await runConformance(bin);
    expect(result.failures).toEqual([]);
    expect(result.files).toEqual([...CONFORMANCE_FILES].sort());
    expect(result.failed).toBe(0);
    expect(result.skipped).toBe(0);
    expect(result.passed).toBeGreaterThanOrEqual(CONFORMANCE_FILES.length);
  }, 330_000);
});
