import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, adminCall, waitUntil } from './support/admin.js';
import { PROXYD_MAIN, type RunningProxyd, request, startProxyd, startUpstream } from './support/proxyd.js';

type Upstream = Awaited<ReturnType<typeof startUpstream>>;
const named = (name: string) =>
  startUpstream((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' }).end(`from ${name}`);
  });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs `proxyd reload --admin 127.0.0.1:<port>` with the token; resolves exit code and output. */
function cliReload(port: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [PROXYD_MAIN, 'reload', '--admin', `127.0.0.1:${port}`], {
      env: { ...process.env, PROXY_ADMIN_TOKEN: ADMIN_TOKEN },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString();
    });
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('reload: POST /reload, SIGHUP and `proxyd reload`', () => {
  let a: Upstream;
  let b: Upstream;
  let stateDir: string;
  let proxyd: RunningProxyd;
  let header: string;
  const via = (host: string) => request(proxyd.httpPort, { headers: { host } });
  const api = (method: string, p: string, body?: unknown) => adminCall(proxyd.adminPort, method, p, body);
  const site = (host: string, port: number) => `http://${host} {\n\treverse_proxy 127.0.0.1:${port}\n}\n`;
  const writeSites = (sites: string) => writeFile(proxyd.configPath, `${header}\n${sites}`);

  beforeAll(async () => {
    [a, b] = [await named('A'), await named('B')];
    stateDir = await mkdtemp(path.join(tmpdir(), 'proxyd-reload-'));
    proxyd = await startProxyd({
      sites: site('one.test', a.port),
      env: { PROXY_ADMIN_TOKEN: ADMIN_TOKEN },
      args: ['--state-dir', stateDir],
    });
    header = (await readFile(proxyd.configPath, 'utf8')).split('\n\n')[0] as string;
  });

  afterAll(async () => {
    await proxyd?.stop();
    await a?.close();
    await b?.close();
    await rm(stateDir, { recursive: true, force: true });
  });

  it('swaps only the Proxyfile routes; an API route survives; a second reload within 5 s is 429', async () => {
    expect(
      (await api('POST', '/routes', { domain: 'api.test', upstream: `127.0.0.1:${b.port}`, tls: false })).status,
    ).toBe(201);
    await writeSites(site('two.test', b.port));
    const res = await api('POST', '/reload');
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ message: expect.stringMatching(/reloaded .*Proxyfile: 1 Proxyfile route/) });
    expect((await via('two.test')).body).toBe('from B');
    expect((await via('one.test')).status).toBe(404);
    expect((await via('api.test')).body).toBe('from B');

    const soon = await api('POST', '/reload');
    expect(soon.status).toBe(429);
    const body = JSON.parse(soon.body) as { error: string; retry_after: number };
    expect(body.error).toBe('reload too soon');
    expect(body.retry_after).toBeGreaterThanOrEqual(1);
    expect(soon.headers['retry-after']).toBe(String(body.retry_after));
  });

  it('a parse failure is 400 text/plain with the position; the running config keeps serving', async () => {
    await sleep(5_100);
    await writeSites(`${site('three.test', a.port)}\nbroken.test {\n\treverse_proxy\n}\n`);
    const res = await api('POST', '/reload');
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(res.body).toMatch(/Proxyfile:\d+:\d+: .*expected/);
    expect((await via('two.test')).body).toBe('from B');
    expect((await via('three.test')).status).toBe(404);
    // The failed parse consumed the cooldown too.
    expect((await api('POST', '/reload')).status).toBe(429);
  });

  it('SIGHUP reloads the Proxyfile', async () => {
    await writeSites(site('hup.test', a.port));
    proxyd.child.kill('SIGHUP');
    await waitUntil(async () => (await via('hup.test')).status === 200);
    expect((await via('hup.test')).body).toBe('from A');
    expect((await via('two.test')).status).toBe(404);
  });

  it('`proxyd reload` prints the message, and exits 1 with the server error on failure', async () => {
    await sleep(5_100);
    await writeSites(site('cli.test', b.port));
    const ok = await cliReload(proxyd.adminPort);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/^reloaded .*Proxyfile: 1 Proxyfile route\n$/);
    expect((await via('cli.test')).body).toBe('from B');

    const tooSoon = await cliReload(proxyd.adminPort);
    expect(tooSoon.code).toBe(1);
    expect(tooSoon.stderr).toMatch(/reload too soon/);

    await sleep(5_100);
    await writeSites('bad.test {\n\tnot_a_directive\n}\n');
    const bad = await cliReload(proxyd.adminPort);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/Proxyfile:\d+:2: unknown directive "not_a_directive"/);
    expect((await via('cli.test')).body).toBe('from B');
  });
});
