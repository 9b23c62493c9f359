import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { MemoryStorage } from '../local-ca/memory-storage.test-helpers.js';
import { DEFAULT_RENEWAL_SPREAD, lifetimeRenewalTimes } from '../schedule/renewal-window.js';
import type { FileStorage } from '../storage/file-storage.js';
import type { CertificateStorage, LockOptions, StorageLock, StoreOptions } from '../storage/storage.js';
import { DAY, FakeAcmeIssuer, MINUTE } from './manager.test-helpers.js';
import { managerHarness } from './manager-harness.test-helpers.js';
import { certificateKeys } from './stored-certificate.js';

// CertificateManager at many names (issue 30): storage reads and attempts a few at a time, locks taken
// only by running attempts, a handshake's name first, renewals spread over the window.

const { setup, tempStorage } = managerHarness();

/** A real file storage that counts its operations in flight and the locks held, and keeps the peaks. */
class CountingStorage implements CertificateStorage {
  inFlight = 0;
  peakInFlight = 0;
  locksHeld = 0;
  peakLocks = 0;
  lists = 0;
  constructor(readonly inner: FileStorage) {}
  async #count<T>(op: () => Promise<T>): Promise<T> {
    this.inFlight += 1;
    this.peakInFlight = Math.max(this.peakInFlight, this.inFlight);
    try {
      return await op();
    } finally {
      this.inFlight -= 1;
    }
  }
  load(key: string): Promise<Buffer | null> {
    return this.#count(() => this.inner.load(key));
  }
  store(key: string, value: Buffer | string, options?: StoreOptions): Promise<void> {
    return this.#count(() => this.inner.store(key, value, options));
  }
  delete(key: string): Promise<void> {
    return this.#count(() => this.inner.delete(key));
  }
  list(prefix: string): Promise<string[]> {
    this.lists += 1;
    return this.#count(() => this.inner.list(prefix));
  }
  async lock(name: string, options?: LockOptions): Promise<StorageLock> {
    const lock = await this.#count(() => this.inner.lock(name, options));
    this.locksHeld += 1;
    this.peakLocks = Math.max(this.peakLocks, this.locksHeld);
    let released = false;
    return {
      release: async () => {
        if (!released) this.locksHeld -= 1;
        released = true;
        await lock.release();
      },
    };
  }
}

/** Resolves once `done()` holds (checked every few ms; the test's timeout bounds it). */
async function until(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((resolve) => setTimeout(resolve, 5));
}

const names = (n: number, from = 0) =>
  Array.from({ length: n }, (_, i) => ({ name: `s${from + i}.example.com`, issuer: 'acme' as const }));

