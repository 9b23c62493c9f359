import { type ChildProcess, execFile, execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { logLines, waitUntil } from './support/admin.js';
import { freePort, PROXYD_MAIN, type RunningProxyd, request, startProxyd, startUpstream } from './support/proxyd.js';

const run = promisify(execFile);
const appPackage = fileURLToPath(new URL('../apps/proxyd/package.json', import.meta.url));
const buildInfoFile = fileURLToPath(new URL('../packages/cli/dist/build-info.json', import.meta.url));
const buildInfoScript = fileURLToPath(new URL('../packages/cli/scripts/write-build-info.mjs', import.meta.url));

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the built proxyd to its end; `input` goes to stdin (closed after). */
function proxyd(args: string[], options: { env?: NodeJS.ProcessEnv; input?: string; cwd?: string } = {}) {
  return new Promise<Result>((resolve, reject) => {
    const child = spawn(process.execPath, [PROXYD_MAIN, ...args], {
      env: { ...process.env, ...options.env },
      cwd: options.cwd ?? tmpdir(),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(options.input ?? '');
  });
}

describe('the proxyd command line', () => {
  it('dist/main.js is executable and `--help` lists the commands', async () => {
    expect((await stat(PROXYD_MAIN)).mode & 0o111).toBe(0o111);
    const { stdout } = await run(PROXYD_MAIN, ['--help']);
    expect(stdout).toMatch(/^Usage: proxyd /);
    for (const command of [
      'run',
      'demo',
      'reload',
      'health',
      'validate',
      'adapt',
      'fmt',
      'hash-password',
      'version',
      'openapi',
      'trust',
      'untrust',
    ]) {
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

describe('proxyd version', () => {
  it('prints one line: version, the commit the build recorded, Node.js and the platform', async () => {
    const { version } = JSON.parse(await readFile(appPackage, 'utf8')) as { version: string };
    const info = existsSync(buildInfoFile)
      ? (JSON.parse(readFileSync(buildInfoFile, 'utf8')) as { commit: string | null; dirty: boolean | null })
      : { commit: null, dirty: null };
    const commit = info.commit === null ? 'unknown' : `${info.commit.slice(0, 12)}${info.dirty ? '+dirty' : ''}`;
    const r = await proxyd(['version']);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(
      new RegExp(
        `^v${version.replaceAll('.', '\\.')} commit ${commit.replace('+', '\\+')}( built \\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ)? node ${process.version} ${process.platform}/${process.arch}\n$`,
      ),
    );
  });

  it("the build step records this checkout's commit", () => {
    const head = spawnSync('git', ['rev-parse', 'HEAD'], { cwd: path.dirname(buildInfoScript), encoding: 'utf8' });
    expect(head.status, 'tests run from a git checkout').toBe(0);
    const dir = mkdtempSync(path.join(tmpdir(), 'proxyd-build-info-'));
    try {
      execFileSync(process.execPath, [buildInfoScript, path.join(dir, 'info.json')]);
      const info = JSON.parse(readFileSync(path.join(dir, 'info.json'), 'utf8')) as Record<string, unknown>;
      expect(info).toEqual({
        commit: head.stdout.trim(),
        dirty: expect.any(Boolean),
        built: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('usage errors: one line, exit status 2, never a stack trace', () => {
  it.each([
    [['bogus'], {}, "proxyd: unknown command 'bogus' (see proxyd --help)"],
    [['run', '--bogus'], {}, "proxyd: unknown option '--bogus' (see proxyd run --help)"],
    [
      ['run', '--workers', 'lots'],
      {},
      'proxyd: invalid --workers "lots": a whole number of worker processes from 1 to 1024',
    ],
    [
      ['fmt', '--check', '--diff', 'Proxyfile'],
      {},
      "proxyd: option '--check' cannot be used with option '--diff' (see proxyd fmt --help)",
    ],
    [
      ['hash-password', '--cost', '99', '--plaintext', 'x'],
      {},
      'proxyd: invalid --cost "99": a whole number from 4 to 31',
    ],
    [
      ['validate'],
      {},
      'proxyd: validate needs a Proxyfile: --config <path>, PROXY_CONFIG, or a file named Proxyfile in the current directory',
    ],
    [
      ['run', '--no-docker'],
      { PROXY_LOG: 'loud' },
      'proxyd: PROXY_LOG: unknown level "loud" (expected trace, debug, info, warn, error, fatal or off)',
    ],
    [
      ['demo'],
      { PROXY_LOG: 'info,proxy::admin=chatty' },
      'proxyd: PROXY_LOG: unknown level "chatty" (expected trace, debug, info, warn, error, fatal or off)',
    ],
  ] as const)('%j', async (args, env, line) => {
    const dir = mkdtempSync(path.join(tmpdir(), 'proxyd-usage-'));
    try {
      const r = await proxyd([...args], { env: { PROXY_CONFIG: '', ...env }, cwd: dir });
      expect(r).toEqual({ code: 2, stdout: '', stderr: `${line}\n` });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a failure at run time is one line with status 1', async () => {
    const r = await proxyd(['run', '--config', '/nonexistent/Proxyfile', '--no-docker']);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      "proxyd: cannot read /nonexistent/Proxyfile: ENOENT: no such file or directory, open '/nonexistent/Proxyfile'\n",
    );
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

describe('proxyd demo: what it says, and Ctrl-C', () => {
  let child: ChildProcess | undefined;
  let holder: net.Server | undefined;
  afterEach(async () => {
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    child = undefined;
    await new Promise<void>((resolve) => (holder ? holder.close(() => resolve()) : resolve()));
    holder = undefined;
  });

  /** Starts the built demo and resolves once it says it runs. */
  async function startDemo(): Promise<{ demo: ChildProcess; output: () => string; exited: Promise<number | null> }> {
    const env: NodeJS.ProcessEnv = { ...process.env };
    delete env.PROXY_ADMIN_TOKEN;
    const demo = spawn(process.execPath, [PROXYD_MAIN, 'demo'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    child = demo;
    let output = '';
    demo.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    demo.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => demo.once('exit', (code) => resolve(code)));
    await waitUntil(() => output.includes('Ctrl-C stops.') || demo.exitCode !== null, 15_000).catch(() => {
      throw new Error(`demo did not start:\n${output}`);
    });
    return { demo, output: () => output, exited };
  }

  it('prints the Proxyfile it runs, says that port 8080 was busy, and exits 0 on Ctrl-C (SIGINT)', async () => {
    // Port 8080 busy, whoever holds it: this test, or something else on the machine.
    holder = await new Promise<net.Server | undefined>((resolve) => {
      const server = net.createServer();
      server.once('error', () => resolve(undefined));
      server.listen(8080, '127.0.0.1', () => resolve(server));
    });
    const { demo, output, exited } = await startDemo();
    const text = output();
    const port = Number(/Open http:\/\/localhost:(\d+)\//.exec(text)?.[1]);
    expect(port).not.toBe(8080);
    expect(text).toContain(`HTTP port 8080 is busy, using ${port}\n`);
    const upstreamPort = /reverse_proxy 127\.0\.0\.1:(\d+)/.exec(text)?.[1];
    const adminPort = /Admin API: http:\/\/127\.0\.0\.1:(\d+)/.exec(text)?.[1];
    expect(text).toContain(
      'proxyd demo runs this Proxyfile:\n\n' +
        `    {\n        http_port ${port}\n        admin 127.0.0.1:${adminPort}\n    }\n\n` +
        `    http://localhost, http://127.0.0.1 {\n        reverse_proxy 127.0.0.1:${upstreamPort}\n    }\n`,
    );
    const stateDir = /state in (\S+), removed on exit/.exec(text)?.[1] as string;
    expect((await fetch(`http://127.0.0.1:${port}/`)).status).toBe(200);

    demo.kill('SIGINT');
    expect(await exited).toBe(0);
    expect(existsSync(stateDir)).toBe(false);
  });

  it('a second Ctrl-C while it stops still exits 0', async () => {
    const { demo, exited } = await startDemo();
    demo.kill('SIGINT');
    demo.kill('SIGINT');
    expect(await exited).toBe(0);
  });
});

describe('proxyd hash-password', () => {
  let proxy: RunningProxyd | undefined;
  afterEach(async () => {
    await proxy?.stop();
    proxy = undefined;
  });

  /** Serves a basic_auth site for user `ann` with `hash`; resolves the status for `password`. */
  async function statusWith(hash: string, passwords: string[]): Promise<number[]> {
    proxy = await startProxyd({
      sites: `http://auth.test {\n\tbasic_auth {\n\t\tann ${hash}\n\t}\n\trespond "in"\n}\n`,
      args: ['--no-docker', '--workers', '1'],
    });
    const statuses: number[] = [];
    for (const password of passwords) {
      const authorization = `Basic ${Buffer.from(`ann:${password}`).toString('base64')}`;
      statuses.push((await request(proxy.httpPort, { headers: { host: 'auth.test', authorization } })).status);
    }
    return statuses;
  }

  it('--plaintext prints a bcrypt hash that basic_auth accepts for that password only', async () => {
    const r = await proxyd(['hash-password', '--plaintext', 'correct horse', '--cost', '4']);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/^\$2b\$04\$[./A-Za-z0-9]{53}\n$/);
    expect(await statusWith(r.stdout.trim(), ['correct horse', 'wrong'])).toEqual([200, 401]);
  });

  it('reads the first line of piped stdin, with cost 12 by default', async () => {
    const r = await proxyd(['hash-password'], { input: 'piped secret\nnot this line\n' });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^\$2b\$12\$[./A-Za-z0-9]{53}\n$/);
    expect(await statusWith(r.stdout.trim(), ['piped secret', 'not this line'])).toEqual([200, 401]);
  });

  it('an empty password is refused', async () => {
    expect(await proxyd(['hash-password'], { input: '\n' })).toEqual({
      code: 1,
      stdout: '',
      stderr: 'proxyd: empty password: nothing to hash\n',
    });
  });

  /** Runs hash-password on a terminal (util-linux `script`), typing each line after its prompt shows. */
  async function onTerminal(lines: string[]): Promise<{ code: number | null; screen: string }> {
    const command = `${process.execPath} ${PROXYD_MAIN} hash-password --cost 4`;
    const term = spawn('script', ['-qec', command, '/dev/null'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let screen = '';
    term.stdout.on('data', (chunk: Buffer) => {
      screen += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => term.once('exit', (code) => resolve(code)));
    const prompts = ['Enter password: ', 'Confirm password: '];
    for (const [i, line] of lines.entries()) {
      await waitUntil(() => screen.split(prompts[i] as string).length > 1, 15_000);
      term.stdin.write(`${line}\r`);
    }
    const code = await exited;
    term.stdin.end();
    return { code, screen };
  }

  it('on a terminal, prompts twice without echoing the password', async () => {
    const { code, screen } = await onTerminal(['typed secret', 'typed secret']);
    expect(code).toBe(0);
    expect(screen).toContain('Enter password: ');
    expect(screen).toContain('Confirm password: ');
    expect(screen).not.toContain('typed');
    const hash = /\$2b\$04\$[./A-Za-z0-9]{53}/.exec(screen)?.[0] as string;
    expect(await statusWith(hash, ['typed secret', 'typed'])).toEqual([200, 401]);
  });

  it('on a terminal, two typings that differ exit 1', async () => {
    const { code, screen } = await onTerminal(['one', 'two']);
    expect(code).toBe(1);
    expect(screen).toContain('proxyd: passwords do not match');
    expect(screen).not.toMatch(/\$2b\$/);
  });
});
