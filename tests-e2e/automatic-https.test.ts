import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { acmeGlobal, type Pebble, preparePebble } from '@proxyd/test-peers';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, adminCall, waitUntil } from './support/admin.js';
import { curlHttps, servedCertificate } from './support/https-client.js';
import { freePort, type RunningProxyd, request, startProxyd, startUpstream } from './support/proxyd.js';

/** Certificate rows of `GET /certificates`. */
interface CertificateRow {
  name: string;
  issuer: string | null;
  status: string;
  last_error: string | null;
  next_attempt: string | null;
}

async function certificates(proxyd: RunningProxyd): Promise<CertificateRow[]> {
  const res = await adminCall(proxyd.adminPort, 'GET', '/certificates');
  expect(res.status).toBe(200);
  return JSON.parse(res.body) as CertificateRow[];
}

/**
 * `GET /certificates` once no row says `renewing` (at most `timeoutMs`, then as it is). A new certificate is
 * served before its attempt releases the storage lock and records the status, so right after a handshake
 * succeeds the row can still say `renewing` for a moment.
 */
async function settledCertificates(proxyd: RunningProxyd, timeoutMs = 10_000): Promise<CertificateRow[]> {
  let rows: CertificateRow[] = [];
  await waitUntil(async () => {
    rows = await certificates(proxyd);
    return rows.every((r) => r.status !== 'renewing');
  }, timeoutMs).catch(() => {});
  return rows;
}

async function ordersValid(proxyd: RunningProxyd): Promise<number> {
  const res = await adminCall(proxyd.adminPort, 'GET', '/metrics');
  const m = /^proxyd_acme_orders_total\{result="valid"\} (\d+)$/m.exec(res.body);
  return m ? Number(m[1]) : Number.NaN;
}

