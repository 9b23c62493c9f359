import { X509Certificate } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import tls from 'node:tls';
import { type StartedPebble as Pebble, startPebble } from '@proxyd/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AcmeIssuer } from '../acme/acme-issuer.js';
import type { ChallengeType } from '../acme/challenge-solver.js';
import { MemoryStorage } from '../acme/memory-storage.test-helpers.js';
import { LocalCa } from '../local-ca/local-ca.js';
import { MemoryStorage as LocalMemoryStorage } from '../local-ca/memory-storage.test-helpers.js';
import { ariCertId } from '../schedule/ari.js';
import type { CertificateStorage } from '../storage/storage.js';
import { type CertificateChange, CertificateManager, type CertificateManagerOptions } from './certificate-manager.js';
import { ChallengeTable } from './challenge-table.js';
import { certificateKeys } from './stored-certificate.js';

/**
 * The manager end to end against a real ACME CA (pebble) on loopback: the
 * manager's ChallengeTable answers pebble's HTTP-01 requests through a tiny
 * HTTP server and its TLS-ALPN-01 handshakes through a TLS server, as the
 * daemon's listeners do. Every manager shares one table, so the responders
 * need not know which manager is obtaining.
 */
const table = new ChallengeTable();
const httpResponder = http.createServer((req, res) => {
  const token = /^\/\.well-known\/acme-challenge\/([\w-]+)$/.exec(req.url ?? '')?.[1];
  const host = (req.headers.host ?? '').replace(/:\d+$/, '');
  const answer = token === undefined ? null : table.respond(token, host);
  if (answer === null) return res.writeHead(404).end();
  res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(answer);
});
// OpenSSL asks for the certificate (SNI) before it selects ALPN, so the
// challenge context is served while a challenge for the name is presented;
// the ALPN callback then accepts only `acme-tls/1` (what the CA offers).
const tlsResponder = tls.createServer(
  {
    ALPNCallback: ({ protocols }) => (protocols.includes('acme-tls/1') ? 'acme-tls/1' : undefined),
    SNICallback: (name, cb) => {
      const context = table.alpnContextFor(name);
      if (context === null) cb(new Error(`no challenge for ${name}`));
      else cb(null, context);
    },
  },
  (socket) => socket.end(),
);
tlsResponder.on('tlsClientError', () => {});

let pebble: Pebble;
const issuers: AcmeIssuer[] = [];
const managers: CertificateManager[] = [];

function managerFor(
  storage: CertificateStorage,
  options: Partial<CertificateManagerOptions> & { challenges?: readonly ChallengeType[] } = {},
): CertificateManager {
  const issuer = new AcmeIssuer({
    directoryUrl: pebble.directoryUrl,
    caRootPem: pebble.apiCaPem,
    solver: table,
    storage,
    pollIntervalMs: 50,
  });
  issuers.push(issuer);
  const manager = new CertificateManager({ storage, acmeIssuers: [issuer], challengeTable: table, ...options });
  managers.push(manager);
  return manager;
}

/** Handshakes with a server that serves `manager.contextFor`, trusting only pebble's root: resolves with the verified leaf. */
async function verifiedLeaf(manager: CertificateManager, name: string): Promise<X509Certificate> {
  const server = tls.createServer(
    {
      SNICallback: (servername, cb) => {
        Promise.resolve(manager.contextFor(servername)).then(
          (context) => (context === null ? cb(new Error('no certificate')) : cb(null, context)),
          cb,
        );
      },
    },
    (socket) => socket.end(),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as AddressInfo;
    return await new Promise<X509Certificate>((resolve, reject) => {
      const socket = tls.connect({ host: '127.0.0.1', port, servername: name, ca: pebble.rootPem }, () => {
        const peer = socket.getPeerX509Certificate();
        socket.end();
        if (peer === undefined) reject(new Error('no peer certificate'));
        else resolve(peer);
      });
      socket.on('error', reject);
    });
  } finally {
    server.close();
  }
}

beforeAll(async () => {
  await new Promise<void>((resolve) => httpResponder.listen(0, '127.0.0.1', resolve));
  await new Promise<void>((resolve) => tlsResponder.listen(0, '127.0.0.1', resolve));
  pebble = await startPebble({
    httpPort: (httpResponder.address() as AddressInfo).port,
    tlsPort: (tlsResponder.address() as AddressInfo).port,
    validitySeconds: 120,
  });
});

afterAll(async () => {
  for (const manager of managers) {
    manager.close();
    await manager.whenIdle();
  }
  for (const issuer of issuers) issuer.close();
  await pebble?.stop();
  httpResponder.close();
  tlsResponder.close();
});

