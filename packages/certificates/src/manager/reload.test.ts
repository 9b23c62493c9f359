import { describe, expect, it } from 'vitest';
import { MemoryStorage } from '../local-ca/memory-storage.test-helpers.js';
import { FakeAcmeIssuer, MINUTE } from './manager.test-helpers.js';
import { managerHarness, storeIssued } from './manager-harness.test-helpers.js';

// CertificateManager: what another node sharing the storage obtained (issue 31): onObtained and reload.

const { setup } = managerHarness();

describe('CertificateManager: a fleet sharing one storage', () => {
  it('onObtained names each certificate this manager stored, after it is stored', async () => {
    const { time, make } = setup();
    const storage = new MemoryStorage();
    const ca = new FakeAcmeIssuer('ca1', time);
    const announced: [string, boolean][] = [];
    const manager = make({
      storage,
      acmeIssuers: [ca],
      onObtained: (name) =>
        announced.push([name, [...storage.values.keys()].some((key) => key.endsWith(`/${name}.crt`))]),
    });
    await manager.setNames([{ name: 'a.example.com', issuer: 'acme' }]);
    await manager.whenIdle();
    expect(announced).toEqual([['a.example.com', true]]);
    // A stored certificate that is only loaded is not announced again (a restart, another node's).
    const other = make({ storage, acmeIssuers: [ca], onObtained: (name) => announced.push([name, false]) });
    await other.setNames([{ name: 'a.example.com', issuer: 'acme' }]);
    await other.whenIdle();
    expect(announced).toHaveLength(1);
  });

  it('reload serves the newer certificate another node stored, at once and without an order', async () => {
    const { time, make, changes } = setup();
    const storage = new MemoryStorage();
    const ca = new FakeAcmeIssuer('ca1', time);
    await storeIssued(storage, ca, 'a.example.com');
    const manager = make({ storage, acmeIssuers: [ca] });
    await manager.setNames([
      { name: 'a.example.com', issuer: 'acme' },
      { name: 'b.example.com', issuer: 'acme' },
    ]);
    await manager.whenIdle();
    const before = manager.contextFor('a.example.com');
    const notAfter = manager.status().find((s) => s.name === 'a.example.com')?.notAfter;
    ca.orders.length = 0;

    // Another node renews a.example.com: storage has a newer certificate, this manager still serves its own.
    time.now += 5 * MINUTE;
    await storeIssued(storage, ca, 'a.example.com');
    expect(manager.contextFor('a.example.com')).toBe(before);

    await manager.reload('a.example.com');
    expect(manager.contextFor('a.example.com')).not.toBe(before);
    expect(manager.status().find((s) => s.name === 'a.example.com')?.notAfter).toBeGreaterThan(notAfter as number);
    expect(changes.at(-1)).toMatchObject({ name: 'a.example.com', replaced: true });
    expect(ca.orders).toEqual([]);

    // Nothing newer: nothing replaced. A name not managed here: ignored.
    const count = changes.length;
    await manager.reload(null);
    await manager.reload('unknown.example.com');
    expect(changes).toHaveLength(count);
  });
});
