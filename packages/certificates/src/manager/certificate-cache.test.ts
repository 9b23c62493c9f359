import { X509Certificate } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { MemoryStorage } from '../local-ca/memory-storage.test-helpers.js';
import { FakeAcmeIssuer, MINUTE } from './manager.test-helpers.js';
import { managerHarness } from './manager-harness.test-helpers.js';

// CertificateManager: the bounded cache of loaded certificates (issue 30); every name stays served.

const { setup } = managerHarness();

describe('CertificateManager: certificate cache', () => {
  it('keeps at most cacheCapacity certificates loaded and reads an evicted one from storage at its handshake', async () => {
    const { time, make, advance } = setup();
    const storage = new MemoryStorage();
    let reads = 0;
    const counting = Object.create(storage) as MemoryStorage;
    counting.load = async (key: string) => {
      if (key.endsWith('.crt')) reads += 1;
      return await storage.load(key);
    };
    const ca = new FakeAcmeIssuer('ca1', time);
    const manager = make({ storage: counting, acmeIssuers: [ca], cacheCapacity: 2, concurrency: { acme: 1 } });
    const names = ['a.example.com', 'b.example.com', 'c.example.com'];
    await manager.setNames(names.map((name) => ({ name, issuer: 'acme' as const })));
    await advance(MINUTE);
    expect(manager.status().map((s) => s.status)).toEqual(['valid', 'valid', 'valid']);
    // a.example.com was evicted when c.example.com came: still served, the redirect decision unchanged.
    expect(manager.cacheStats()).toMatchObject({ size: 2, evictions: 1, capacity: 2 });
    expect(names.map((name) => manager.has(name))).toEqual([true, true, true]);
    expect(manager.servedNames()).toEqual(names);

    // GET /certificates and the redirect decision read no storage, evicted names included.
    reads = 0;
    expect(manager.status().map((s) => [s.name, s.status])).toEqual(names.map((name) => [name, 'valid']));
    expect(manager.has('a.example.com')).toBe(true);
    expect(reads).toBe(0);
    const handshake = manager.contextFor('a.example.com');
    expect(handshake).toBeInstanceOf(Promise);
    // Concurrent handshakes share one read.
    const again = manager.contextFor('a.example.com');
    expect(await handshake).not.toBeNull();
    expect(await again).not.toBeNull();
    expect(reads).toBe(1);
    // Now cached (b.example.com went out): no read at the next one.
    expect(manager.contextFor('a.example.com')).not.toBeInstanceOf(Promise);
    expect(manager.cacheStats()).toMatchObject({ size: 2, evictions: 2 });
    expect(reads).toBe(1);
    const pem = await manager.pemFor('b.example.com');
    expect(new X509Certificate(pem?.cert as string).subjectAltName).toContain('DNS:b.example.com');
    expect(ca.orders).toHaveLength(3);
  });
});
