import { execFile } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { promisify } from 'node:util';
import { freePort, type PodmanRuntime, startPodman, type TestContainer, type TestNetwork } from '@proxyd/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, adminCall, waitUntil } from './support/admin.js';
import { ROOT } from './support/conformance.js';
import { request } from './support/proxyd.js';

const run = promisify(execFile);

// Issue 35: the container image. Built from the clone as `./dev build:image`
// builds it (the single executable, then Buildah on packaging/Containerfile),
// loaded into a Podman store of its own, and run as the README says: socket
// mounted, non-root, only NET_BIND_SERVICE, read-only root, named volumes.
// Then the compose example under podman-compose. Runs once in `pnpm test`
// (the second e2e pass, with PROXY_WORKERS=1, leaves it out).
describe('the container image, built from the clone and run with Podman', () => {
  const id = process.pid;
  const name = `proxyd-image-${id}`;
  let version = '';
  let tag = '';
  let runtime: PodmanRuntime;
  let network: TestNetwork;
  let dir: string;
  let proxyfile: string;
  let socketGid = '';
  const ports = { http: 0, https: 0, admin: 0, dashboard: 0 };
  const apps: TestContainer[] = [];

  const podman = async (args: string[], env: NodeJS.ProcessEnv = {}) =>
    (await run('podman', args, { env: { ...runtime.env, ...env }, timeout: 120_000, maxBuffer: 64 << 20 })).stdout;
  /** `podman run` as packaging/README.md gives it, plus test ports, a Proxyfile and one worker (exact round-robin). */
  const startContainer = async () => {
    await podman([
      'run',
      '--detach',
      '--name',
      name,
      '--network',
      network.name,
      '--cap-drop',
      'all',
      '--cap-add',
      'NET_BIND_SERVICE',
      '--read-only',
      '--group-add',
      socketGid,
      '--volume',
      `${runtime.socketPath}:/var/run/docker.sock:ro`,
      '--volume',
      `${name}-data:/data`,
      '--volume',
      `${name}-certs:/certs`,
      '--volume',
      `${proxyfile}:/etc/proxyd/Proxyfile:ro`,
      '--env',
      `PROXY_ADMIN_TOKEN=${ADMIN_TOKEN}`,
      '--env',
      'PROXY_WORKERS=1',
      '--publish',
      `127.0.0.1:${ports.http}:80`,
      '--publish',
      `127.0.0.1:${ports.https}:443`,
      '--publish',
      `127.0.0.1:${ports.admin}:6190`,
      '--publish',
      `127.0.0.1:${ports.dashboard}:9190`,
      tag,
    ]);
    await waitUntil(
      async () => (await adminCall(ports.admin, 'GET', '/health').catch(() => null))?.status === 200,
      30_000,
    ).catch(async (err: Error) => {
      const logs = await run('podman', ['logs', name], { env: runtime.env }).catch((e: Error) => e);
      throw new Error(`${name} did not answer /health: ${err.message}\n${JSON.stringify(logs).slice(-3000)}`);
    });
  };
  /** The local CA's root, copied out of the /certs volume of `container`. */
  const exportRoot = async (container: string, to: string) => {
    await waitUntil(async () => {
      try {
        await podman(['cp', `${container}:/certs/ca/local/root.crt`, to]);
        return true;
      } catch {
        return false;
      }
    }, 20_000);
    return to;
  };
  /** curl over HTTPS to `domain` on the published port, verifying against `ca` only; the body, or null. */
  const curl = async (domain: string, ca: string, port = ports.https) => {
    try {
      const { stdout } = await run('curl', [
        '--silent',
        '--show-error',
        '--fail',
        '--max-time',
        '5',
        '--cacert',
        ca,
        '--resolve',
        `${domain}:${port}:127.0.0.1`,
        `https://${domain}:${port}/`,
      ]);
      return stdout.trim();
    } catch {
      return null;
    }
  };
  const answers = async (domain: string, ca: string, n: number) => {
    const seen = new Map<string, number>();
    for (let i = 0; i < n; i++) {
      const body = (await curl(domain, ca)) ?? 'failed';
      seen.set(body, (seen.get(body) ?? 0) + 1);
    }
    return seen;
  };
  const leafFingerprint = (domain: string, ca: Buffer) =>
    new Promise<string>((resolve, reject) => {
      const socket = tls.connect({ host: '127.0.0.1', port: ports.https, servername: domain, ca }, () => {
        resolve(socket.getPeerCertificate().fingerprint256);
        socket.end();
      });
      socket.on('error', reject);
    });
  const inspect = async (format: string) => (await podman(['inspect', '--format', format, name])).trim();

  beforeAll(async () => {
    version = (JSON.parse(await readFile(path.join(ROOT, 'apps/proxyd/package.json'), 'utf8')) as { version: string })
      .version;
    tag = `localhost/proxyd:${version}`;
    // `./dev build:image` without its `turbo run build` (the e2e run has built).
    for (const script of ['build-sea.mjs', 'build-image.mjs']) {
      await run(process.execPath, [path.join(ROOT, 'apps/proxyd/scripts', script)], { cwd: ROOT, timeout: 240_000 });
    }
    runtime = await startPodman();
    // As systemd's podman.socket makes it (root:root 0660); the service made it 0600.
    await chmod(runtime.socketPath, 0o660);
    socketGid = String((await stat(runtime.socketPath)).gid);
    await podman(['load', '--input', path.join(ROOT, `dist/proxyd-image-${version}.tar`)]);
    network = await runtime.createNetwork(`${name}-net`);
    for (const key of Object.keys(ports) as (keyof typeof ports)[]) ports[key] = await freePort();
    dir = await mkdtemp(path.join(tmpdir(), 'proxyd-image-'));
    await chmod(dir, 0o755);
    const hash = (
      await run(process.execPath, [
        path.join(ROOT, 'apps/proxyd/dist/main.js'),
        'hash-password',
        '--plaintext',
        'dashboard secret',
        '--cost',
        '4',
      ])
    ).stdout.trim();
    proxyfile = path.join(dir, 'Proxyfile');
    await writeFile(
      proxyfile,
      `{\n\tadmin 0.0.0.0:6190\n\tgrace_period 5s\n\tdashboard 0.0.0.0:9190 {\n\t\tbasic_auth alice ${hash}\n\t}\n}\n`,
      { mode: 0o644 },
    );
    await startContainer();
  }, 600_000);

  afterAll(async () => {
    await runtime?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('runs as proxyd (10001) with only NET_BIND_SERVICE, on a read-only root, with a HEALTHCHECK that passes', async () => {
    const image = JSON.parse(await podman(['image', 'inspect', tag])) as {
      Config: { User: string; Volumes: Record<string, unknown>; Env: string[] };
      Healthcheck?: { Test: string[] };
    }[];
    expect(image[0]?.Config.User).toBe('10001:10001');
    expect(Object.keys(image[0]?.Config.Volumes ?? {}).sort()).toEqual(['/certs', '/data']);
    expect(image[0]?.Config.Env).toContain('PROXY_CONFIG=/etc/proxyd/Proxyfile');
    expect(image[0]?.Healthcheck?.Test).toEqual(['CMD', '/usr/bin/proxyd', 'health']);

    // The process as the kernel sees it, from the host.
    const pid = await inspect('{{.State.Pid}}');
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    expect(status).toMatch(/^Uid:\t10001\t10001\t10001\t10001$/m);
    expect(status).toMatch(/^CapEff:\t0000000000000400$/m); // CAP_NET_BIND_SERVICE alone
    expect(status).toMatch(/^CapBnd:\t0000000000000400$/m);
    const mounts = (await readFile(`/proc/${pid}/mountinfo`, 'utf8')).split('\n').map((l) => l.split(' '));
    const options = (at: string) => mounts.find((f) => f[4] === at)?.[5]?.split(',');
    expect(options('/')).toContain('ro');
    expect(options('/data')).toContain('rw');
    expect(options('/certs')).toContain('rw');
    // Listening on 80 inside, reached on the published port.
    expect((await request(ports.http, { path: '/', headers: { host: 'nothing.test' } })).status).toBe(404);

    // Without systemd nothing schedules it: run it as its timer would (a failure exits 1 and rejects).
    await podman(['healthcheck', 'run', name]);
    expect(await inspect('{{.State.Health.Status}}')).toBe('healthy');
    // Logs: JSON lines on stdout.
    const { stdout } = await run('podman', ['logs', name], { env: runtime.env });
    const lines = stdout.trim().split('\n');
    expect(lines.length).toBeGreaterThan(2);
    for (const line of lines) expect(() => JSON.parse(line), line).not.toThrow();
    expect(lines.map((l) => (JSON.parse(l) as { msg: string }).msg)).toContain('proxyd ready');
  });

  it('routes two labelled containers round-robin over HTTPS from its local CA, and drops a stopped one', async () => {
    const domain = `app-${id}.test`;
    for (const stem of ['a', 'b']) {
      apps.push(
        await runtime.run({
          name: `${name}-${stem}`,
          network: network.name,
          labels: { 'proxy.domain': domain, 'proxy.port': '8080' },
        }),
      );
    }
    const [a, b] = apps as [TestContainer, TestContainer];
    const root = await exportRoot(name, path.join(dir, 'root.crt'));
    await waitUntil(async () => (await answers(domain, root, 4)).size === 2, 20_000);
    const spread = await answers(domain, root, 10);
    expect(Object.fromEntries(spread)).toEqual({ [a.name]: 5, [b.name]: 5 });
    // Not trusted without that root: it is the local CA's, not a public one.
    await expect(
      run('curl', [
        '--silent',
        '--fail',
        '--resolve',
        `${domain}:${ports.https}:127.0.0.1`,
        `https://${domain}:${ports.https}/`,
      ]),
    ).rejects.toThrow();

    await a.stop();
    await waitUntil(async () => {
      const now = await answers(domain, root, 4);
      return now.size === 1 && now.get(b.name) === 4;
    }, 10_000);
  });

  it('serves the dashboard on its own listener, behind its basic_auth', async () => {
    const page = await request(ports.dashboard, {
      path: '/',
      headers: { authorization: `Basic ${Buffer.from('alice:dashboard secret').toString('base64')}` },
    });
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect((await request(ports.dashboard, { path: '/' })).status).toBe(401);
  });

  it('stops on SIGTERM with exit 0 within the grace period; a new container on the volumes keeps routes and certificates', async () => {
    const b = apps[1] as TestContainer;
    const domain = `app-${id}.test`;
    const api = `api-${id}.test`;
    const added = await adminCall(ports.admin, 'POST', '/routes', {
      domain: api,
      upstream: `${b.ip}:8080`,
      tls: false,
    });
    expect(added.status).toBe(201);
    const rootBefore = await readFile(path.join(dir, 'root.crt'));
    await waitUntil(async () => (await curl(api, path.join(dir, 'root.crt'))) === b.name, 20_000);
    const leafBefore = await leafFingerprint(domain, rootBefore);

    const started = performance.now();
    await podman(['stop', '--time', '30', name]);
    const took = performance.now() - started;
    expect(await inspect('{{.State.ExitCode}}')).toBe('0');
    expect(took).toBeLessThan(5_000); // the Proxyfile's grace_period; podman would SIGKILL only after 30 s
    const { stdout } = await run('podman', ['logs', name], { env: runtime.env });
    expect(stdout).toMatch(/"signal":"SIGTERM","grace_period_ms":5000,"msg":"shutting down/);

    await podman(['rm', name]);
    await startContainer();
    const rootAfter = await readFile(await exportRoot(name, path.join(dir, 'root-after.crt')));
    expect(rootAfter.equals(rootBefore)).toBe(true);
    expect(await leafFingerprint(domain, rootAfter)).toBe(leafBefore);
    const routes = JSON.parse((await adminCall(ports.admin, 'GET', '/routes')).body) as { domain: string }[];
    expect(routes.map((r) => r.domain)).toContain(api);
    expect(await curl(api, path.join(dir, 'root-after.crt'))).toBe(b.name);
    await waitUntil(async () => (await curl(domain, path.join(dir, 'root-after.crt'))) === b.name, 20_000);
  });

  it('podman-compose brings up examples/compose and its apps answer through proxyd', async () => {
    await podman(['stop', '--time', '30', name]);
    const project = `proxyd-compose-${id}`;
    const compose = ['-p', project, '-f', path.join(ROOT, 'examples/compose/compose.yaml')];
    const [http, https] = [await freePort(), await freePort()];
    const env = {
      ...runtime.env,
      PROXYD_IMAGE: tag,
      PROXYD_SOCKET_GID: socketGid,
      CONTAINER_SOCKET: runtime.socketPath,
      PROXYD_HTTP_PORT: `127.0.0.1:${http}`,
      PROXYD_HTTPS_PORT: `127.0.0.1:${https}`,
      APP_IMAGE: runtime.image,
      APP_PORT: '8080',
    };
    await run('podman-compose', [...compose, 'up', '-d'], { env, cwd: dir, timeout: 120_000 });
    const root = await exportRoot(`${project}_proxyd_1`, path.join(dir, 'compose-root.crt'));
    for (const domain of ['one.localhost', 'two.localhost']) {
      await waitUntil(async () => (await curl(domain, root, https)) === 'busybox', 20_000);
    }
    // Each domain is its own container: stopping one leaves the other answering.
    await podman(['stop', '--time', '1', `${project}_one_1`]);
    await waitUntil(async () => (await curl('one.localhost', root, https)) === null, 10_000);
    expect(await curl('two.localhost', root, https)).toBe('busybox');
    await run('podman-compose', [...compose, 'down'], { env, cwd: dir, timeout: 120_000 });
  });
});