describe('CertificateManager against pebble on loopback', () => {
  it('obtains with HTTP-01; a second manager on the same storage loads it and places no order', async () => {
    const storage = new MemoryStorage();
    const manager = managerFor(storage, { challenges: ['http-01'] });
    await manager.setNames([{ name: 'http.example.com', issuer: 'acme' }]);
    await manager.whenIdle();
    expect(manager.status()[0]).toMatchObject({
      name: 'http.example.com',
      status: 'valid',
      issuer: pebble.directoryUrl,
    });
    expect(manager.orderCounts()).toEqual({ valid: 1, invalid: 0, error: 0 });
    const leaf = await verifiedLeaf(manager, 'http.example.com');
    expect(leaf.subjectAltName).toContain('DNS:http.example.com');
    expect(table.size).toBe(0);

    const again = managerFor(storage);
    await again.setNames([{ name: 'http.example.com', issuer: 'acme' }]);
    await again.whenIdle();
    expect(again.orderCounts()).toEqual({ valid: 0, invalid: 0, error: 0 });
    expect((await verifiedLeaf(again, 'http.example.com')).serialNumber).toBe(leaf.serialNumber);
  });

  it('obtains with TLS-ALPN-01', async () => {
    const manager = managerFor(new MemoryStorage(), { challenges: ['tls-alpn-01'] });
    await manager.setNames([{ name: 'alpn.example.com', issuer: 'acme' }]);
    await manager.whenIdle();
    expect(manager.status()[0]).toMatchObject({ status: 'valid', lastError: null });
    expect((await verifiedLeaf(manager, 'alpn.example.com')).subjectAltName).toContain('DNS:alpn.example.com');
  });

  it('renews a 2-minute certificate and serves the new one in place', async () => {
    const storage = new MemoryStorage();
    // The manager's clock runs 90 s ahead once the first certificate is in: past 1/3 of its 2 minutes
    // left, so the next check (every 200 ms) renews, with no test sleeping for a minute and a half.
    let skew = 0;
    const manager = managerFor(storage, { now: () => Date.now() + skew, checkIntervalMs: 200 });
    const changes: CertificateChange[] = [];
    manager.onChange((change) => {
      changes.push(change);
      // Back to real time once renewed: the new certificate is not due.
      if (changes.length === 2) skew = 0;
    });
    await manager.setNames([{ name: 'renew.example.com', issuer: 'acme' }]);
    await manager.whenIdle();
    const first = await verifiedLeaf(manager, 'renew.example.com');
    expect(Date.parse(first.validTo) - Date.parse(first.validFrom)).toBeLessThanOrEqual(121_000);

    skew = 90_000;
    await expect.poll(() => changes.length, { timeout: 20_000, interval: 100 }).toBe(2);
    await manager.whenIdle();
    expect(changes[1]).toMatchObject({ name: 'renew.example.com', replaced: true });
    const second = await verifiedLeaf(manager, 'renew.example.com');
    expect(second.serialNumber).not.toBe(first.serialNumber);
    expect(manager.orderCounts().valid).toBe(2);
    const stored = (await storage.load(certificateKeys(caSegment(), 'renew.example.com').cert))?.toString();
    expect(stored && new X509Certificate(stored).serialNumber).toBe(second.serialNumber);
  });
});

/** The storage segment of pebble's certificates (`acme/<ca>/…`). */
function caSegment(): string {
  return issuers[0]?.accountFolder.split('/')[1] ?? '';
}

/**
 * Pebble 2.4 (Debian's) has no ARI. This loopback HTTPS proxy in front of it
 * plays a CA that has: it forwards every request with its Host header (pebble
 * builds its URLs and checks JWS URLs from Host, so the proxy is
 * transparent), adds `renewalInfo` to the directory, answers renewalInfo
 * requests itself, and refuses the first order that carries `replaces`
 * (`alreadyReplaced`), as RFC 9773 §5 allows.
 */
