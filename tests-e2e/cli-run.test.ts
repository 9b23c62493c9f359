import { type ChildProcess, spawn } from 'node:child_process';
import { chownSync, existsSync, readFileSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, adminCall, logLines, waitUntil } from './support/admin.js';
import { freePort, PROXYD_MAIN, type RunningProxyd, request, startProxyd, startUpstream } from './support/proxyd.js';

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the built proxyd to its end (30 s at most). */
function proxyd(args: string[], env: NodeJS.ProcessEnv = {}, cwd = tmpdir()): Promise<Result> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [PROXYD_MAIN, ...args], {
      env: { ...process.env, ...env },
      cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
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
  });
}

/** A `proxyd run` started by {@link spawnRun}. */
interface Spawned {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  exited: Promise<number | null>;
}

/**
 * Starts `command` (the built proxyd, or a wrapper around it) and waits
 * until `ready` holds for what it printed, or it exits.
 */
async function spawnRun(
  command: string[],
  options: {
    cwd: string;
    env?: NodeJS.ProcessEnv;
    ready: (out: { stdout: string; stderr: string }) => boolean | Promise<boolean>;
  },
): Promise<Spawned> {
  const child = spawn(command[0] as string, command.slice(1), {
    cwd: options.cwd,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  await waitUntil(async () => child.exitCode !== null || (await options.ready({ stdout, stderr })), 20_000).catch(
    () => {
      child.kill('SIGKILL');
      throw new Error(`proxyd did not start:\n${stdout}\n${stderr}`);
    },
  );
  return { child, stdout: () => stdout, stderr: () => stderr, exited };
}

const readyLine = ({ stdout }: { stdout: string }) => stdout.includes('"proxyd ready"');
const isRoot = process.getuid?.() === 0;

describe('proxyd run: where the Proxyfile and the environment come from', () => {
  let dir: string;
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  let running: Spawned | undefined;
  beforeAll(async () => {
    upstream = await startUpstream((_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('up'));
  });
  afterAll(async () => {
    await upstream.close();
  });
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'proxyd-cli-run-'));
  });
  afterEach(async () => {
    if (running && running.child.exitCode === null) {
      running.child.kill('SIGKILL');
      await running.exited;
    }
    running = undefined;
    await rm(dir, { recursive: true, force: true });
  });

  async function writeProxyfile(file: string, sites: string, global = ''): Promise<{ http: number; admin: number }> {
    const [http, https, admin] = [await freePort(), await freePort(), await freePort()];
    await writeFile(
      file,
      `{\n\thttp_port ${http}\n\thttps_port ${https}\n\tadmin 127.0.0.1:${admin}\n\tauto_https off\n${global}}\n\n${sites}`,
    );
    return { http, admin };
  }
  const isolation = () => [
    '--state-dir',
    path.join(dir, 'state'),
    '--cert-dir',
    path.join(dir, 'certs'),
    '--no-docker',
  ];

  it('reads ./Proxyfile when neither --config nor PROXY_CONFIG names one', async () => {
    const ports = await writeProxyfile(
      path.join(dir, 'Proxyfile'),
      `http://here.test {\n\treverse_proxy 127.0.0.1:${upstream.port}\n}\n`,
    );
    running = await spawnRun([process.execPath, PROXYD_MAIN, 'run', ...isolation(), '--workers', '1'], {
      cwd: dir,
      env: { PROXY_CONFIG: '' },
      ready: readyLine,
    });
    const lines = logLines(running.stdout());
    expect(lines.find((l) => l.msg === 'using the Proxyfile in the current directory')?.path).toBe(
      path.join(dir, 'Proxyfile'),
    );
    expect(lines.find((l) => l.msg === 'proxyd ready')?.proxyfile).toBe(path.join(dir, 'Proxyfile'));
    expect((await request(ports.http, { headers: { host: 'here.test' } })).body).toBe('up');
  });

  it('--envfile sets PROXY_ADMIN_TOKEN, PROXY_LOG and the {$VAR} of the Proxyfile; the environment wins', async () => {
    const config = path.join(dir, 'site.Proxyfile');
    const ports = await writeProxyfile(config, 'http://{$SITE_NAME} {\n\treverse_proxy {$UPSTREAM}\n}\n');
    const envfile = path.join(dir, 'proxyd.env');
    await writeFile(
      envfile,
      `# proxyd settings\nPROXY_ADMIN_TOKEN=${ADMIN_TOKEN}\nPROXY_LOG=warn\nSITE_NAME=file.test\nUPSTREAM=127.0.0.1:${upstream.port}\nPROXY_CONFIG=${config}\n`,
    );
    // PROXY_LOG=warn hides the ready line: poll the health endpoint instead.
    running = await spawnRun(
      [process.execPath, PROXYD_MAIN, 'run', '--envfile', envfile, ...isolation(), '--workers', '1'],
      {
        cwd: dir,
        // SITE_NAME is set in the environment: it wins over the file's.
        env: { PROXY_ADMIN_TOKEN: undefined, PROXY_LOG: undefined, PROXY_CONFIG: undefined, SITE_NAME: 'env.test' },
        ready: () =>
          request(ports.admin, { path: '/health' }).then(
            (res) => res.status === 200,
            () => false,
          ),
      },
    );
    expect((await adminCall(ports.admin, 'GET', '/routes')).status).toBe(200);
    expect((await request(ports.http, { headers: { host: 'env.test' } })).body).toBe('up');
    expect((await request(ports.http, { headers: { host: 'file.test' } })).status).toBe(404);
    expect(logLines(running.stdout()).filter((l) => l.level === 'info')).toEqual([]);
  });

  it('--pidfile holds the pid while it runs and is removed on a clean exit', async () => {
    const config = path.join(dir, 'Proxyfile');
    await writeProxyfile(config, 'http://pid.test {\n\trespond "pid"\n}\n');
    const pidfile = path.join(dir, 'proxyd.pid');
    running = await spawnRun(
      [process.execPath, PROXYD_MAIN, 'run', '--config', config, '--pidfile', pidfile, ...isolation()],
      { cwd: dir, ready: readyLine },
    );
    expect(await readFile(pidfile, 'utf8')).toBe(`${running.child.pid}\n`);
    running.child.kill('SIGTERM');
    expect(await running.exited).toBe(0);
    expect(existsSync(pidfile)).toBe(false);
  });

  it('--pidfile that cannot be written stops before anything starts', async () => {
    const r = await proxyd(['run', '--pidfile', path.join(dir, 'no', 'such', 'dir.pid'), ...isolation()], {}, dir);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`proxyd: cannot write pidfile ${path.join(dir, 'no', 'such', 'dir.pid')}: ENOENT\n`);
    expect(r.stdout).not.toContain('proxyd ready');
  });
});

