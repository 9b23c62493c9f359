import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { CommanderError } from 'commander';
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { EXIT_USAGE, UsageError } from './errors.js';
import { buildProgram, type DaemonCommands, isReported, type RunOptions } from './program.js';

function fakeDaemon() {
  const runs: RunOptions[] = [];
  const daemon: DaemonCommands = {
    run: async (options) => {
      runs.push(options);
    },
    demo: async () => {},
    trust: async () => ({ steps: [] }),
    untrust: async () => ({ steps: [] }),
  };
  return { daemon, runs };
}

describe('proxyd usage errors', () => {
  let stderr: string[];
  beforeEach(() => {
    stderr = [];
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      stderr.push(String(chunk));
      return true;
    });
  });
  afterEach(() => vi.restoreAllMocks());

  async function usage(args: string[]): Promise<CommanderError> {
    const err = await buildProgram('1.0.0', fakeDaemon().daemon)
      .parseAsync(args, { from: 'user' })
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(isReported(err)).toBe(true);
    return err as CommanderError;
  }

  it.each([
    [['bogus'], "proxyd: unknown command 'bogus' (see proxyd --help)\n"],
    [['run', '--bogus'], "proxyd: unknown option '--bogus' (see proxyd run --help)\n"],
    [
      ['fmt', '--check', '--diff', 'x'],
      "proxyd: option '--check' cannot be used with option '--diff' (see proxyd fmt --help)\n",
    ],
    [
      ['fmt', '--overwrite', '--diff', 'x'],
      "proxyd: option '--overwrite' cannot be used with option '--diff' (see proxyd fmt --help)\n",
    ],
    [['run', '--config'], "proxyd: option '-c, --config <path>' argument missing (see proxyd run --help)\n"],
  ])('%j prints one line and exits 2', async (args, line) => {
    const err = await usage(args);
    expect(err.exitCode).toBe(EXIT_USAGE);
    expect(stderr).toEqual([line]);
  });

  it('help and --version end with status 0', async () => {
    vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    expect((await usage(['--version'])).exitCode).toBe(0);
    expect((await usage(['run', '--help'])).exitCode).toBe(0);
  });

  it('a bad --workers or PROXY_WORKERS is a usage error naming where it came from', async () => {
    const program = buildProgram('1.0.0', fakeDaemon().daemon);
    await expect(program.parseAsync(['run', '--workers', '0'], { from: 'user' })).rejects.toThrow(
      new UsageError('invalid --workers "0": a whole number of worker processes from 1 to 1024'),
    );
    vi.stubEnv('PROXY_WORKERS', 'many');
    await expect(buildProgram('1.0.0', fakeDaemon().daemon).parseAsync(['run'], { from: 'user' })).rejects.toThrow(
      'invalid PROXY_WORKERS "many"',
    );
    vi.unstubAllEnvs();
  });
});

describe('proxyd run options', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'proxyd-program-'));
  const cwd = process.cwd();
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  afterEach(() => {
    vi.unstubAllEnvs();
    process.chdir(cwd);
  });

  async function run(args: string[]): Promise<RunOptions | undefined> {
    const { daemon, runs } = fakeDaemon();
    await buildProgram('1.0.0', daemon).parseAsync(['run', ...args], { from: 'user' });
    return runs[0];
  }

  it('PROXY_CERT_CACHE and PROXY_WORKER_CERT_CACHE size the certificate caches; a bad one is a usage error', async () => {
    expect(await run([])).not.toHaveProperty('certCache');
    vi.stubEnv('PROXY_CERT_CACHE', '50000');
    vi.stubEnv('PROXY_WORKER_CERT_CACHE', '2000');
    expect(await run([])).toMatchObject({ certCache: 50_000, workerCertCache: 2000 });
    vi.stubEnv('PROXY_WORKER_CERT_CACHE', '0');
    await expect(run([])).rejects.toThrow(
      new UsageError('invalid PROXY_WORKER_CERT_CACHE "0": a whole number of certificates from 1 to 10000000'),
    );
  });

  it('--envfile is loaded before PROXY_CONFIG, PROXY_CERT_DIR and PROXY_WORKERS are read', async () => {
    vi.stubEnv('PROXY_CONFIG', undefined);
    vi.stubEnv('PROXY_CERT_DIR', undefined);
    vi.stubEnv('PROXY_WORKERS', undefined);
    const envfile = path.join(dir, 'proxyd.env');
    writeFileSync(envfile, 'PROXY_CONFIG=/etc/proxyd/Proxyfile\nPROXY_CERT_DIR=/certs\nPROXY_WORKERS=3\n');
    expect(await run(['--envfile', envfile, '--watch', '--pidfile', '/run/proxyd.pid'])).toEqual({
      config: '/etc/proxyd/Proxyfile',
      configFrom: 'env',
      certDir: '/certs',
      workers: 3,
      watch: true,
      pidfile: '/run/proxyd.pid',
      metrics: true,
      docker: true,
    });
  });

  it('takes ./Proxyfile when neither --config nor PROXY_CONFIG names one; --watch needs one', async () => {
    vi.stubEnv('PROXY_CONFIG', undefined);
    process.chdir(dir);
    await expect(run(['--watch'])).rejects.toThrow(
      new UsageError('run --watch needs a Proxyfile: --config <path>, PROXY_CONFIG, or ./Proxyfile'),
    );
    expect(await run([])).not.toHaveProperty('config');
    writeFileSync(path.join(dir, 'Proxyfile'), 'a.test {\n\trespond "a"\n}\n');
    expect(await run([])).toMatchObject({ config: path.join(process.cwd(), 'Proxyfile'), configFrom: 'default' });
    expect(await run(['--config', 'other'])).toMatchObject({ config: 'other', configFrom: 'flag' });
  });
});
