import { randomBytes, X509Certificate } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { fileURLToPath } from 'node:url';
import { FileStorage, LocalCa } from '@proxyd/certificates';
import {
  type CertificatePem,
  type DataPlaneNode,
  Fleet,
  type RouteUpdate,
  startWorkerNodes,
  type WorkerInit,
  type WorkerReady,
} from '@proxyd/cluster';
import { type Config, defaultGlobalOptions, emptySite, type RouteSnapshot, type RouteSpec } from '@proxyd/model';
import { createLogging } from '@proxyd/telemetry';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ProxydTelemetry, startLocalNode } from './local-node.js';

// The control↔data contract, one suite run against both transports: the
// in-process node (a LocalNode in this process) and the IPC node (a real
// forked worker running the built `dist/cluster/worker.js`: `pnpm build`
// first). Both pull certificates here (a bounded cache filled at a
// handshake), so that the SNI miss goes through the contract's
// `certificateFor` in both.

const WORKER_ENTRY = fileURLToPath(new URL('../../dist/cluster/worker.js', import.meta.url));

/** A site answering `body` on `host` (plain HTTP with `http`, else HTTPS with on-demand certificates). */
function route(host: string, body: string, scheme: 'http' | null = 'http'): RouteSpec {
  const site = emptySite([{ scheme, host, port: null }]);
  site.handler = { kind: 'respond', status: 200, body };
  if (scheme === null) site.tls.on_demand = true;
  return { domain: host, origin: 'api', source: null, site };
}

/** The snapshot after `base` with `upserted` set, as the route store publishes it (its changes included). */
function next(base: RouteSnapshot, upserted: RouteSpec[]): RouteSnapshot {
  const gone = new Set(upserted.map((r) => r.domain));
  const routes = base.routes.filter((r) => !gone.has(r.domain)).concat(upserted);
  return { routes, version: base.version + 1, changes: { base: new WeakRef(base.routes), upserted, removed: [] } };
}

function get(port: number, host: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/', headers: { host, connection: 'close' } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        body += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
  });
}

/** The serial number of the certificate served for `servername`. */
function peerSerial(port: number, servername: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port, servername, rejectUnauthorized: false }, () => {
      resolve(socket.getPeerCertificate().serialNumber);
      socket.end();
    });
    socket.on('error', reject);
  });
}

/** The subject name of the certificate served for `servername`, or the handshake's error. */
function peerName(port: number, servername: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = tls.connect({ host: '127.0.0.1', port, servername, rejectUnauthorized: false }, () => {
      resolve(String(socket.getPeerCertificate().subject?.CN ?? socket.getPeerCertificate().subjectaltname));
      socket.end();
    });
    socket.on('error', (err) => resolve(`error: ${err.message}`));
  });
}

interface Harness {
  fleet: Fleet<ProxydTelemetry>;
  node: DataPlaneNode<ProxydTelemetry>;
  httpPort: () => number;
  httpsPort: () => number;
  /** Every route update the node was sent, by kind and version. */
  sent: string[];
  /** Names the fleet was asked for on an SNI miss. */
  asked: string[];
  /** The certificates the control plane answers, by name (a test renews one by replacing it). */
  pems: Map<string, CertificatePem>;
  publish(snapshot: RouteSnapshot): Promise<void>;
  /** Drops the next update sent to the node (a broadcast lost on its way). */
  loseNext(): void;
  stop(graceMs: number): Promise<void>;
}