describe('proxyd run --watch', () => {
  let dir: string;
  let running: Spawned | undefined;
  let a: Awaited<ReturnType<typeof startUpstream>>;
  let b: Awaited<ReturnType<typeof startUpstream>>;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'proxyd-cli-watch-'));
    a = await startUpstream((_req, res) => res.end('from A'));
    b = await startUpstream((_req, res) => res.end('from B'));
  });
  afterAll(async () => {
    if (running && running.child.exitCode === null) running.child.kill('SIGKILL');
    await a.close();
    await b.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('reloads when the Proxyfile changes, and a change inside the 5 s cooldown is applied after it', async () => {
    const [http, admin] = [await freePort(), await freePort()];
    const config = path.join(dir, 'Proxyfile');
    const write = (sites: string) =>
      writeFile(config, `{\n\thttp_port ${http}\n\tadmin 127.0.0.1:${admin}\n\tauto_https off\n}\n\n${sites}`);
    const site = (name: string, port: number) => `http://${name} {\n\treverse_proxy 127.0.0.1:${port}\n}\n`;
    const via = (host: string) => request(http, { headers: { host } });
    await write(site('one.test', a.port));
    running = await spawnRun(
      [
        process.execPath,
        PROXYD_MAIN,
        'run',
        '--config',
        config,
        '--watch',
        '--no-docker',
        '--state-dir',
        path.join(dir, 'state'),
        '--cert-dir',
        path.join(dir, 'certs'),
      ],
      { cwd: dir, ready: readyLine },
    );
    expect((await via('one.test')).body).toBe('from A');

    await write(site('two.test', b.port));
    await waitUntil(async () => (await via('two.test')).status === 200, 5_000);
    const first = Date.now();
    expect((await via('two.test')).body).toBe('from B');
    expect((await via('one.test')).status).toBe(404);

    // Inside the cooldown: queued, then applied — the last text wins.
    await write(site('three.test', a.port));
    await new Promise((resolve) => setTimeout(resolve, 400));
    await write(site('four.test', b.port));
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect((await via('two.test')).body).toBe('from B');
    await waitUntil(async () => (await via('four.test')).status === 200, 10_000);
    expect(Date.now() - first).toBeGreaterThanOrEqual(4_000);
    expect((await via('three.test')).status).toBe(404);
    const reloads = logLines(running.stdout()).filter((l) => l.msg === 'Proxyfile changed: reloading');
    expect(reloads).toHaveLength(2);
  });
});