describe('CertificateManager: many names', () => {
  it('at 5,000 names reads storage and places orders a few at a time, a lock per running attempt only', async () => {
    const { time, make, advance } = setup();
    const { root, storage: files } = await tempStorage();
    const storage = new CountingStorage(files);
    const ca = new FakeAcmeIssuer('ca1', time);
    // 1,000 names have a certificate from an earlier run (written as the storage writes them, without an fsync each).
    const issued = await ca.obtain(['s0.example.com']);
    ca.orders.length = 0;
    for (const { name } of names(1000)) {
      const keys = certificateKeys('ca1', name);
      await mkdir(path.join(root, path.dirname(keys.cert)), { recursive: true, mode: 0o700 });
      await writeFile(path.join(root, keys.cert), issued.certificatePem, { mode: 0o600 });
      await writeFile(path.join(root, keys.key), issued.privateKeyPem, { mode: 0o600 });
    }
    let release = () => {};
    ca.gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const manager = make({ storage, acmeIssuers: [ca] });

    await manager.setNames(names(5000));
    // The stored ones are served; what storage holds came from one listing, not a read of each of the 4,000 others.
    expect(manager.has('s999.example.com')).toBe(true);
    expect(manager.has('s1000.example.com')).toBe(false);
    expect(storage.lists).toBe(1);
    await until(() => ca.orders.length >= 2);
    // Two orders at once (the ACME default), each holding its name's lock; the other 3,998 hold nothing.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(ca.orders).toHaveLength(2);
    expect(storage.locksHeld).toBe(2);
    // A few more names: read one by one, no listing.
    await manager.updateNames({ add: names(5, 5000), remove: ['s0.example.com'] });
    expect(storage.lists).toBe(1);
    expect(manager.has('s0.example.com')).toBe(false);
    release();
    ca.gate = undefined;
    // A minute of orders (10 per 10 s per account): the others wait for a slot holding no lock.
    await advance(MINUTE);
    expect(ca.orders.length).toBeGreaterThanOrEqual(60);
    expect(ca.orders.length).toBeLessThanOrEqual(80);
    expect(manager.status().filter((s) => s.status === 'valid').length).toBe(999 + ca.orders.length);
    expect(storage.peakLocks).toBe(2);
    // Eight names read at a time (three files each and the metadata) and two attempts: never a file per name at once.
    expect(storage.peakInFlight).toBeLessThanOrEqual(8 * 4 + 2 * 4);
  }, 120_000);

  it('issue 30: holds the names due beyond a few per place in a backlog, not as waiting tasks', async () => {
    const { time, make, advance } = setup();
    const ca = new FakeAcmeIssuer('ca1', time);
    let release = () => {};
    ca.gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const manager = make({ storage: new MemoryStorage(), acmeIssuers: [ca] });
    await manager.setNames(names(2000));
    await until(() => ca.orders.length >= 2);
    // Two running (the ACME default), six waiting (four per place in all), the other 1,992 a map entry each.
    expect(Object.values(manager.issuanceQueues())).toEqual([{ running: 2, waiting: 6, backlog: 1992, peak: 2 }]);
    // A handshake's name in the backlog goes to the front of the queue.
    expect(manager.contextFor('s1500.example.com')).toBeNull();
    release();
    ca.gate = undefined;
    await advance(MINUTE);
    expect(ca.orders.length).toBeGreaterThanOrEqual(10);
    expect(ca.orders.slice(0, 10).map((o) => o.names[0])).toContain('s1500.example.com');
  });

  it('issue 30: serves the backlog first in, first out, and names added after it emptied', async () => {
    const { time, make, advance } = setup();
    const ca = new FakeAcmeIssuer('ca1', time);
    const manager = make({ storage: new MemoryStorage(), acmeIssuers: [ca], concurrency: { acme: 1 } });
    // One place, four in its queue: 26 of the 30 wait in the backlog, which is read from one live cursor.
    // (The CA takes 10 orders per 10 s: a minute covers them.)
    await manager.setNames(names(30));
    await advance(MINUTE);
    expect(ca.orders.map((o) => o.names[0])).toEqual(names(30).map((n) => n.name));
    await manager.updateNames({ add: names(12, 100), remove: [] });
    await advance(MINUTE);
    expect(ca.orders.map((o) => o.names[0]).slice(30)).toEqual(names(12, 100).map((n) => n.name));
    expect(manager.issuanceQueues()).toEqual({ ca1: { running: 0, waiting: 0, backlog: 0, peak: 1 } });
  });

  it('takes the storage lock only when an attempt starts, with the local CA sixteen at a time', async () => {
    const { make, settle } = setup();
    const { storage: files } = await tempStorage();
    const storage = new CountingStorage(files);
    const { LocalCa } = await import('../local-ca/local-ca.js');
    const localCa = await LocalCa.open(new MemoryStorage());
    const manager = make({ storage, localCa, now: Date.now });
    await manager.setNames(names(60).map(({ name }) => ({ name: name.replace('.com', '.test'), issuer: 'internal' })));
    await settle();
    expect(manager.status().filter((s) => s.status === 'valid')).toHaveLength(60);
    expect(storage.peakLocks).toBeLessThanOrEqual(16);
  });

  it('moves a name a handshake asks for to the front of its issuer queue', async () => {
    const { time, make, settle } = setup();
    const ca = new FakeAcmeIssuer('ca1', time);
    let release = () => {};
    ca.gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const manager = make({ storage: new MemoryStorage(), acmeIssuers: [ca], concurrency: { acme: 1 } });
    await manager.setNames(names(50));
    await until(() => ca.orders.length >= 1);
    expect(ca.orders.map((o) => o.names[0])).toEqual(['s0.example.com']);

    expect(manager.contextFor('s40.example.com')).toBeNull();
    release();
    ca.gate = undefined;
    await settle();
    expect(ca.orders.map((o) => o.names[0]).slice(0, 3)).toEqual([
      's0.example.com',
      's40.example.com',
      's1.example.com',
    ]);
    expect(manager.contextFor('s40.example.com')).not.toBeNull();
  });

  it('spreads the renewals of certificates issued together between 1/3 and 1/4 of their lifetime left', async () => {
    const { time, make, advance } = setup();
    const ca = new FakeAcmeIssuer('ca1', time);
    const manager = make({ storage: new MemoryStorage(), acmeIssuers: [ca], renewalSpread: DEFAULT_RENEWAL_SPREAD });
    await manager.setNames(names(100));
    await advance(2 * MINUTE); // 100 orders at 10 per 10 s
    const status = manager.status();
    expect(status.filter((s) => s.status === 'valid')).toHaveLength(100);
    const lifetime = 90 * DAY + 5 * MINUTE;
    // Each renews at its own time between 1/3 and 1/4 of its lifetime left.
    const offsets = status.map((s) => {
      const notAfter = s.notAfter as number;
      return (s.nextAttemptAt as number) - lifetimeRenewalTimes({ notBefore: notAfter - lifetime, notAfter }).renewAt;
    });
    expect(Math.min(...offsets)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...offsets)).toBeLessThanOrEqual(lifetime / 12);
    expect(Math.max(...offsets) - Math.min(...offsets)).toBeGreaterThan(lifetime / 24);
    const times = status.map((s) => s.nextAttemptAt as number);

    // A day past the earliest, only those due have been renewed.
    ca.orders.length = 0;
    await advance(Math.min(...times) - time.now + DAY);
    const due = times.filter((t) => t <= time.now).length;
    expect(ca.orders.length).toBe(due);
    expect(due).toBeLessThan(50);
  });
});
