import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { acmeGlobal, type Pebble, preparePebble } from '@proxyd/test-peers';
import { afterAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, adminCall, waitUntil } from './support/admin.js';
import { curlHttps, servedCertificate } from './support/https-client.js';
import { freePort, type RunningProxyd, startProxyd } from './support/proxyd.js';

interface Row {
  name: string;
  status: string;
  last_error: string | null;
  next_attempt: string | null;
}

/** Starts proxyd on `ports` against `pebble` with one site, its cert dir under `work`. */
async function startAgainst(
  pebble: Pebble,
  work: string,
  ports: { httpPort: number; httpsPort: number },
  name: string,
) {
  return startProxyd({
    ...ports,
    autoHttps: 'on',
    global: acmeGlobal(pebble),
    sites: `${name} {\n\trespond "${name}"\n}\n`,
    env: { PROXY_ADMIN_TOKEN: ADMIN_TOKEN },
    args: ['--cert-dir', path.join(work, 'certs')],
  });
}

const rows = async (proxyd: RunningProxyd): Promise<Row[]> =>
  JSON.parse((await adminCall(proxyd.adminPort, 'GET', '/certificates')).body) as Row[];

describe('certificates over time against pebble', () => {
  const cleanup: (() => Promise<unknown>)[] = [];
  afterAll(async () => {
    for (const step of cleanup.reverse()) await step();
  });

  const setUp = async (validitySeconds?: number) => {
    const work = await mkdtemp(path.join(tmpdir(), 'proxyd-e2e-acme-time-'));
    const ports = { httpPort: await freePort(), httpsPort: await freePort() };
    const pebble = await preparePebble({
      httpPort: ports.httpPort,
      tlsPort: ports.httpsPort,
      ...(validitySeconds === undefined ? {} : { validitySeconds }),
    });
    cleanup.push(
      () => rm(work, { recursive: true, force: true }),
      () => pebble.dispose(),
    );
    return { work, ports, pebble };
  };

  it('the CA down at start: the name fails with the real cause, then recovers on the next attempt once the CA is up', async () => {
    const { work, ports, pebble } = await setUp();
    const proxyd = await startAgainst(pebble, work, ports, 'late.test');
    cleanup.push(() => proxyd.stop());
    let failing: Row | undefined;
    await waitUntil(async () => {
      failing = (await rows(proxyd)).find((r) => r.status === 'failing');
      return failing !== undefined;
    }, 15_000);
    expect(failing?.last_error).toMatch(/ECONNREFUSED/);
    const nextAttempt = Date.parse(failing?.next_attempt ?? '');
    // The first retry comes about a minute later (backoff with jitter), never at once.
    expect(nextAttempt - Date.now()).toBeGreaterThan(20_000);
    expect(nextAttempt - Date.now()).toBeLessThan(120_000);
    // One log line says what failed, why and when the next attempt is.
    expect(proxyd.output()).toMatch(/"target":"proxy::tls".*late\.test failed: .*ECONNREFUSED.*next attempt at/);

    await pebble.start();
    const rootFile = path.join(work, 'root.pem');
    await writeFile(rootFile, await pebble.rootPem());
    await waitUntil(async () => (await curlHttps('late.test', ports.httpsPort, rootFile)).ok, 150_000);
    expect((await rows(proxyd))[0]).toMatchObject({ name: 'late.test', status: 'valid', last_error: null });
  }, 200_000);

  it('a 2-minute certificate is renewed while curl keeps getting answers', async () => {
    const { work, ports, pebble } = await setUp(120);
    await pebble.start();
    const rootFile = path.join(work, 'root.pem');
    await writeFile(rootFile, await pebble.rootPem());
    const proxyd = await startAgainst(pebble, work, ports, 'short.test');
    cleanup.push(() => proxyd.stop());
    await waitUntil(async () => (await curlHttps('short.test', ports.httpsPort, rootFile)).ok, 30_000);
    const first = await servedCertificate('short.test', ports.httpsPort);
    // Renewal is due once a third of the lifetime is left (80 s in); curl once a second meanwhile.
    const failures: string[] = [];
    let renewed = first;
    const deadline = Date.now() + 110_000;
    while (Date.now() < deadline && renewed.serial === first.serial) {
      const reply = await curlHttps('short.test', ports.httpsPort, rootFile);
      if (!reply.ok || reply.status !== 200) failures.push(reply.error || String(reply.status));
      renewed = await servedCertificate('short.test', ports.httpsPort);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
    expect(renewed.serial).not.toBe(first.serial);
    expect(Date.parse(renewed.validTo)).toBeGreaterThan(Date.parse(first.validTo));
    expect(failures).toEqual([]);
    expect(await curlHttps('short.test', ports.httpsPort, rootFile)).toMatchObject({ status: 200, body: 'short.test' });
  }, 180_000);
});
