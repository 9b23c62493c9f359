import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import {
  acmeGlobal,
  createFleetNetwork,
  type FleetNetwork,
  type Pebble,
  preparePebble,
  type StartedRedis,
  startRedis,
} from '@proxyd/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, adminCall, waitUntil } from './support/admin.js';
import { freePort, type RunningProxyd, START_WITHIN_MS, startProxyd } from './support/proxyd.js';

const run = promisify(execFile);

/**
 * The bound of a test that starts daemons one after the other, then waits 90 s at most for what it checks:
 * each start is bounded by startProxyd. Beside a CPU hog at nice 19 a start takes minutes: a 90 s bound that
 * counted the starts fired before the test began.
 */
const TWO_STARTS_THEN_90_S = { timeout: 2 * START_WITHIN_MS + 90_000 };

/**
 * Three proxyd nodes on one Redis and one pebble, each in its own network
 * namespace with its own address on a bridge (test-peers'
 * `createFleetNetwork`), as three machines on one LAN behind DNS would be:
 * a node's loopback is its own, and it reaches Redis and pebble at the
 * host's address on the bridge. Pebble's DNS sends every validation to one
 * address, so to one node.
 */
let network: FleetNetwork;
const NODES = { a: '', b: '', c: '' };
const NAMESPACES = { a: '', b: '', c: '' };
beforeAll(() => {
  network = createFleetNetwork(3);
  (['a', 'b', 'c'] as const).forEach((name, i) => {
    const ns = network.nodes[i] as { name: string; address: string };
    NODES[name] = ns.address;
    NAMESPACES[name] = ns.name;
  });
});
afterAll(() => network?.dispose());
type NodeName = keyof typeof NODES;

/** `curl https://<name>:<port><path>` at `address`, trusting only `caFile`: the status and body, or the error. */
async function curlAt(address: string, name: string, port: number, caFile: string, urlPath = '/') {
  try {
    const { stdout } = await run(
      'curl',
      [
        ...['-sS', '--max-time', '5', '--cacert', caFile, '--resolve', `${name}:${port}:${address}`],
        ...['-w', '\n%{http_code}', `https://${name}:${port}${urlPath}`],
      ],
      { encoding: 'utf8' },
    );
    const cut = stdout.lastIndexOf('\n');
    return { ok: true, status: Number(stdout.slice(cut + 1)), body: stdout.slice(0, cut) };
  } catch (err) {
    return { ok: false, status: 0, body: String((err as { stderr?: string }).stderr ?? err) };
  }
}

/** The serial of the certificate `address` serves for `name` (openssl, verified against `caFile`). */
async function servedSerial(address: string, name: string, port: number, caFile: string): Promise<string> {
  const { stdout } = await run('sh', [
    '-c',
    `openssl s_client -connect ${address}:${port} -servername ${name} -CAfile ${caFile} -verify_return_error </dev/null 2>/dev/null | openssl x509 -noout -serial`,
  ]);
  return stdout.trim();
}

/** `openssl s_client` to `address` saving (`-sess_out`) or resuming (`-sess_in`) a session: its output. */
async function handshake(address: string, port: number, caFile: string, session: string, mode: 'out' | 'in') {
  // A TLS 1.3 ticket arrives after the handshake: `-ign_eof` keeps s_client reading until the server closes,
  // which it does after answering a request that says `Connection: close`.
  const request = String.raw`GET /health HTTP/1.1\r\nHost: shared.test\r\nConnection: close\r\n\r\n`;
  const { stdout } = await run('sh', [
    '-c',
    `printf '${request}' | timeout 10 openssl s_client -connect ${address}:${port} -servername shared.test -CAfile ${caFile} -sess_${mode} ${session} -ign_eof 2>&1`,
  ]);
  return stdout;
}

/** A node's admin API, on its namespace's address. */
const admin = (node: RunningProxyd) => ({ host: node.adminHost, port: node.adminPort });

/** A counter of GET /metrics (`proxyd_acme_orders_total{result="valid"}`). */
async function validOrders(node: RunningProxyd): Promise<number> {
  const res = await adminCall(admin(node), 'GET', '/metrics');
  return Number(/^proxyd_acme_orders_total\{result="valid"\} (\d+)$/m.exec(res.body)?.[1] ?? Number.NaN);
}

