import { execFile, execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selfSigned } from './support/certs.js';
import { PROXYD_MAIN } from './support/proxyd.js';

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

function proxyd(args: string[], env: NodeJS.ProcessEnv = {}, options: { cwd?: string; input?: string } = {}) {
  return new Promise<Result>((resolve) => {
    const child = execFile(
      process.execPath,
      [PROXYD_MAIN, ...args],
      { env: { ...process.env, ...env }, timeout: 30_000, cwd: options.cwd ?? tmpdir() },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
    child.stdin?.end(options.input ?? '');
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

// What Caddy users expect: ./Proxyfile by default, adapt, fmt - and --diff, tls files checked.
describe('proxyd validate, adapt and fmt as Caddy users expect (built CLI)', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'proxyd-proxyfile-cli-caddy-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });
  /** A fresh directory holding `Proxyfile` with `text`. */
  async function project(name: string, text: string): Promise<string> {
    const where = path.join(dir, name);
    await mkdir(where);
    await writeFile(path.join(where, 'Proxyfile'), text);
    return where;
  }
  const noEnv = { PROXY_CONFIG: '' };

  it('validate, adapt and fmt read ./Proxyfile when no path is given', async () => {
    const cwd = await project('default', 'a.test {\n  reverse_proxy 127.0.0.1:9000\n}\n');
    expect(await proxyd(['validate'], noEnv, { cwd })).toEqual({
      code: 0,
      stdout: 'Valid configuration: 1 site, 1 upstream\n',
      stderr: '',
    });
    const adapted = await proxyd(['adapt'], noEnv, { cwd });
    expect(adapted.code).toBe(0);
    expect(JSON.parse(adapted.stdout).sites[0].addresses).toBeDefined();
    expect(await proxyd(['fmt'], noEnv, { cwd })).toEqual({
      code: 0,
      stdout: 'a.test {\n\treverse_proxy 127.0.0.1:9000\n}\n',
      stderr: '',
    });
  });

  it('adapt prints the compiled model as JSON: one line, or indented with --pretty', async () => {
    const file = path.join(dir, 'adapt.Proxyfile');
    await writeFile(file, '{\n\thttp_port 8081\n}\nb.test {\n\treverse_proxy 127.0.0.1:9001\n}\n');
    const compact = await proxyd(['adapt', '--config', file]);
    expect(compact.code).toBe(0);
    expect(compact.stdout.trimEnd()).not.toContain('\n');
    const model = JSON.parse(compact.stdout) as { global: Record<string, unknown>; sites: unknown[] };
    expect(model.global).toMatchObject({ http_port: 8081, https_port: 443, admin: null });
    expect(model.sites).toHaveLength(1);
    expect(JSON.stringify(model.sites[0])).toContain('"port":9001');
    const pretty = await proxyd(['adapt', '--config', file, '--pretty']);
    expect(pretty.stdout).toBe(`${JSON.stringify(model, null, 2)}\n`);
  });

  it('adapt of a bad Proxyfile prints the positioned error and exits 1', async () => {
    const file = path.join(dir, 'adapt-bad.Proxyfile');
    await writeFile(file, 'a.test {\n\treverse_prxy 127.0.0.1:9000\n}\n');
    expect(await proxyd(['adapt', '--config', file])).toEqual({
      code: 1,
      stdout: '',
      stderr: `${file}:2:2: unknown directive "reverse_prxy", did you mean "reverse_proxy"?\n`,
    });
  });

  it('validate and adapt --envfile fill {$VAR} placeholders', async () => {
    const file = path.join(dir, 'env.Proxyfile');
    await writeFile(file, '{$SITE} {\n\treverse_proxy {$UP}\n}\n');
    const envfile = path.join(dir, 'site.env');
    await writeFile(envfile, 'SITE=env.test\nUP=127.0.0.1:9100\n');
    const env = { SITE: undefined, UP: undefined };
    expect((await proxyd(['validate', '--config', file, '--envfile', envfile], env)).stdout).toBe(
      'Valid configuration: 1 site, 1 upstream\n',
    );
    expect((await proxyd(['adapt', '--config', file, '--envfile', envfile], env)).stdout).toContain('env.test');
    const missing = await proxyd(['validate', '--config', file, '--envfile', path.join(dir, 'none.env')], env);
    expect(missing).toEqual({
      code: 1,
      stdout: '',
      stderr: `proxyd: cannot read env file ${path.join(dir, 'none.env')}: ENOENT\n`,
    });
  });

  it('fmt - formats stdin to stdout; --check on stdin exits 1 when it is not formatted', async () => {
    const messy = 'a.test   {\n    respond   "a"\n}\n';
    expect(await proxyd(['fmt', '-'], {}, { input: messy })).toEqual({
      code: 0,
      stdout: 'a.test {\n\trespond "a"\n}\n',
      stderr: '',
    });
    expect(await proxyd(['fmt', '-', '--check'], {}, { input: messy })).toEqual({
      code: 1,
      stdout: '',
      stderr: '<stdin>: not formatted\n',
    });
    expect(await proxyd(['fmt', '-', '--overwrite'], {}, { input: messy })).toEqual({
      code: 2,
      stdout: '',
      stderr: 'proxyd: fmt - (stdin) cannot --overwrite: the output goes to stdout\n',
    });
  });

  it('fmt --diff prints a diff that patch applies, exits 1; on a formatted file prints nothing, exits 0', async () => {
    const cwd = await project('diff', 'a.test   {\n    respond   "a"\n}\n\n\n\nb.test {\nrespond "b"\n}\n');
    const r = await proxyd(['fmt', '--diff'], noEnv, { cwd });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/^--- .*Proxyfile\n\+\+\+ .*Proxyfile\n@@ -1,9 \+1,7 @@\n/);
    const formatted = (await proxyd(['fmt'], noEnv, { cwd })).stdout;
    execFileSync('patch', ['-s', path.join(cwd, 'Proxyfile')], { input: r.stdout });
    expect(await readFile(path.join(cwd, 'Proxyfile'), 'utf8')).toBe(formatted);
    expect(await proxyd(['fmt', '--diff'], noEnv, { cwd })).toEqual({ code: 0, stdout: '', stderr: '' });
  });
});

describe('proxyd validate: the files of tls <cert> <key> (built CLI)', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'proxyd-validate-tls-'));
    selfSignedInto(path.join(dir, 'a'), 'a.test');
    selfSignedInto(path.join(dir, 'b'), 'b.test');
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });
  function selfSignedInto(where: string, name: string): void {
    execFileSync('mkdir', ['-p', where]);
    selfSigned(where, [name]);
  }
  const validate = async (tlsLine: string) => {
    await writeFile(path.join(dir, 'Proxyfile'), `a.test {\n\t${tlsLine}\n\trespond "a"\n}\n`);
    return proxyd(['validate'], { PROXY_CONFIG: '' }, { cwd: dir });
  };

  it('a certificate with its key is valid; paths are relative to the current directory, as run reads them', async () => {
    expect(await validate('tls a/cert.pem a/key.pem')).toEqual({
      code: 0,
      stdout: 'Valid configuration: 1 site, 0 upstreams\n',
      stderr: '',
    });
  });

  it('a missing file, a file that is not PEM, and a key of another certificate are positioned errors', async () => {
    expect(await validate('tls a/missing.pem a/key.pem')).toEqual({
      code: 1,
      stdout: '',
      stderr: `${path.join(dir, 'Proxyfile')}:2:6: tls certificate file "a/missing.pem" cannot be read: ENOENT: no such file or directory\n`,
    });
    const notPem = await validate('tls a/cert.pem Proxyfile');
    expect(notPem.code).toBe(1);
    expect(notPem.stderr).toMatch(
      new RegExp(`^${path.join(dir, 'Proxyfile')}:2:17: tls key file "Proxyfile" is not a PEM private key`),
    );
    expect(await validate('tls a/cert.pem b/key.pem')).toEqual({
      code: 1,
      stdout: '',
      stderr: `${path.join(dir, 'Proxyfile')}:2:2: tls key file "b/key.pem" does not belong to the certificate in "a/cert.pem"\n`,
    });
  });
});