describe('automatic HTTPS against a real ACME CA (pebble on loopback)', () => {
  let pebble: Pebble;
  let work: string;
  let rootFile: string;
  let httpPort: number;
  let httpsPort: number;
  const running: RunningProxyd[] = [];

  const start = async (certDir: string, sites: string, ports = { httpPort, httpsPort }, global = '') => {
    const proxyd = await startProxyd({
      ...ports,
      autoHttps: 'on',
      global: `${acmeGlobal(pebble)}${global}`,
      sites,
      env: { PROXY_ADMIN_TOKEN: ADMIN_TOKEN },
      // Both outside the run's own directory, which stop() removes: a restart keeps certificates and API routes.
      args: ['--cert-dir', certDir, '--state-dir', `${certDir}-state`],
    });
    running.push(proxyd);
    return proxyd;
  };
  const stop = async (proxyd: RunningProxyd) => {
    running.splice(running.indexOf(proxyd), 1);
    await proxyd.stop();
  };

  beforeAll(async () => {
    work = await mkdtemp(path.join(tmpdir(), 'proxyd-e2e-acme-'));
    [httpPort, httpsPort] = [await freePort(), await freePort()];
    pebble = await preparePebble({ httpPort, tlsPort: httpsPort });
    await pebble.start();
    rootFile = path.join(work, 'pebble-root.pem');
    await writeFile(rootFile, await pebble.rootPem());
  });

  // A test that fails midway leaves its daemons running on the shared ports: stopped here, not at the end,
  // so that the next test can bind them.
  afterEach(async () => {
    for (const proxyd of running.splice(0)) await proxyd.stop();
  });

  afterAll(async () => {
    await pebble?.dispose();
    await rm(work, { recursive: true, force: true });
  });

  it('HTTP-01: a Proxyfile site and an API route each get a certificate curl verifies; a restart orders nothing', async () => {
    const certDir = path.join(work, 'certs-http01');
    const sites = 'app.test {\n\trespond "hello over https"\n}\n';
    let proxyd = await start(certDir, sites);

    // Served over plain HTTP while the certificate is obtained in the background.
    await waitUntil(async () => (await curlHttps('app.test', httpsPort, rootFile)).ok, 30_000).catch(() => {
      throw new Error(`no certificate for app.test:\n${proxyd.output()}\n${pebble.log()}`);
    });
    const served = await curlHttps('app.test', httpsPort, rootFile);
    expect(served).toMatchObject({ status: 200, body: 'hello over https' });
    const http = await request(proxyd.httpPort, { headers: { host: 'app.test' }, path: '/x?y=1' });
    expect(http.status).toBe(308);
    expect(http.headers.location).toBe(`https://app.test:${httpsPort}/x?y=1`);

    const created = await adminCall(proxyd.adminPort, 'POST', '/routes', {
      domain: 'api.test',
      upstream: `127.0.0.1:${proxyd.adminPort}`,
      tls: false,
    });
    expect(created.status).toBe(201);
    await waitUntil(async () => (await curlHttps('api.test', httpsPort, rootFile, '/health')).ok, 30_000);
    const rows = await settledCertificates(proxyd);
    expect(rows.map((r) => [r.name, r.status, r.issuer])).toEqual([
      ['api.test', 'valid', pebble.directoryUrl],
      ['app.test', 'valid', pebble.directoryUrl],
    ]);
    expect(await ordersValid(proxyd)).toBe(2);
    const before = await servedCertificate('app.test', httpsPort);

    // A restart on the same cert dir serves the stored certificates and places no order.
    const ordersBefore = pebble.orders();
    await stop(proxyd);
    proxyd = await start(certDir, sites);
    await waitUntil(async () => (await curlHttps('app.test', httpsPort, rootFile)).ok, 10_000);
    expect((await servedCertificate('app.test', httpsPort)).serial).toBe(before.serial);
    await waitUntil(async () => (await curlHttps('api.test', httpsPort, rootFile, '/health')).ok, 10_000);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(pebble.orders()).toBe(ordersBefore);
    expect(await ordersValid(proxyd)).toBe(0);
    await stop(proxyd);
  });

  it('two daemons sharing one cert dir place one order', async () => {
    const certDir = path.join(work, 'certs-shared');
    const sites = 'shared.test {\n\trespond "shared"\n}\n';
    const ordersBefore = pebble.orders();
    const first = await start(certDir, sites);
    // The second one runs on other ports: pebble validates through the first one's.
    const second = await start(certDir, sites, { httpPort: await freePort(), httpsPort: await freePort() });
    await waitUntil(async () => (await curlHttps('shared.test', httpsPort, rootFile)).ok, 30_000);
    await waitUntil(async () => (await curlHttps('shared.test', second.httpsPort, rootFile)).ok, 30_000);
    const a = await servedCertificate('shared.test', httpsPort);
    const b = await servedCertificate('shared.test', second.httpsPort);
    expect(b.serial).toBe(a.serial);
    expect(pebble.orders() - ordersBefore).toBe(1);
    expect((await ordersValid(first)) + (await ordersValid(second))).toBe(1);
    await stop(second);
    await stop(first);
  });
  it('on-demand TLS: a certificate at the first handshake for a name the ask endpoint allows, none for one it denies', async () => {
    const asked: string[] = [];
    const ask = await startUpstream((req, res) => {
      const domain = new URL(req.url ?? '/', 'http://ask').searchParams.get('domain') ?? '';
      asked.push(domain);
      res.writeHead(domain === 'yes.od.test' ? 200 : 403).end();
    });
    try {
      const proxyd = await start(
        path.join(work, 'certs-on-demand'),
        '*.od.test {\n\ttls {\n\t\ton_demand\n\t}\n\trespond "on demand"\n}\n',
        { httpPort, httpsPort },
        `\ton_demand_tls {\n\t\task http://127.0.0.1:${ask.port}/ask\n\t}\n`,
      );
      // Nothing is ordered before a handshake asks for a name.
      expect(await certificates(proxyd)).toEqual([]);
      // The handshake waits for the order to be issued (by design): the time a loaded machine needs for that.
      const allowed = await curlHttps('yes.od.test', httpsPort, rootFile, '/', 60);
      expect(allowed).toMatchObject({ ok: true, status: 200, body: 'on demand' });
      const denied = await curlHttps('no.od.test', httpsPort, rootFile);
      expect(denied.ok).toBe(false);
      expect(denied.error).toMatch(/alert|handshake/i);
      expect(asked).toEqual(['yes.od.test', 'no.od.test']);
      expect((await settledCertificates(proxyd)).map((r) => [r.name, r.status])).toEqual([['yes.od.test', 'valid']]);
      await stop(proxyd);
    } finally {
      await ask.close();
    }
  });
});

describe('automatic HTTPS from the local CA (no ACME CA involved)', () => {
  let proxyd: RunningProxyd;

  beforeAll(async () => {
    proxyd = await startProxyd({
      autoHttps: 'on',
      sites:
        'app.localhost {\n\trespond "local name"\n}\n\nintranet.example.com {\n\ttls internal\n\trespond "internal"\n}\n',
    });
  });

  afterAll(async () => {
    await proxyd?.stop();
  });

  it('serves a .localhost name and a tls internal site with certificates that verify against the local root', async () => {
    const root = path.join(proxyd.dir, 'certs', 'ca', 'local', 'root.crt');
    await waitUntil(async () => (await curlHttps('app.localhost', proxyd.httpsPort, root)).ok, 10_000);
    expect(await curlHttps('app.localhost', proxyd.httpsPort, root)).toMatchObject({ status: 200, body: 'local name' });
    await waitUntil(async () => (await curlHttps('intranet.example.com', proxyd.httpsPort, root)).ok, 10_000);
    expect(await curlHttps('intranet.example.com', proxyd.httpsPort, root)).toMatchObject({
      status: 200,
      body: 'internal',
    });
    const served = await servedCertificate('app.localhost', proxyd.httpsPort);
    // A short-lived leaf from the intermediate, never from the root itself.
    expect(served.issuer).toMatch(/Intermediate/i);
    expect(Date.parse(served.validTo) - Date.now()).toBeLessThanOrEqual(12 * 3600_000 + 60_000);
    const redirect = await request(proxyd.httpPort, { headers: { host: 'app.localhost' } });
    expect(redirect.status).toBe(308);
  });
});
