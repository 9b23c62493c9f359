import { describe, expect, it } from 'vitest';
import { MemoryStorage } from '../local-ca/memory-storage.test-helpers.js';
import { FileStorage } from '../storage/file-storage.js';
import { DAY, FakeAcmeIssuer, START } from './manager.test-helpers.js';
import { managerHarness, unreachable } from './manager-harness.test-helpers.js';

// CertificateManager: background work (jobs.ts): one order across managers (lock), the order rate limit, close().

const { setup, tempStorage } = managerHarness();

describe('CertificateManager: background work', () => {
  it('two managers on one cert dir obtaining the same name place one order (lock, then storage re-read)', async () => {
    const { time, make } = setup();
    const { root } = await tempStorage();
    const ca = new FakeAcmeIssuer('ca1', time);
    // Two FileStorage instances on one root: as two processes sharing the cert dir.
    const first = make({ storage: new FileStorage(root), acmeIssuers: [ca] });
    const second = make({ storage: new FileStorage(root), acmeIssuers: [ca] });

    await Promise.all([
      first.setNames([{ name: 'a.example.com', issuer: 'acme' }]),
      second.setNames([{ name: 'a.example.com', issuer: 'acme' }]),
    ]);
    await Promise.all([first.whenIdle(), second.whenIdle()]);
    expect(ca.orders).toHaveLength(1);
    expect(first.contextFor('a.example.com')).not.toBeNull();
    expect(second.contextFor('a.example.com')).not.toBeNull();
    expect(first.orderCounts().valid + second.orderCounts().valid).toBe(1);
  });

  it('close() stops every timer: nothing runs afterwards', async () => {
    const { time, make, advance } = setup();
    const ca = new FakeAcmeIssuer('ca1', time);
    ca.outcome = unreachable;
    const manager = make({ storage: new MemoryStorage(), acmeIssuers: [ca] });
    await manager.setNames([{ name: 'a.example.com', issuer: 'acme' }]);
    await manager.whenIdle();
    expect(time.pending).toBeGreaterThan(0);
    manager.close();
    expect(time.pending).toBe(0);
    const orders = ca.orders.length;
    await advance(DAY);
    expect(ca.orders).toHaveLength(orders);
    await manager.setNames([{ name: 'b.example.com', issuer: 'acme' }]);
    expect(manager.status().map((s) => s.name)).toEqual(['a.example.com']);
  });
});

describe('CertificateManager: background work (order pacing)', () => {
  it('places at most 10 orders per 10 s per account', async () => {
    const { time, make, advance } = setup();
    const ca = new FakeAcmeIssuer('ca1', time);
    const other = new FakeAcmeIssuer('ca2', time);
    const names = Array.from({ length: 12 }, (_, i) => `n${i}.example.com`);
    const manager = make({ storage: new MemoryStorage(), acmeIssuers: [ca] });
    const second = make({ storage: new MemoryStorage(), acmeIssuers: [other] });
    await manager.setNames(names.map((name) => ({ name, issuer: 'acme' as const })));
    await second.setNames(names.slice(0, 3).map((name) => ({ name, issuer: 'acme' as const })));
    await manager.whenIdle();
    expect(ca.orders).toHaveLength(10);
    expect(other.orders).toHaveLength(3); // another account has its own budget
    const waiting = manager.status().filter((s) => s.notAfter === null);
    expect(waiting).toHaveLength(2);
    for (const summary of waiting)
      expect(summary).toMatchObject({ status: 'renewing', nextAttemptAt: START + 10_000, lastError: null });
    await advance(10_000);
    expect(ca.orders).toHaveLength(12);
    expect(manager.status().every((s) => s.status === 'valid')).toBe(true);
  });
});