async function startAriProxy(windowFor: (asked: number) => { start: string; end: string }) {
  const ca = await LocalCa.open(new LocalMemoryStorage());
  const leaf = await ca.issue(['127.0.0.1']);
  const seen = { renewalInfo: [] as string[], replaces: [] as (string | undefined)[], refused: 0 };
  const pebbleUrl = new URL(pebble.directoryUrl);
  const server = https.createServer({ cert: leaf.certPem, key: leaf.keyPem }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const path = req.url ?? '/';
      const info = /^\/renewal-info\/(.+)$/.exec(path);
      if (info) {
        seen.renewalInfo.push(info[1] as string);
        res.writeHead(200, { 'content-type': 'application/json', 'retry-after': '3600' });
        return res.end(JSON.stringify({ suggestedWindow: windowFor(seen.renewalInfo.length) }));
      }
      if (path === '/order-plz') {
        const jws = JSON.parse(body.toString()) as { payload: string };
        const payload = JSON.parse(Buffer.from(jws.payload, 'base64url').toString()) as { replaces?: string };
        seen.replaces.push(payload.replaces);
        if (payload.replaces !== undefined && seen.refused === 0) {
          seen.refused += 1;
          res.writeHead(409, { 'content-type': 'application/problem+json' });
          return res.end(
            JSON.stringify({
              type: 'urn:ietf:params:acme:error:alreadyReplaced',
              detail: 'already replaced',
              status: 409,
            }),
          );
        }
      }
      const upstream = https.request(
        {
          host: '127.0.0.1',
          port: pebbleUrl.port,
          path,
          method: req.method,
          headers: req.headers,
          ca: pebble.apiCaPem,
        },
        (answer) => {
          const parts: Buffer[] = [];
          answer.on('data', (chunk: Buffer) => parts.push(chunk));
          answer.on('end', () => {
            let out = Buffer.concat(parts);
            if (path === '/dir') {
              const directory = JSON.parse(out.toString()) as Record<string, unknown>;
              directory.renewalInfo = `https://${req.headers.host}/renewal-info`;
              out = Buffer.from(JSON.stringify(directory));
            }
            const { 'transfer-encoding': _chunked, ...rest } = answer.headers;
            const headers = { ...rest, 'content-length': String(out.length) };
            res.writeHead(answer.statusCode ?? 502, headers).end(out);
          });
        },
      );
      upstream.on('error', () => res.writeHead(502).end());
      upstream.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    directoryUrl: `https://127.0.0.1:${port}/dir`,
    caRootPem: ca.rootPem,
    seen,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

describe('ARI (RFC 9773) against pebble behind a proxy that adds renewalInfo', () => {
  it('AcmeIssuer asks renewalInfo by cert ID, sends replaces, and orders once more without it when refused', async () => {
    const window = { start: '2030-01-01T00:00:00Z', end: '2030-01-02T00:00:00Z' };
    const proxy = await startAriProxy(() => window);
    try {
      const issuer = new AcmeIssuer({
        directoryUrl: proxy.directoryUrl,
        caRootPem: proxy.caRootPem,
        solver: table,
        storage: new MemoryStorage(),
        pollIntervalMs: 50,
      });
      issuers.push(issuer);
      const first = await issuer.obtain(['ari.example.com']);
      const certId = ariCertId(first.certificatePem);
      expect(await issuer.renewalInfo(first.certificatePem)).toEqual({
        certId,
        info: { window: { start: Date.parse(window.start), end: Date.parse(window.end) }, explanationUrl: null },
        retryAfter: '3600',
      });
      expect(proxy.seen.renewalInfo).toEqual([certId]);

      const second = await issuer.obtain(['ari.example.com'], { replaces: certId });
      expect(second.certificatePem).not.toBe(first.certificatePem);
      expect(proxy.seen.replaces).toEqual([undefined, certId, undefined]);
      expect(proxy.seen.refused).toBe(1);

      // A CA without renewalInfo in its directory: null, no request.
      const plain = new AcmeIssuer({
        directoryUrl: pebble.directoryUrl,
        caRootPem: pebble.apiCaPem,
        solver: table,
        storage: new MemoryStorage(),
      });
      issuers.push(plain);
      expect(await plain.renewalInfo(first.certificatePem)).toBeNull();
    } finally {
      proxy.close();
    }
  });

  it('the manager renews at the time chosen in a past window, with replaces', async () => {
    // The first certificate's window is open already (an incident: renew now); the renewed one's is a
    // year out, so the manager renews exactly once.
    const proxy = await startAriProxy((asked) => {
      const now = Date.now();
      return asked === 1
        ? { start: new Date(now).toISOString(), end: new Date(now + 1000).toISOString() }
        : {
            start: new Date(now + 365 * 86_400_000).toISOString(),
            end: new Date(now + 366 * 86_400_000).toISOString(),
          };
    });
    try {
      const storage = new MemoryStorage();
      const issuer = new AcmeIssuer({
        directoryUrl: proxy.directoryUrl,
        caRootPem: proxy.caRootPem,
        solver: table,
        storage,
        pollIntervalMs: 50,
      });
      issuers.push(issuer);
      const manager = new CertificateManager({ storage, acmeIssuers: [issuer], challengeTable: table });
      managers.push(manager);
      const changes: CertificateChange[] = [];
      manager.onChange((change) => changes.push(change));
      await manager.setNames([{ name: 'ari-manager.example.com', issuer: 'acme' }]);
      await expect.poll(() => proxy.seen.renewalInfo.length, { timeout: 20_000, interval: 100 }).toBe(2);
      await manager.whenIdle();
      expect(changes.map((c) => c.replaced)).toEqual([false, true]);
      // The renewal named the first certificate; the CA refused that once, and the order went again without it.
      expect(proxy.seen.replaces).toEqual([undefined, proxy.seen.renewalInfo[0], undefined]);
      expect(manager.orderCounts()).toEqual({ valid: 2, invalid: 0, error: 0 });
    } finally {
      proxy.close();
    }
  });
});
