import { describe, expect, it } from 'vitest';
import { MemoryStorage } from '../local-ca/memory-storage.test-helpers.js';
import { lifetimeRenewalTimes } from '../schedule/renewal-window.js';
import { DAY, FakeAcmeIssuer } from './manager.test-helpers.js';
import { managerHarness, storeIssued } from './manager-harness.test-helpers.js';
import { certificateKeys } from './stored-certificate.js';

// CertificateManager: serving (serve.ts): stored certificates served at setNames, removed names no longer served.

const { setup } = managerHarness();

describe('CertificateManager: serving', () => {
  it('serves a stored valid certificate at setNames and places no order', async () => {
    const { time, make, changes } = setup();
    const storage = new MemoryStorage();
    const ca = new FakeAcmeIssuer('ca1', time);
    const issued = await storeIssued(storage, ca, 'a.example.com');
    const manager = make({ storage, acmeIssuers: [ca] });

    await manager.setNames([{ name: 'a.example.com', issuer: 'acme' }]);
    expect(manager.contextFor('a.example.com')).not.toBeNull();
    expect(manager.contextFor('A.Example.COM')).not.toBeNull();
    expect(manager.has('a.example.com')).toBe(true);
    await manager.whenIdle();
    expect(ca.orders).toHaveLength(0);
    expect(changes).toEqual([
      { name: 'a.example.com', issuer: ca.directoryUrl, notAfter: issued.notAfter, replaced: false },
    ]);
    expect(manager.status()).toEqual([
      {
        name: 'a.example.com',
        issuer: ca.directoryUrl,
        notAfter: issued.notAfter,
        status: 'valid',
        lastError: null,
        nextAttemptAt: lifetimeRenewalTimes(issued).renewAt,
        challenge: null,
        dnsStep: null,
      },
    ]);
  });

  it('removed names are no longer served or maintained; their files stay', async () => {
    const { time, make, advance } = setup();
    const storage = new MemoryStorage();
    const ca = new FakeAcmeIssuer('ca1', time);
    const manager = make({ storage, acmeIssuers: [ca] });
    await manager.setNames([
      { name: 'a.example.com', issuer: 'acme' },
      { name: 'b.example.com', issuer: 'acme' },
    ]);
    await manager.whenIdle();
    expect(ca.orders).toHaveLength(2);

    await manager.setNames([{ name: 'b.example.com', issuer: 'acme' }]);
    expect(manager.contextFor('a.example.com')).toBeNull();
    expect(manager.status().map((s) => s.name)).toEqual(['b.example.com']);
    await advance(80 * DAY);
    expect(ca.orders.filter((o) => o.names[0] === 'a.example.com')).toHaveLength(1);
    expect(ca.orders.filter((o) => o.names[0] === 'b.example.com').length).toBeGreaterThan(1);
    expect(await storage.load(certificateKeys('ca1', 'a.example.com').cert)).not.toBeNull();
  });
});
