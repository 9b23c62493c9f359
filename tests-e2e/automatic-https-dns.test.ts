import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { acmeGlobal, type Pebble, preparePebble, type StartedBind, startBind } from '@proxyd/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, adminCall, waitUntil } from './support/admin.js';
import { curlHttps } from './support/https-client.js';
import { freePort, type RunningProxyd, startProxyd } from './support/proxyd.js';

interface CertificateRow {
  name: string;
  status: string;
  issuer: string | null;
  last_error: string | null;
  next_attempt: string | null;
  challenge: string | null;
  dns_step: string | null;
}

/**
 * Issue 33: DNS-01 end to end. A real BIND 9 is authoritative for
 * example.com on a loopback high port; pebble resolves through it
 * (`-dnsserver`) and can reach neither HTTP-01 nor TLS-ALPN-01, so only
 * DNS-01 validates. proxyd publishes the TXT records over RFC 2136 signed
 * with TSIG, the secret coming from an environment variable.
 */
describe('DNS-01 against pebble and BIND (RFC 2136 + TSIG)', () => {
  let bind: StartedBind;
  let pebble: Pebble;
  let proxyd: RunningProxyd;
  let work: string;
  const wrongSecret = Buffer.alloc(32, 0x5a).toString('base64');

  const tlsBlock = (secretVar: string) =>
    [
      '\ttls {',
      '\t\tdns rfc2136 {',
      `\t\t\tserver ${bind.address}`,
      `\t\t\tkey_name ${bind.key.name}`,
      `\t\t\tkey {env.${secretVar}}`,
      '\t\t}',
      `\t\tresolvers ${bind.address}`,
      `\t\tauthoritative_port ${bind.port}`,
      '\t}',
    ].join('\n');

  beforeAll(async () => {
    work = await mkdtemp(path.join(tmpdir(), 'proxyd-e2e-dns-'));
    bind = await startBind({ zones: [{ name: 'example.com' }] });
    const [httpPort, httpsPort, closedHttp, closedTls] = [
      await freePort(),
      await freePort(),
      await freePort(),
      await freePort(),
    ];
    pebble = await preparePebble({ httpPort: closedHttp, tlsPort: closedTls, dnsServer: bind.address });
    await pebble.start();
    proxyd = await startProxyd({
      httpPort,
      httpsPort,
      autoHttps: 'on',
      global: acmeGlobal(pebble),
      sites: [
        `example.com {\n${tlsBlock('TSIG_SECRET')}\n\trespond "plain over dns-01"\n}\n`,
        `*.example.com {\n${tlsBlock('TSIG_SECRET')}\n\trespond "wildcard over dns-01"\n}\n`,
        `wrong.example.com {\n${tlsBlock('WRONG_TSIG_SECRET')}\n\trespond "never certified"\n}\n`,
      ].join('\n'),
      env: { PROXY_ADMIN_TOKEN: ADMIN_TOKEN, TSIG_SECRET: bind.key.secret, WRONG_TSIG_SECRET: wrongSecret },
      args: ['--cert-dir', path.join(work, 'certs')],
    });
  });

  afterAll(async () => {
    await proxyd?.stop();
    await pebble?.dispose();
    await bind?.stop();
    await rm(work, { recursive: true, force: true });
  });

  const rows = async (): Promise<CertificateRow[]> =>
    JSON.parse((await adminCall(proxyd.adminPort, 'GET', '/certificates')).body) as CertificateRow[];

  it('certifies example.com and *.example.com (one TXT name, two values); curl verifies the wildcard for two subdomains; records are removed', async () => {
    const rootFile = path.join(work, 'root.pem');
    await writeFile(rootFile, await pebble.rootPem());
    const diagnostics = () => `${proxyd.output()}\n${pebble.log()}\n${bind.log()}`;
    for (const name of ['example.com', 'a.example.com']) {
      await waitUntil(async () => (await curlHttps(name, proxyd.httpsPort, rootFile)).ok, 60_000).catch(() => {
        throw new Error(`no certificate for ${name}:\n${diagnostics()}`);
      });
    }
    expect(await curlHttps('example.com', proxyd.httpsPort, rootFile)).toMatchObject({
      status: 200,
      body: 'plain over dns-01',
    });
    for (const name of ['a.example.com', 'b.example.com']) {
      expect(await curlHttps(name, proxyd.httpsPort, rootFile)).toMatchObject({
        status: 200,
        body: 'wildcard over dns-01',
      });
    }
    const certified = (await rows()).filter((row) => row.name !== 'wrong.example.com');
    expect(certified).toEqual([
      expect.objectContaining({ name: '*.example.com', status: 'valid', challenge: 'dns-01', dns_step: null }),
      expect.objectContaining({ name: 'example.com', status: 'valid', challenge: 'dns-01', dns_step: null }),
    ]);
    // Both orders published at _acme-challenge.example.com; each removed only its own value, and none is left.
    expect(bind.dig('_acme-challenge.example.com', 'TXT')).toBe('');
  });

  it('a wrong TSIG key: failing at update-refused, a retry about a minute later, no loop, no secret in the log', async () => {
    await waitUntil(
      async () => (await rows()).some((r) => r.name === 'wrong.example.com' && r.status === 'failing'),
      30_000,
    );
    const first = (await rows()).find((r) => r.name === 'wrong.example.com');
    expect(first).toMatchObject({ challenge: 'dns-01', dns_step: 'update-refused' });
    expect(first?.last_error).toMatch(
      /rfc2136: 127\.0\.0\.1:\d+ refused to add TXT _acme-challenge\.wrong\.example\.com in zone example\.com with TSIG key "proxyd-key" \(hmac-sha256\): NOTAUTH, TSIG error BADSIG/,
    );
    const retryIn = Date.parse(first?.next_attempt ?? '') - Date.now();
    expect(retryIn).toBeGreaterThan(40_000);
    // Two seconds on: the same failure and the same next attempt (no order placed in a loop).
    const orders = pebble.orders();
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect((await rows()).find((r) => r.name === 'wrong.example.com')).toMatchObject({
      status: 'failing',
      next_attempt: first?.next_attempt,
    });
    expect(pebble.orders()).toBe(orders);
    expect(proxyd.output()).toContain('_acme-challenge.wrong.example.com');
    expect(proxyd.output()).not.toContain(wrongSecret);
    expect(proxyd.output()).not.toContain(bind.key.secret);
  });
});