describe('proxyd run with nothing to serve, and on a privileged port', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'proxyd-cli-bare-'));
    await chmod(dir, 0o755);
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  // A network namespace of its own: ports 80 and 443 are free there whatever this machine runs
  // (root: a plain one; otherwise inside a user namespace, where this user is root).
  const inNetns = (inner: string[]) => [
    'unshare',
    isRoot ? '-n' : '-rn',
    'sh',
    '-c',
    'ip link set lo up && exec "$@"',
    'sh',
    ...inner,
  ];

  it('says nothing is configured and how to start, then keeps running for the admin API', async () => {
    const running = await spawnRun(
      inNetns([
        process.execPath,
        PROXYD_MAIN,
        'run',
        '--workers',
        '1',
        '--state-dir',
        path.join(dir, 'state'),
        '--cert-dir',
        path.join(dir, 'certs'),
      ]),
      { cwd: dir, env: { PROXY_CONFIG: '', DOCKER_HOST: 'unix:///nonexistent.sock' }, ready: readyLine },
    );
    try {
      await waitUntil(() => running.stderr().includes('\n'), 5_000);
      expect(running.stderr()).toBe(
        'proxyd: nothing to serve yet: no Proxyfile (--config, PROXY_CONFIG or ./Proxyfile) and no saved routes. ' +
          'Running anyway: add routes through the admin API at http://127.0.0.1:6190/routes or with proxy.* container labels; ' +
          'or try `proxyd demo`, or `proxyd run --config <Proxyfile>`.\n',
      );
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(running.child.exitCode).toBeNull();
    } finally {
      running.child.kill('SIGTERM');
      await running.exited;
    }
  });

  it('binding port 80 without the privilege is one line saying how to get it', async () => {
    const config = path.join(dir, 'Proxyfile');
    await writeFile(config, '{\n\tadmin 127.0.0.1:7190\n}\n\nhttp://low.test {\n\trespond "low"\n}\n');
    const state = path.join(dir, 'state');
    let command = [process.execPath, PROXYD_MAIN, 'run', '--config', config, '--no-docker', '--state-dir', state];
    if (isRoot) {
      // As nobody, in a namespace of its own (port 80 there is free, and privileged).
      command = inNetns(['setpriv', '--reuid', '65534', '--regid', '65534', '--clear-groups', ...command]);
    } else {
      const start = Number(readFileSync('/proc/sys/net/ipv4/ip_unprivileged_port_start', 'utf8'));
      expect(start, 'port 80 is privileged on this machine').toBeGreaterThan(80);
    }
    // nobody creates its state and cert directories here.
    if (isRoot) chownSync(dir, 65534, 65534);
    for (const workers of ['1', '2']) {
      // Resolves when it exits: it never becomes ready.
      const running = await spawnRun(
        [...command, '--cert-dir', path.join(dir, `certs-${workers}`), '--workers', workers],
        { cwd: dir, ready: () => false },
      );
      expect(await running.exited).toBe(1);
      expect(running.stderr()).toBe(
        'proxyd: cannot listen on 0.0.0.0:80: permission denied; ports below 1024 need a privilege: grant it to node with `sudo setcap cap_net_bind_service=+ep $(readlink -f $(which node))`, run as root, use the systemd unit (AmbientCapabilities=CAP_NET_BIND_SERVICE), or set http_port/https_port (and admin) above 1024 in the Proxyfile\n',
      );
    }
  });
});

describe('proxyd reload --config: the admin address from the Proxyfile', () => {
  let proxy: RunningProxyd;
  beforeAll(async () => {
    proxy = await startProxyd({
      sites: 'http://r.test {\n\trespond "r"\n}\n',
      env: { PROXY_ADMIN_TOKEN: ADMIN_TOKEN },
      args: ['--no-docker'],
    });
  });
  afterAll(async () => {
    await proxy?.stop();
  });

  it('without a token: 401 and what to do; a wrong one: refused; --token: reloaded; again: the wait', async () => {
    const noToken = await proxyd(['reload', '--config', proxy.configPath], { PROXY_ADMIN_TOKEN: undefined });
    expect(noToken).toEqual({
      code: 1,
      stdout: '',
      stderr:
        'proxyd: reload failed (401): unauthorized: no token was sent; pass --token <token> or set PROXY_ADMIN_TOKEN to the one proxyd was started with, or use --admin-socket\n',
    });
    const wrong = await proxyd(['reload', '--config', proxy.configPath], { PROXY_ADMIN_TOKEN: 'wrong' });
    expect(wrong.stderr).toContain('(401): unauthorized: the token was refused;');

    const ok = await proxyd(['reload', '--config', proxy.configPath, '--token', ADMIN_TOKEN], {
      PROXY_ADMIN_TOKEN: undefined,
    });
    expect(ok).toEqual({
      code: 0,
      stdout: expect.stringMatching(/^reloaded .*Proxyfile: 1 Proxyfile route\n$/),
      stderr: '',
    });

    // The Proxyfile in the current directory is the default; the cooldown says how long to wait.
    const again = await proxyd(['reload'], { PROXY_ADMIN_TOKEN: ADMIN_TOKEN, PROXY_CONFIG: '' }, proxy.dir);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/^proxyd: reload failed \(429\): reload too soon \(retry in [1-5] s\)\n$/);
  });

  it('nothing listening: says where it looked and why there', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'proxyd-cli-reload-'));
    try {
      const port = await freePort();
      const config = path.join(dir, 'Proxyfile');
      await writeFile(config, `{\n\tadmin 0.0.0.0:${port}\n}\n`);
      const r = await proxyd(['reload', '--config', config], { PROXY_ADMIN_TOKEN: ADMIN_TOKEN });
      expect(r.code).toBe(1);
      expect(r.stderr).toBe(
        `proxyd: cannot reach the admin API at 127.0.0.1:${port} (the admin option of ${config}): connect ECONNREFUSED 127.0.0.1:${port} (is proxyd running?)\n`,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
