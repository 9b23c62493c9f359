import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { type StartedRedis, startRedis } from '@proxyd/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, adminCall, waitUntil } from './support/admin.js';
import { servedCertificate } from './support/https-client.js';
import {
  freePort,
  proxydCommand,
  type RunningProxyd,
  request,
  START_WITHIN_MS,
  startProxyd,
} from './support/proxyd.js';

const run = promisify(execFile);

/** GET /health's body. */
async function health(node: RunningProxyd): Promise<{ status: string; storage?: { reachable: boolean } }> {
  return JSON.parse((await request(node.adminPort, { path: '/health' })).body);
}

/** The served certificate, or null while there is none yet. */
const served = (node: RunningProxyd, name = 'shared.test') => servedCertificate(name, node.httpsPort).catch(() => null);

describe('issue 31: two nodes on one Redis storage', () => {
  let redis: StartedRedis;
  const nodes: RunningProxyd[] = [];
  beforeAll(async () => {
    redis = await startRedis();
    // Both start at once, so both want the certificate at once.
    nodes.push(
      ...(await Promise.all(
        [0, 1].map(() =>
          startProxyd({
            global: `\tstorage redis ${redis.url} {\n\t\tkey_prefix e2e\n\t}\n`,
            sites: 'shared.test {\n\trespond "hello"\n}\n',
            env: { PROXY_ADMIN_TOKEN: ADMIN_TOKEN },
          }),
        ),
      )),
    );
  });
  afterAll(async () => {
    await Promise.all(nodes.map((node) => node.stop()));
    await redis?.stop();
  });

  it('one local root and one certificate per name, served by both nodes', async () => {
    await waitUntil(
      async () => (await Promise.all(nodes.map((node) => served(node)))).every((cert) => cert !== null),
      30_000,
    );
    const [a, b] = await Promise.all(nodes.map((node) => served(node)));
    expect(a?.serial).toBe(b?.serial);
    expect(a?.issuer).toBe(b?.issuer);
    const keys = redis.cli('ZRANGE', 'e2e:keys', '0', '-1').split('\n');
    expect(keys.filter((key) => key.endsWith('/shared.test.crt'))).toEqual([
      'certificates/local/shared.test/shared.test.crt',
    ]);
    expect(keys).toContain('ca/local/root.crt');
    expect(redis.cli('GET', 'e2e:value:ca/local/root.key')).toContain('PRIVATE KEY');
    for (const node of nodes) {
      expect(await health(node)).toMatchObject({ status: 'ok', storage: { backend: 'redis', reachable: true } });
    }
  }, 60_000);

  it("proxyd trust --config <the node's Proxyfile> trusts the fleet's root in Redis, and makes no CA of its own", async () => {
    const node = nodes[0] as RunningProxyd;
    const home = await mkdtemp(path.join(tmpdir(), 'proxyd-e2e-trust-redis-'));
    const certDir = path.join(home, 'certs');
    try {
      const cli = proxydCommand(['trust', '--config', node.configPath, '--cert-dir', certDir, '--no-system']);
      const { stdout, stderr } = await run(cli.file, cli.args, { env: { ...process.env, HOME: home } });
      expect(stderr).toBe('');
      const fleetRoot = new X509Certificate(redis.cli('GET', 'e2e:value:ca/local/root.crt'));
      const fingerprint = fleetRoot.fingerprint256.replaceAll(':', '').toLowerCase();
      const [first, second] = stdout.trim().split('\n');
      expect(first).toBe(
        `local CA root "${/CN=(.*)/.exec(fleetRoot.subject)?.[1]}" (SHA-256 ${fingerprint}) in Redis ${redis.url}, key prefix e2e (${node.configPath})`,
      );
      expect(second).toMatch(/^added ".* [0-9a-f]{8}" with trust C,, to the NSS database sql:/);
      expect(existsSync(certDir)).toBe(false);
    } finally {
      await rm(home, { recursive: true, force: true });
    }
    // A bound only a hang reaches, not a speed target: the command is one short Node process (`proxyd trust
    // --help` alone uses 0.5 s of CPU), but at nice 19 beside `stress-ng --cpu 2` that `--help` took 31 s and
    // this test once passed 30 s.
  }, 300_000);

  it('Redis stopped: both keep serving the certificate, say so in /health, /metrics and the log, and do not exit', async () => {
    const before = await served(nodes[0] as RunningProxyd);
    await redis.stop();
    for (const node of nodes) {
      await waitUntil(async () => (await health(node)).storage?.reachable === false, 10_000);
      expect((await served(node))?.serial).toBe(before?.serial);
      const metrics = await adminCall(node.adminPort, 'GET', '/metrics');
      expect(metrics.body).toContain('proxyd_storage_reachable{backend="redis"} 0');
      expect(node.output()).toMatch(/"target":"proxy::tls".*storage redis: unreachable/);
      expect(node.child.exitCode).toBeNull();
    }
  }, 60_000);
});

// The test starts its daemon: its bound is startProxyd's for the start, then 60 s for what it checks.
describe('issue 31: Redis not there at start', { timeout: START_WITHIN_MS + 60_000 }, () => {
  it('the daemon starts and says Redis is unreachable; once Redis answers, the certificate is issued into it', async () => {
    const port = await freePort();
    const node = await startProxyd({
      global: `\tstorage redis redis://127.0.0.1:${port}\n`,
      sites: 'late.test {\n\trespond "hello"\n}\n',
      env: { PROXY_ADMIN_TOKEN: ADMIN_TOKEN },
    });
    let redis: StartedRedis | undefined;
    try {
      await waitUntil(async () => (await health(node)).storage?.reachable === false, 10_000);
      expect(await served(node, 'late.test')).toBeNull();
      redis = await startRedis({ port });
      await waitUntil(async () => (await health(node)).storage?.reachable === true, 10_000);
      // The first attempt was waiting for the lock `cert-late.test` while Redis was away: it takes it now.
      await waitUntil(async () => (await served(node, 'late.test')) !== null, 30_000);
      expect(redis.cli('EXISTS', 'proxyd:value:certificates/local/late.test/late.test.crt')).toBe('1');
      expect(node.child.exitCode).toBeNull();
    } finally {
      await node.stop();
      await redis?.stop();
    }
  });
});