describe('issue 31: three nodes on one Redis, one ACME CA', TWO_STARTS_THEN_90_S, () => {
  let redis: StartedRedis;
  let pebble: Pebble;
  let work: string;
  let rootFile: string;
  let httpPort: number;
  let httpsPort: number;
  const nodes = new Map<NodeName, RunningProxyd>();
  const node = (name: NodeName) => nodes.get(name) as RunningProxyd;

  const start = (name: NodeName, sites: string) =>
    startProxyd({
      httpPort,
      httpsPort,
      autoHttps: 'on',
      global: `\tdefault_bind ${NODES[name]}\n${acmeGlobal(pebble)}\tstorage redis ${redis.url} {\n\t\tkey_prefix fleet\n\t}\n`,
      sites,
      env: { PROXY_ADMIN_TOKEN: ADMIN_TOKEN },
      netns: { name: NAMESPACES[name], address: NODES[name] },
    }).then((started) => {
      nodes.set(name, started);
      return started;
    });

  beforeAll(async () => {
    work = await mkdtemp(path.join(tmpdir(), 'proxyd-e2e-fleet-'));
    [httpPort, httpsPort] = [await freePort(), await freePort()];
    redis = await startRedis({ address: network.hostAddress });
    // Pebble's DNS answers every name with node B's address: B gets every validation request.
    pebble = await preparePebble({ httpPort, tlsPort: httpsPort, defaultIPv4: NODES.b, address: network.hostAddress });
    await pebble.start();
    rootFile = path.join(work, 'pebble-root.pem');
    await writeFile(rootFile, await pebble.rootPem());
  });

  afterAll(async () => {
    await Promise.all([...nodes.values()].map((n) => n.stop()));
    await pebble?.dispose();
    await redis?.stop();
    await rm(work, { recursive: true, force: true });
  });

  it('HTTP-01 answered by a node that placed no order; one order for the fleet; all three serve one certificate', async () => {
    // B and C serve no site yet: neither orders anything, and B answers pebble for A's order.
    await Promise.all([start('b', ''), start('c', '')]);
    await waitUntil(() => Promise.resolve(redis.cli('PUBSUB', 'NUMSUB', 'fleet:events').endsWith('\n2')), 10_000);
    const a = await start('a', 'shared.test {\n\trespond "hello from the fleet"\n}\n');
    await waitUntil(async () => (await curlAt(NODES.a, 'shared.test', httpsPort, rootFile)).ok, 30_000).catch(() => {
      throw new Error(`A got no certificate:\n${a.output()}\n--- B:\n${node('b').output()}\n${pebble.log()}`);
    });
    expect(await curlAt(NODES.a, 'shared.test', httpsPort, rootFile)).toMatchObject({
      status: 200,
      body: 'hello from the fleet',
    });
    // A's own listeners were never asked: pebble resolves shared.test to B only, and B holds no order.
    expect(await validOrders(a)).toBe(1);
    expect(await validOrders(node('b'))).toBe(0);
    expect(a.output()).toMatch(/certificate for shared\.test obtained/);
    expect(pebble.orders()).toBe(1);
    // Nothing of the challenge is left in Redis once the order is done.
    await waitUntil(() => Promise.resolve(redis.cli('ZCARD', 'fleet:challenges') === '0'), 5_000);

    // B and C now serve the name too (an API route on each): they load A's certificate, order nothing.
    for (const other of ['b', 'c'] as const) {
      const created = await adminCall(admin(node(other)), 'POST', '/routes', {
        domain: 'shared.test',
        upstream: `${NODES[other]}:${node(other).adminPort}`,
        tls: false,
      });
      expect(created.status).toBe(201);
    }
    for (const other of ['b', 'c'] as const) {
      await waitUntil(
        async () => (await curlAt(NODES[other], 'shared.test', httpsPort, rootFile, '/health')).ok,
        10_000,
      );
    }
    const serials = await Promise.all(
      (['a', 'b', 'c'] as const).map((n) => servedSerial(NODES[n], 'shared.test', httpsPort, rootFile)),
    );
    expect(serials[0]).toMatch(/^serial=[0-9A-F]+$/);
    expect(new Set(serials).size).toBe(1);
    expect(pebble.orders()).toBe(1);
    expect(await validOrders(node('c'))).toBe(0);
  });

  it('a TLS session started on node A resumes on node B and on node C', async () => {
    const session = path.join(work, 'session.pem');
    const first = await handshake(NODES.a, httpsPort, rootFile, session, 'out');
    expect(first).toMatch(/Verify return code: 0 \(ok\)/);
    expect(first).toMatch(/^New, TLSv1\.3/m);
    for (const other of ['b', 'c'] as const) {
      const resumed = await handshake(NODES[other], httpsPort, rootFile, session, 'in');
      expect(resumed, `on node ${other}`).toMatch(/^Reused, TLSv1\.3/m);
    }
    // The keys live in Redis, made once for the fleet.
    expect(redis.cli('EXISTS', 'fleet:value:tls/session-ticket-keys.json')).toBe('1');
  }, 30_000);

  it('a node killed with kill -9 while holding an order lock: another node orders once the lock expires', async () => {
    const a = node('a');
    const lockKey = 'fleet:lock:cert-kill.test';
    // B (every validation goes to it) stopped: A's order waits on it, lock held, when A is killed. C stopped
    // too: the API route reaches every node (fleet routes), and A must be the one that takes the lock.
    node('b').child.kill('SIGSTOP');
    node('c').child.kill('SIGSTOP');
    try {
      const created = await adminCall(admin(a), 'POST', '/routes', {
        domain: 'kill.test',
        upstream: `${NODES.a}:${a.adminPort}`,
        tls: false,
      });
      expect(created.status).toBe(201);
      await waitUntil(() => Promise.resolve(redis.cli('GET', lockKey).includes(`"pid":${a.child.pid}`)), 10_000);
      a.child.kill('SIGKILL');
    } finally {
      node('b').child.kill('SIGCONT');
      node('c').child.kill('SIGCONT');
    }
    const killedAt = Date.now();
    const c = node('c');
    const created = await adminCall(admin(c), 'POST', '/routes', {
      domain: 'kill.test',
      upstream: `${NODES.c}:${c.adminPort}`,
      tls: false,
    });
    expect(created.status).toBe(201);
    // C waits for the dead holder's lock (30 s expiry, never refreshed again), then orders; B answers pebble.
    await waitUntil(async () => (await curlAt(NODES.c, 'kill.test', httpsPort, rootFile, '/health')).ok, 60_000).catch(
      () => {
        throw new Error(`C got no certificate:\n${c.output()}\n${pebble.log()}`);
      },
    );
    expect(Date.now() - killedAt).toBeGreaterThan(15_000);
    // B and C both serve kill.test (fleet routes): whichever takes the lock first orders, once, and C serves it.
    const obtained = [node('b'), c].filter((n) => /certificate for kill\.test obtained/.test(n.output()));
    expect(obtained).toHaveLength(1);
    expect(redis.cli('GET', lockKey)).toBe('');
  }, 90_000);
});

