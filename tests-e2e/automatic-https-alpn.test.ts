import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { acmeGlobal, type Pebble, preparePebble } from '@proxyd/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, adminCall, waitUntil } from './support/admin.js';
import { curlHttps } from './support/https-client.js';
import { freePort, type RunningProxyd, startProxyd } from './support/proxyd.js';

describe('TLS-ALPN-01 against pebble: validation reaches only the HTTPS listener', () => {
  let pebble: Pebble;
  let proxyd: RunningProxyd;
  let work: string;

  beforeAll(async () => {
    work = await mkdtemp(path.join(tmpdir(), 'proxyd-e2e-alpn-'));
    const [httpPort, httpsPort, closed] = [await freePort(), await freePort(), await freePort()];
    // Pebble fetches HTTP-01 answers from a port nothing listens on: only TLS-ALPN-01 can succeed.
    pebble = await preparePebble({ httpPort: closed, tlsPort: httpsPort });
    await pebble.start();
    proxyd = await startProxyd({
      httpPort,
      httpsPort,
      autoHttps: 'on',
      global: acmeGlobal(pebble),
      sites: 'alpn.test {\n\trespond "validated over acme-tls/1"\n}\n',
      env: { PROXY_ADMIN_TOKEN: ADMIN_TOKEN },
      args: ['--cert-dir', path.join(work, 'certs')],
    });
  });

  afterAll(async () => {
    await proxyd?.stop();
    await pebble?.dispose();
    await rm(work, { recursive: true, force: true });
  });

  it('issues a certificate curl verifies against pebble root, after HTTP-01 failed validation', async () => {
    const rootFile = path.join(work, 'root.pem');
    await writeFile(rootFile, await pebble.rootPem());
    await waitUntil(async () => (await curlHttps('alpn.test', proxyd.httpsPort, rootFile)).ok, 30_000).catch(() => {
      throw new Error(`no certificate for alpn.test:\n${proxyd.output()}\n${pebble.log()}`);
    });
    expect(await curlHttps('alpn.test', proxyd.httpsPort, rootFile)).toMatchObject({
      status: 200,
      body: 'validated over acme-tls/1',
    });
    const rows = JSON.parse((await adminCall(proxyd.adminPort, 'GET', '/certificates')).body);
    expect(rows).toMatchObject([{ name: 'alpn.test', status: 'valid', issuer: pebble.directoryUrl, last_error: null }]);
  });
});
