import { type ChildProcess, execFile, spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { logLines, waitUntil } from './support/admin.js';
import { freePort, PROXYD_MAIN, type RunningProxyd, request, startProxyd, startUpstream } from './support/proxyd.js';

const run = promisify(execFile);
const appPackage = fileURLToPath(new URL('../apps/proxyd/package.json', import.meta.url));

describe('the proxyd command line', () => {
  it('dist/main.js is executable and `--help` lists the commands', async () => {
    expect((await stat(PROXYD_MAIN)).mode & 0o111).toBe(0o111);
    const { stdout } = await run(PROXYD_MAIN, ['--help']);
    expect(stdout).toMatch(/^Usage: proxyd /);
    for (const command of ['run', 'demo', 'reload', 'openapi', 'validate', 'fmt', 'trust', 'untrust']) {
      expect(stdout).toMatch(new RegExp(`^\\s+${command}\\b`, 'm'));
    }
  });

  it('`--version` and `-v` print the version of apps/proxyd/package.json', async () => {
    const { version } = JSON.parse(await readFile(appPackage, 'utf8')) as { version: string };
    expect(version).toMatch(/^\d+\.\d+\.\d+/);
    for (const flag of ['--version', '-v']) {
      const { stdout } = await run(process.execPath, [PROXYD_MAIN, flag]);
      expect(stdout.trim()).toBe(version);
    }
  });
});

describe('proxyd run', () => {
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  let proxyd: RunningProxyd | undefined;
  const sites = () => `http://cli.test {\n\treverse_proxy 127.0.0.1:${upstream.port}\n}\n`;

  beforeAll(async () => {
    upstream = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('from the cli upstream');
    });
  });
  afterEach(async () => {
    await proxyd?.stop();
    proxyd = undefined;
  });
  afterAll(async () => {
    await upstream?.close();
  });

  it('reads the Proxyfile named by PROXY_CONFIG when --config is absent, and routes by it', async () => {
    proxyd = await startProxyd({ sites: sites(), configVia: 'env' });
    expect(proxyd.child.spawnargs).not.toContain('--config');
    const ready = logLines(proxyd.output()).find((line) => line.msg === 'proxyd ready');
    expect(ready?.proxyfile).toBe(proxyd.configPath);
    const res = await request(proxyd.httpPort, { headers: { host: 'cli.test' } });
    expect(res.status).toBe(200);
    expect(res.body).toBe('from the cli upstream');
  });

  it('`--admin host:port` overrides the Proxyfile admin address', async () => {
    const adminPort = await freePort();
    proxyd = await startProxyd({ sites: sites(), args: ['--admin', `127.0.0.1:${adminPort}`] });
    expect(proxyd.adminPort).not.toBe(adminPort);
    expect((await request(adminPort, { path: '/health' })).status).toBe(200);
    await expect(request(proxyd.adminPort, { path: '/health' })).rejects.toThrow(/ECONNREFUSED/);
    expect((await request(proxyd.httpPort, { headers: { host: 'cli.test' } })).status).toBe(200);
  });
});

// Drop to nobody when running as root and nobody can run the built daemon from
// where it is; otherwise the current user (HOME is unwritable either way).
const asNobody =
  process.getuid?.() === 0 &&
  spawnSync('setpriv', [
    '--reuid',
    '65534',
    '--regid',
    '65534',
    '--clear-groups',
    process.execPath,
    '-e',
    `require('node:fs').accessSync(${JSON.stringify(PROXYD_MAIN)}, require('node:fs').constants.R_OK)`,
  ]).status === 0;

describe('proxyd demo', () => {
  let child: ChildProcess | undefined;
  afterEach(() => {
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    child = undefined;
  });

  it(`runs as ${asNobody ? 'uid 65534' : 'the current user'} with HOME=/nonexistent: loopback only, temp state, random token`, async () => {
    const homeExisted = existsSync('/nonexistent');
    const env: NodeJS.ProcessEnv = { ...process.env, HOME: '/nonexistent' };
    delete env.PROXY_ADMIN_TOKEN;
    delete env.XDG_STATE_HOME;
    const command = asNobody
      ? ['setpriv', '--reuid', '65534', '--regid', '65534', '--clear-groups', process.execPath, PROXYD_MAIN, 'demo']
      : [process.execPath, PROXYD_MAIN, 'demo'];
    const demo = spawn(command[0] as string, command.slice(1), { env, stdio: ['ignore', 'pipe', 'pipe'] });
    child = demo;
    let output = '';
    demo.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    demo.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => demo.once('exit', (code) => resolve(code)));
    await waitUntil(
      () => (output.includes('Ctrl-C stops.') && output.includes('"proxyd ready"')) || demo.exitCode !== null,
      15_000,
    ).catch(() => {
      throw new Error(`demo did not start:\n${output}`);
    });

    const url = /Open (http:\/\/localhost:\d+\/)/.exec(output)?.[1];
    const admin = /Admin API: http:\/\/(127\.0\.0\.1:\d+)/.exec(output)?.[1];
    const token = /Authorization: Bearer ([A-Za-z0-9_-]+)" http:\/\/127\.0\.0\.1:\d+\/routes/.exec(output)?.[1];
    const stateDir = /state in (\S+), removed on exit/.exec(output)?.[1];
    expect({ url, admin, token, stateDir }, output).toEqual({
      url: expect.any(String),
      admin: expect.any(String),
      token: expect.stringMatching(/^.{32}$/),
      stateDir: expect.stringContaining(path.join(tmpdir(), 'proxyd-demo-')),
    });
    expect(output).not.toContain('PROXY_ADMIN_TOKEN is not set');

    // The data plane listens on loopback only; the printed admin address is the one bound.
    const ready = logLines(output).find((line) => line.msg === 'proxyd ready');
    expect(ready?.http).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(ready?.admin).toBe(admin);
    expect(ready?.state_dir).toBe(stateDir);
    expect((await stat(stateDir as string)).isDirectory()).toBe(true);

    const page = await fetch(url as string);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain(`curl http://${admin}/health`);

    const adminPort = Number((admin as string).split(':')[1]);
    const routes = await request(adminPort, { path: '/routes', headers: { authorization: `Bearer ${token}` } });
    expect(routes.status).toBe(200);
    expect(JSON.stringify(JSON.parse(routes.body))).toContain('localhost');
    expect((await request(adminPort, { path: '/routes' })).status).toBe(401);

    demo.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(existsSync(stateDir as string)).toBe(false);
    expect(existsSync('/nonexistent')).toBe(homeExisted);
  });
});