describe('issue 31: TLS-ALPN-01 answered by a node that placed no order', TWO_STARTS_THEN_90_S, () => {
  let redis: StartedRedis;
  let pebble: Pebble;
  let work: string;
  const running: RunningProxyd[] = [];

  beforeAll(async () => {
    work = await mkdtemp(path.join(tmpdir(), 'proxyd-e2e-fleet-alpn-'));
    redis = await startRedis({ address: network.hostAddress });
  });

  afterAll(async () => {
    await Promise.all(running.map((n) => n.stop()));
    await pebble?.dispose();
    await redis?.stop();
    await rm(work, { recursive: true, force: true });
  });

  it('pebble validates over acme-tls/1 at node B while node A holds the order', async () => {
    const [httpPort, httpsPort, closed] = [await freePort(), await freePort(), await freePort()];
    // HTTP-01 answers are fetched from a port nothing listens on: only TLS-ALPN-01, at node B, can succeed.
    pebble = await preparePebble({
      httpPort: closed,
      tlsPort: httpsPort,
      defaultIPv4: NODES.b,
      address: network.hostAddress,
    });
    await pebble.start();
    const rootFile = path.join(work, 'root.pem');
    await writeFile(rootFile, await pebble.rootPem());
    const start = (name: 'a' | 'b', sites: string) =>
      startProxyd({
        httpPort,
        httpsPort,
        autoHttps: 'on',
        global: `\tdefault_bind ${NODES[name]}\n${acmeGlobal(pebble)}\tstorage redis ${redis.url}\n`,
        sites,
        env: { PROXY_ADMIN_TOKEN: ADMIN_TOKEN },
        netns: { name: NAMESPACES[name], address: NODES[name] },
      }).then((started) => {
        running.push(started);
        return started;
      });
    // B's one site has a local-CA certificate: its HTTPS listener is open, and it orders nothing from pebble.
    const b = await start('b', 'b.test {\n\ttls internal\n\trespond "b"\n}\n');
    await waitUntil(() => Promise.resolve(redis.cli('PUBSUB', 'NUMSUB', 'proxyd:events').endsWith('\n1')), 10_000);
    const a = await start('a', 'alpn.test {\n\trespond "validated at another node"\n}\n');
    await waitUntil(async () => (await curlAt(NODES.a, 'alpn.test', httpsPort, rootFile)).ok, 45_000).catch(() => {
      throw new Error(`A got no certificate:\n${a.output()}\n--- B:\n${b.output()}\n${pebble.log()}`);
    });
    expect(await curlAt(NODES.a, 'alpn.test', httpsPort, rootFile)).toMatchObject({
      status: 200,
      body: 'validated at another node',
    });
    expect(a.output()).toMatch(/certificate for alpn\.test obtained/);
    expect(await validOrders(b)).toBe(0);
  });
});