async function issue(names: string[]): Promise<Map<string, CertificatePem>> {
  const dir = await mkdtemp(path.join(tmpdir(), 'proxyd-contract-ca-'));
  try {
    const ca = await LocalCa.open(new FileStorage(dir));
    const out = new Map<string, CertificatePem>();
    for (const name of names) {
      const issued = await ca.issue([name]);
      out.set(name, { name, cert: issued.certPem, key: issued.keyPem });
    }
    return out;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** A fleet of one node over `transport`, serving `first`. */
async function harness(transport: 'in-process' | 'ipc', first: RouteSnapshot): Promise<Harness> {
  const pems = await issue(['shop.localhost']);
  const asked: string[] = [];
  let current = first;
  const global = defaultGlobalOptions();
  global.http_port = 0;
  global.https_port = 0;
  const config: Config = { global, sites: [] };
  const stateDir = await mkdtemp(path.join(tmpdir(), 'proxyd-contract-'));
  const fleet = new Fleet<ProxydTelemetry>({
    routes: () => current,
    certificates: {
      names: () => [...pems.keys()],
      async certificateFor(name) {
        asked.push(name);
        return pems.get(name) ?? null;
      },
    },
  });
  let ports = { http: 0, https: 0 };
  let stopSet: (graceMs: number) => Promise<void>;
  let node: DataPlaneNode<ProxydTelemetry>;
  if (transport === 'in-process') {
    const join = fleet.join();
    const local = await startLocalNode({
      index: 0,
      config,
      table: join.routes,
      logging: createLogging('off'),
      stateDir,
      rollups: false,
      visitorSalt: null,
      siteLogs: { write: () => {}, writeLast: async () => {} },
      certificates: {
        mode: 'pulled',
        initial: join.certificates ?? { served: [], unserved: [] },
        supply: fleet,
        askUnserved: true,
        capacity: 100,
      },
      challenges: join.challenges,
      dataPlane: { bindHost: '127.0.0.1' },
    });
    ports = { http: local.plane.httpAddress.port, https: local.plane.httpsAddress?.port ?? 0 };
    node = local;
    stopSet = (graceMs) => local.stop(graceMs);
    fleet.attach({ nodes: [local], stop: stopSet });
  } else {
    const set = await startWorkerNodes<WorkerInit, ProxydTelemetry>({
      count: 1,
      entry: WORKER_ENTRY,
      // The built worker and what it imports: not vitest's `source` condition.
      execArgv: [],
      env: { ...process.env, PROXY_LOG: 'off' },
      fleet,
      init: (index, join) => ({
        index,
        config,
        table: join.table,
        certificates: join.certificates,
        certificateCacheCapacity: 100,
        challenges: join.challenges,
        secret: randomBytes(32),
        ticketKeys: randomBytes(48),
        bindHost: '127.0.0.1',
        redirects: true,
        stateDir,
        metrics: false,
        rollups: false,
        visitorSalt: null,
        cache: null,
      }),
      onReady(_index, _pid, answer) {
        const ready = answer as WorkerReady;
        ports = { http: ready.http, https: ready.https ?? 0 };
      },
    });
    node = set.nodes[0] as DataPlaneNode<ProxydTelemetry>;
    stopSet = (graceMs) => set.stop(graceMs);
  }
  // The node as the fleet sees it, recording what it is sent (and losing an update on demand).
  const sent: string[] = [];
  let lose = false;
  const apply = node.applyRoutes.bind(node);
  node.applyRoutes = async (update: RouteUpdate) => {
    sent.push(`${update.kind} ${update.version}`);
    if (lose) {
      lose = false;
      return { version: update.version };
    }
    return await apply(update);
  };
  return {
    fleet,
    node,
    httpPort: () => ports.http,
    httpsPort: () => ports.https,
    sent,
    asked,
    pems,
    async publish(snapshot) {
      current = snapshot;
      await fleet.publishRoutes(snapshot);
    },
    loseNext() {
      lose = true;
    },
    async stop(graceMs) {
      await fleet.stop(graceMs);
      await rm(stateDir, { recursive: true, force: true });
    },
  };
}

describe.each(['in-process', 'ipc'] as const)('the control↔data contract over the %s transport', (transport) => {
  let h: Harness;
  let v1: RouteSnapshot;
  beforeAll(async () => {
    v1 = { routes: [route('a.localhost', 'a1'), route('shop.localhost', 'shop', null)], version: 1, changes: null };
    h = await harness(transport, v1);
  });
  afterAll(async () => {
    await h?.stop(0);
  });

  it('serves the table it started with, and route changes sent as deltas', async () => {
    expect(await get(h.httpPort(), 'a.localhost')).toEqual({ status: 200, body: 'a1' });
    const v2 = next(v1, [route('a.localhost', 'a2'), route('b.localhost', 'b2')]);
    await h.publish(v2);
    expect(h.sent).toEqual(['changes 2']);
    expect(await get(h.httpPort(), 'a.localhost')).toEqual({ status: 200, body: 'a2' });
    expect(await get(h.httpPort(), 'b.localhost')).toEqual({ status: 200, body: 'b2' });
    v1 = v2;
  });

  it('a node that missed a version asks for a snapshot, and gets one', async () => {
    h.sent.length = 0;
    const v3 = next(v1, [route('c.localhost', 'c3')]);
    h.loseNext();
    await h.publish(v3);
    const v4 = next(v3, [route('d.localhost', 'd4')]);
    await h.publish(v4);
    expect(h.sent).toEqual(['changes 3', 'changes 4', 'full 4']);
    expect(await get(h.httpPort(), 'c.localhost')).toEqual({ status: 200, body: 'c3' });
    expect(await get(h.httpPort(), 'd.localhost')).toEqual({ status: 200, body: 'd4' });
    v1 = v4;
  });

  it('asks the fleet for a certificate on an SNI miss, once, and keeps it', async () => {
    expect(await peerName(h.httpsPort(), 'shop.localhost')).toBe('shop.localhost');
    expect(await peerName(h.httpsPort(), 'shop.localhost')).toBe('shop.localhost');
    expect(h.asked).toEqual(['shop.localhost']);
  });

  it("a renewed certificate drops the node's copy: the next handshake asks again and gets the new one", async () => {
    const before = await peerSerial(h.httpsPort(), 'shop.localhost');
    const renewed = (await issue(['shop.localhost'])).get('shop.localhost') as CertificatePem;
    h.pems.set('shop.localhost', renewed);
    await h.fleet.certificatesChanged('shop.localhost');
    const after = await peerSerial(h.httpsPort(), 'shop.localhost');
    expect(after).not.toBe(before);
    expect(after).toBe(new X509Certificate(renewed.cert).serialNumber);
    expect(h.asked).toEqual(['shop.localhost', 'shop.localhost']);
    expect(await peerSerial(h.httpsPort(), 'shop.localhost')).toBe(after);
    expect(h.asked).toHaveLength(2);
  });

  it('answers an HTTP-01 challenge once presented, and no longer after its clean-up', async () => {
    const challenge = {
      type: 'http-01' as const,
      identifier: 'a.localhost',
      token: 'tok3n',
      keyAuthorization: 'tok3n.key',
    };
    const ask = () =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        http
          .get(
            {
              host: '127.0.0.1',
              port: h.httpPort(),
              path: '/.well-known/acme-challenge/tok3n',
              headers: { host: 'a.localhost' },
            },
            (res) => {
              let body = '';
              res.setEncoding('utf8');
              res.on('data', (c: string) => {
                body += c;
              });
              res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
            },
          )
          .on('error', reject);
      });
    await h.fleet.presentChallenge(challenge);
    expect(await ask()).toEqual({ status: 200, body: 'tok3n.key' });
    await h.fleet.cleanUpChallenge(challenge);
    expect((await ask()).body).not.toBe('tok3n.key');
  });

  it('purge answers whether a node had the key', async () => {
    expect(await h.fleet.purge('a.localhost/nothing-cached')).toBe(false);
  });

  it('stop drains: a request in flight finishes, then the listener is closed', async () => {
    const stats = await h.fleet.stats();
    expect(stats.requestsInFlight).toBe(0);
    const port = h.httpPort();
    await h.stop(1000);
    await expect(get(port, 'a.localhost')).rejects.toThrow(/ECONNREFUSED/);
  });
});
