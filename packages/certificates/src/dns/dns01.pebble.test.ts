import type { X509Certificate } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import tls from 'node:tls';
import { type StartedBind, type StartedPebble, startBind, startPebble } from '@proxyd/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AcmeIssuer } from '../acme/acme-issuer.js';
import { MemoryStorage } from '../acme/memory-storage.test-helpers.js';
import { CertificateManager } from '../manager/certificate-manager.js';
import { ChallengeTable } from '../manager/challenge-table.js';
import { parseDnsServer } from './dns-client.js';
import { Dns01Solver } from './dns01-solver.js';
import { Rfc2136Provider } from './rfc2136.js';

/**
 * DNS-01 end to end below the daemon: a real pebble validates through a
 * real BIND 9 (`-dnsserver` pointing at it), which the manager updates
 * over RFC 2136 with TSIG. No HTTP-01 or TLS-ALPN-01 responder exists
 * (pebble's ports for them are closed), so only DNS-01 can succeed.
 */
let bind: StartedBind;
let pebble: StartedPebble;
const closers: (() => Promise<void> | void)[] = [];

beforeAll(async () => {
  bind = await startBind({ zones: [{ name: 'example.com' }] });
  // Ports 1 and 2: nothing answers HTTP-01 or TLS-ALPN-01.
  pebble = await startPebble({ httpPort: 1, tlsPort: 2, dnsServer: bind.address, validitySeconds: 3600 });
});
afterAll(async () => {
  for (const close of closers.reverse()) await close();
  await pebble?.stop();
  await bind?.stop();
});

function newManager(): CertificateManager {
  const storage = new MemoryStorage();
  const table = new ChallengeTable();
  const issuer = new AcmeIssuer({
    directoryUrl: pebble.directoryUrl,
    caRootPem: pebble.apiCaPem,
    solver: table,
    storage,
    pollIntervalMs: 50,
  });
  const manager = new CertificateManager({ storage, acmeIssuers: [issuer], challengeTable: table });
  closers.push(async () => {
    manager.close();
    await manager.whenIdle();
    issuer.close();
  });
  return manager;
}

function solverWith(secret: string): Dns01Solver {
  return new Dns01Solver({
    provider: new Rfc2136Provider({
      server: parseDnsServer(bind.address),
      key: { name: bind.key.name, algorithm: 'hmac-sha256', secret: Buffer.from(secret, 'base64') },
    }),
    resolvers: [bind.address],
    authoritativePort: bind.port,
    propagationIntervalMs: 50,
  });
}

/** A TLS handshake for `servername` with a server serving `manager`'s contexts, trusting only pebble's root. */
async function verifiedLeaf(manager: CertificateManager, servername: string): Promise<X509Certificate> {
  const server = tls.createServer(
    {
      SNICallback: (name, cb) => {
        const context = manager.contextFor(name);
        if (context === null || context instanceof Promise) cb(new Error('no certificate'));
        else cb(null, context);
      },
    },
    (socket) => socket.end(),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as AddressInfo;
    return await new Promise<X509Certificate>((resolve, reject) => {
      const socket = tls.connect({ host: '127.0.0.1', port, servername, ca: pebble.rootPem }, () => {
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

describe('DNS-01 with pebble and BIND', () => {
  it('obtains a plain name and a wildcard, serves every subdomain with the wildcard, and removes the records', async () => {
    const manager = newManager();
    const dns = solverWith(bind.key.secret);
    await manager.setNames([
      { name: 'dns.example.com', issuer: 'acme', dns },
      { name: '*.example.com', issuer: 'acme', dns },
    ]);
    await manager.whenIdle();
    expect(manager.status()).toEqual([
      expect.objectContaining({ name: '*.example.com', status: 'valid', challenge: 'dns-01', dnsStep: null }),
      expect.objectContaining({ name: 'dns.example.com', status: 'valid', challenge: 'dns-01', dnsStep: null }),
    ]);
    expect((await verifiedLeaf(manager, 'dns.example.com')).subjectAltName).toBe('DNS:dns.example.com');
    for (const sub of ['a.example.com', 'b.example.com']) {
      expect((await verifiedLeaf(manager, sub)).subjectAltName).toBe('DNS:*.example.com');
    }
    expect(bind.dig('_acme-challenge.example.com', 'TXT')).toBe('');
    expect(bind.dig('_acme-challenge.dns.example.com', 'TXT')).toBe('');
  });

  it('a wrong TSIG key: failing with the refused update named, one attempt, a retry scheduled minutes away', async () => {
    const manager = newManager();
    const wrong = Buffer.alloc(32, 9).toString('base64');
    await manager.setNames([{ name: 'wrong.example.com', issuer: 'acme', dns: solverWith(wrong) }]);
    await manager.whenIdle();
    const [row] = manager.status();
    expect(row).toMatchObject({ status: 'failing', challenge: 'dns-01', dnsStep: 'update-refused' });
    expect(row?.lastError).toMatch(/refused to add TXT _acme-challenge\.wrong\.example\.com .*TSIG error BADSIG/);
    expect(row?.lastError).not.toContain(wrong);
    // Backoff: the next attempt is at least ~48 s away (1 min less ≤ 20 % jitter), so nothing loops.
    expect((row?.nextAttemptAt ?? 0) - Date.now()).toBeGreaterThan(45_000);
    // One order, counted as `error` (proxyd failed to publish; the CA refused nothing).
    expect(manager.orderCounts()).toEqual({ valid: 0, invalid: 0, error: 1 });
  });
});
