import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROXYD_MAIN } from './support/proxyd.js';

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

function proxyd(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Result> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [PROXYD_MAIN, ...args],
      { env: { ...process.env, ...env }, timeout: 30_000 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

// The built CLI: `proxyd validate --config <path>` and `proxyd fmt`.
describe('proxyd validate and fmt (built CLI)', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'proxyd-proxyfile-cli-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('validate prints the confirmation line with site and upstream counts and exits 0', async () => {
    const file = path.join(dir, 'Proxyfile');
    await writeFile(
      file,
      [
        '{',
        '\thttp_port 8080',
        '}',
        'a.test, www.a.test {',
        '\timport common.conf',
        '}',
        'b.test {',
        '\treverse_proxy 127.0.0.1:9001 127.0.0.1:9002 127.0.0.1:9003',
        '}',
        'c.test {',
        '\thandle /api/* {',
        '\t\treverse_proxy 127.0.0.1:9004',
        '\t}',
        '\trespond "c"',
        '}',
        '',
      ].join('\n'),
    );
    await writeFile(path.join(dir, 'common.conf'), 'reverse_proxy 127.0.0.1:9000\n');
    const r = await proxyd(['validate', '--config', file]);
    expect(r).toEqual({ code: 0, stdout: 'Valid configuration: 3 sites, 5 upstreams\n', stderr: '' });
  });

  it('validate reads PROXY_CONFIG when --config is absent', async () => {
    const file = path.join(dir, 'env.Proxyfile');
    await writeFile(file, 'one.test {\n\treverse_proxy 127.0.0.1:9000\n}\n');
    const r = await proxyd(['validate'], { PROXY_CONFIG: file });
    expect(r.stdout).toBe('Valid configuration: 1 site, 1 upstream\n');
    expect(r.code).toBe(0);
  });

  it('validate prints the positioned error and exits 1', async () => {
    const file = path.join(dir, 'bad.Proxyfile');
    await writeFile(file, 'a.test {\n\treverse_prxy 127.0.0.1:9000\n}\n');
    const r = await proxyd(['validate', '--config', file]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(`${file}:2:2: unknown directive "reverse_prxy", did you mean "reverse_proxy"?\n`);
  });

  it('validate of a missing file exits 1 with the reason', async () => {
    const r = await proxyd(['validate', '--config', path.join(dir, 'nope')]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/cannot read .*nope.*ENOENT/);
  });

  it('fmt prints the canonical form; --check exits 1 until --overwrite formats the file', async () => {
    const file = path.join(dir, 'fmt.Proxyfile');
    const messy = 'a.test   {\n    reverse_proxy   127.0.0.1:9000 # app\n\n\n}\n';
    const canonical = 'a.test {\n\treverse_proxy 127.0.0.1:9000 # app\n}\n';
    await writeFile(file, messy);
    expect(await proxyd(['fmt', file])).toEqual({ code: 0, stdout: canonical, stderr: '' });
    expect(await readFile(file, 'utf8')).toBe(messy);
    const check = await proxyd(['fmt', '--check', file]);
    expect(check.code).toBe(1);
    expect(check.stdout).toBe('');
    expect(check.stderr).toContain('not formatted');
    expect((await proxyd(['fmt', '--overwrite', file])).code).toBe(0);
    expect(await readFile(file, 'utf8')).toBe(canonical);
    expect(await proxyd(['fmt', '--check', file])).toEqual({ code: 0, stdout: '', stderr: '' });
  });

  it('fmt reports an unterminated quote with its position and exits 1', async () => {
    const file = path.join(dir, 'quote.Proxyfile');
    await writeFile(file, 'a.test {\n\trespond "open\n}\n');
    const r = await proxyd(['fmt', file]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      `${file}:2:10: unterminated quoted string: expected a closing " before the end of the file\n`,
    );
  });
});
