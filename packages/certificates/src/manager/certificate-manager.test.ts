import { createPrivateKey, X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CertificatesErrorCode } from '../errors.js';
import { LocalCa } from '../local-ca/local-ca.js';
import { MemoryStorage } from '../local-ca/memory-storage.test-helpers.js';
import { ariCertId, selectAriRenewalTime } from '../schedule/ari.js';
import { lifetimeRenewalTimes } from '../schedule/renewal-window.js';
import { FileStorage } from '../storage/file-storage.js';
import type { CertificateStorage } from '../storage/storage.js';
import { type CertificateChange, CertificateManager, type CertificateManagerOptions } from './certificate-manager.js';
import { acmeError, DAY, FakeAcmeIssuer, FakeTime, HOUR, MemoryLogger, MINUTE, START } from './manager.test-helpers.js';
import { certificateKeys, loadMetadata, storeCertificate } from './stored-certificate.js';

const managers: CertificateManager[] = [];
const tempDirs: string[] = [];

afterEach(async () => {
  for (const manager of managers.splice(0)) {
    manager.close();
    await manager.whenIdle();
  }
  for (const dir of tempDirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function tempStorage(): Promise<{ root: string; storage: FileStorage }> {
  const root = await mkdtemp(path.join(tmpdir(), 'proxyd-manager-'));
  tempDirs.push(root);
  return { root, storage: new FileStorage(root) };
}

/** A fake clock and scheduler, a log, and managers on them that the test cleans up. */
function setup() {
  const time = new FakeTime();
  const log = new MemoryLogger();
  const changes: CertificateChange[] = [];
  const created: CertificateManager[] = [];
  const make = (options: Partial<CertificateManagerOptions> & { storage: CertificateStorage }) => {
    const manager = new CertificateManager({
      now: time.clock,
      scheduler: time,
      logger: log,
      random: () => 0,
      ...options,
    });
    manager.onChange((change) => changes.push(change));
    managers.push(manager);
    created.push(manager);
    return manager;
  };
  const settle = () => Promise.all(created.map((m) => m.whenIdle()));
  const advance = (ms: number) => time.advance(ms, settle);
  return { time, log, changes, make, settle, advance };
}

/** Stores a certificate of `issuer` for `name` as an earlier run would have, and forgets the order. */
async function storeIssued(storage: CertificateStorage, issuer: FakeAcmeIssuer, name: string) {
  const issued = await issuer.obtain([name]);
  issuer.orders.length = 0;
  const ca = issuer.accountFolder.split('/')[1] as string;
  await storeCertificate(
    storage,
    ca,
    { certPem: issued.certificatePem, keyPem: issued.privateKeyPem },
    {
      name,
      issuer: issuer.directoryUrl,
      notBefore: issued.notBefore,
      notAfter: issued.notAfter,
      ari: null,
      lastError: null,
      nextAttemptAt: null,
      backoff: null,
      validationFailures: [],
    },
  );
  return issued;
}

const unreachable = () =>
  acmeError(CertificatesErrorCode.ACME_UNREACHABLE, 'ACME CA unreachable: connect ECONNREFUSED 127.0.0.1:14000');
const validationFailed = (name: string) =>
  acmeError(CertificatesErrorCode.ACME_VALIDATION_FAILED, `ACME CA could not validate ${name}`, {
    type: 'urn:ietf:params:acme:error:unauthorized',
  });

describe('CertificateManager: loading and obtaining', () => {
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

  it('obtains a missing certificate in the background: setNames resolves before the order completes', async () => {
    const { time, make, changes } = setup();
    const storage = new MemoryStorage();
    const ca = new FakeAcmeIssuer('ca1', time);
    let release = () => {};
    ca.gate = new Promise((resolve) => {
      release = resolve;
    });
    const manager = make({ storage, acmeIssuers: [ca] });

    try {
      await manager.setNames([{ name: 'a.example.com', issuer: 'acme' }]);
      expect(manager.contextFor('a.example.com')).toBeNull();
      expect(manager.has('a.example.com')).toBe(false);
      expect(manager.status()[0]).toMatchObject({
        status: 'renewing',
        issuer: null,
        notAfter: null,
        nextAttemptAt: START,
      });
      await vi.waitFor(() => expect(ca.orders).toHaveLength(1));
      expect(manager.contextFor('a.example.com')).toBeNull();
    } finally {
      release();
    }
    await manager.whenIdle();
    expect(manager.contextFor('a.example.com')).not.toBeNull();
    expect(changes).toMatchObject([{ name: 'a.example.com', replaced: false, issuer: ca.directoryUrl }]);
    expect(manager.status()[0]?.status).toBe('valid');
    expect(manager.orderCounts()).toEqual({ valid: 1, invalid: 0, error: 0 });
    // Stored: key (secret), chain and metadata.
    const keys = certificateKeys('ca1', 'a.example.com');
    expect(storage.secrets.has(keys.key)).toBe(true);
    expect(await storage.load(keys.cert)).not.toBeNull();
    expect((await loadMetadata(storage, 'ca1', 'a.example.com'))?.issuer).toBe(ca.directoryUrl);
  });

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

  it('issues internal names (and wildcards) from the local CA', async () => {
    const { time, make } = setup();
    const storage = new MemoryStorage();
    const localCa = await LocalCa.open(storage, { now: time.clock });
    const manager = make({ storage, localCa });

    await manager.setNames([
      { name: 'app.localhost', issuer: 'internal' },
      { name: '*.apps.internal', issuer: 'internal' },
    ]);
    await manager.whenIdle();
    expect(manager.contextFor('app.localhost')).not.toBeNull();
    expect(manager.contextFor('x.apps.internal')).not.toBeNull();
    expect(manager.contextFor('a.b.apps.internal')).toBeNull();
    const pem = (await storage.load(certificateKeys('local', 'app.localhost').cert))?.toString() as string;
    const leaf = new X509Certificate(pem);
    expect(leaf.subjectAltName).toContain('DNS:app.localhost');
    expect(leaf.verify(new X509Certificate(localCa.intermediatePem).publicKey)).toBe(true);
    expect(manager.status().map((s) => [s.name, s.issuer, s.status])).toEqual([
      ['*.apps.internal', 'local', 'valid'],
      ['app.localhost', 'local', 'valid'],
    ]);
    expect(manager.orderCounts()).toEqual({ valid: 0, invalid: 0, error: 0 });
    // What a worker process loads: each served name's PEM pair, the one in storage.
    const served = manager.served();
    expect(served.map((c) => c.name)).toEqual(['*.apps.internal', 'app.localhost']);
    expect(served[1]?.cert).toBe(pem);
    expect(
      new X509Certificate(served[1]?.cert as string).checkPrivateKey(createPrivateKey(served[1]?.key as string)),
    ).toBe(true);
    expect(served[1]?.notAfter).toBe(new Date(leaf.validTo).getTime());
    // One name's, as a handshake asks it: exact, else the wildcard.
    expect(manager.servedFor('App.localhost')).toEqual(served[1]);
    expect(manager.servedFor('x.apps.internal')).toEqual(served[0]);
    expect(manager.servedFor('nope.localhost')).toBeNull();
    await manager.setNames([{ name: 'app.localhost', issuer: 'internal' }]);
    expect(manager.served().map((c) => c.name)).toEqual(['app.localhost']);
  });

  it('opens the local CA lazily from a function, and says when no issuer is configured', async () => {
    const { time, make } = setup();
    const storage = new MemoryStorage();
    let opened = 0;
    const manager = make({
      storage,
      localCa: () => {
        opened += 1;
        return LocalCa.open(storage, { now: time.clock });
      },
    });
    await manager.setNames([
      { name: 'a.localhost', issuer: 'internal' },
      { name: 'b.localhost', issuer: 'internal' },
      { name: 'a.example.com', issuer: 'acme' },
    ]);
    await manager.whenIdle();
    expect(opened).toBe(1);
    expect(manager.has('a.localhost') && manager.has('b.localhost')).toBe(true);
    expect(manager.status().find((s) => s.name === 'a.example.com')).toMatchObject({
      status: 'failing',
      lastError: 'no ACME CA is configured for a.example.com',
    });
  });

  it('an ACME wildcard gets CERT_ACME_WILDCARD_UNSUPPORTED and no order', async () => {
    const { time, make, log, advance } = setup();
    const ca = new FakeAcmeIssuer('ca1', time);
    const manager = make({ storage: new MemoryStorage(), acmeIssuers: [ca] });
    await manager.setNames([{ name: '*.example.com', issuer: 'acme' }]);
    await advance(DAY);
    expect(ca.orders).toHaveLength(0);
    expect(manager.status()).toEqual([
      {
        name: '*.example.com',
        issuer: null,
        notAfter: null,
        status: 'failing',
        lastError: expect.stringContaining('needs the DNS-01 challenge: configure a DNS provider'),
        nextAttemptAt: null,
        challenge: null,
        dnsStep: null,
      },
    ]);
    expect(log.lines.filter((l) => l.obj.code === CertificatesErrorCode.ACME_WILDCARD_UNSUPPORTED)).toHaveLength(1);
  });

  it('issue 33: a name with a DNS-01 solver orders with dns-01 only; a wildcard given one later is ordered then', async () => {
    const { time, make, advance } = setup();
    const ca = new FakeAcmeIssuer('ca1', time);
    const manager = make({ storage: new MemoryStorage(), acmeIssuers: [ca] });
    const dns = { present() {}, cleanUp() {} };
    await manager.setNames([
      { name: '*.example.com', issuer: 'acme' },
      { name: 'www.example.com', issuer: 'acme', dns },
    ]);
    await advance(MINUTE);
    expect(ca.orders.map((o) => [o.names[0], o.challenge, o.dnsSolver === dns])).toEqual([
      ['www.example.com', 'dns-01', true],
    ]);
    expect(manager.status().map((r) => [r.name, r.status, r.challenge])).toEqual([
      ['*.example.com', 'failing', null],
      ['www.example.com', 'valid', 'dns-01'],
    ]);
    await manager.setNames([
      { name: '*.example.com', issuer: 'acme', dns },
      { name: 'www.example.com', issuer: 'acme', dns },
    ]);
    await advance(MINUTE);
    expect(ca.orders.map((o) => [o.names[0], o.challenge])).toEqual([
      ['www.example.com', 'dns-01'],
      ['*.example.com', 'dns-01'],
    ]);
    expect(manager.status()[0]).toMatchObject({ name: '*.example.com', status: 'valid', challenge: 'dns-01' });
    expect(manager.has('a.example.com')).toBe(true);
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

describe('CertificateManager: renewal', () => {
  it('renews at 1/3 of the lifetime left, replacing the served context in place (replaced=true)', async () => {
    const { time, make, changes, advance } = setup();
    const ca = new FakeAcmeIssuer('ca1', time);
    const manager = make({ storage: new MemoryStorage(), acmeIssuers: [ca] });
    await manager.setNames([{ name: 'a.example.com', issuer: 'acme' }]);
    await manager.whenIdle();
    const first = manager.contextFor('a.example.com');
    const issued = manager.status()[0];
    expect(issued?.status).toBe('valid');
    const dueAt = issued?.nextAttemptAt as number;
    // 90-day certificate (plus the 5-minute backdate): due 30 days before notAfter.
    expect((issued?.notAfter as number) - dueAt).toBe(Math.floor((90 * DAY + 5 * MINUTE) / 3));

    await advance(dueAt - time.now - 1);
    expect(ca.orders).toHaveLength(1);
    expect(manager.contextFor('a.example.com')).toBe(first);

    await advance(10 * MINUTE); // the next check after dueAt
    expect(ca.orders).toHaveLength(2);
    const second = manager.contextFor('a.example.com');
    expect(second).not.toBeNull();
    expect(second).not.toBe(first);
    expect(changes.map((c) => c.replaced)).toEqual([false, true]);
    expect(manager.status()[0]).toMatchObject({
      status: 'valid',
      notAfter: (changes[1] as CertificateChange).notAfter,
    });
  });

  it('renews a certificate shorter-lived than the check interval on time, not at the next 10-minute check', async () => {
    const { time, make, advance } = setup();
    const ca = new FakeAcmeIssuer('ca1', time);
    // 30 min (plus the 5-minute backdate): due about 18 min in, between two 10-minute checks.
    ca.lifetimeMs = 30 * MINUTE;
    const manager = make({ storage: new MemoryStorage(), acmeIssuers: [ca] });
    await manager.setNames([{ name: 'short.example.com', issuer: 'acme' }]);
    await manager.whenIdle();
    const issued = manager.status()[0];
    const dueAt = issued?.nextAttemptAt as number;
    expect((dueAt - time.now) % (10 * MINUTE)).not.toBe(0);

    await advance(dueAt - time.now - 1);
    expect(ca.orders).toHaveLength(1);
    await advance(1);
    expect(ca.orders).toHaveLength(2);
    // Still served without a gap: the renewed one replaced it before the first expired.
    expect(manager.status()[0]?.notAfter).toBeGreaterThan(issued?.notAfter as number);
  });

  it('a renewal that fails keeps the served certificate and backs off; a later success replaces it', async () => {
    const { time, make, advance } = setup();
    const ca = new FakeAcmeIssuer('ca1', time);
    const manager = make({ storage: new MemoryStorage(), acmeIssuers: [ca] });
    await manager.setNames([{ name: 'a.example.com', issuer: 'acme' }]);
    await manager.whenIdle();
    const served = manager.contextFor('a.example.com');
    const dueAt = manager.status()[0]?.nextAttemptAt as number;
    ca.outcome = unreachable;
    await advance(dueAt - time.now + 10 * MINUTE);
    expect(manager.contextFor('a.example.com')).toBe(served);
    expect(manager.status()[0]).toMatchObject({
      status: 'failing',
      lastError: expect.stringContaining('ECONNREFUSED'),
    });
    ca.outcome = () => undefined;
    await advance(HOUR);
    expect(manager.contextFor('a.example.com')).not.toBe(served);
    expect(manager.status()[0]).toMatchObject({ status: 'valid', lastError: null });
  });

  it('a renewed certificate another process stored is picked up, with no order', async () => {
    const { time, make, advance } = setup();
    const storage = new MemoryStorage();
    const ca = new FakeAcmeIssuer('ca1', time);
    await storeIssued(storage, ca, 'a.example.com');
    const manager = make({ storage, acmeIssuers: [ca] });
    await manager.setNames([{ name: 'a.example.com', issuer: 'acme' }]);
    const dueAt = manager.status()[0]?.nextAttemptAt as number;
    await advance(dueAt - time.now - HOUR);
    const renewed = await storeIssued(storage, ca, 'a.example.com'); // "another process"
    await advance(2 * HOUR);
    expect(ca.orders).toHaveLength(0);
    expect(manager.status()[0]?.notAfter).toBe(renewed.notAfter);
  });
});

describe('CertificateManager: failures', () => {
  it('backs off per name: 1 min doubling to 6 h, then gives up after 30 days and says so', async () => {
    const { time, make, log, advance } = setup();
    const ca = new FakeAcmeIssuer('ca1', time);
    ca.outcome = unreachable;
    const manager = make({ storage: new MemoryStorage(), acmeIssuers: [ca], random: () => 0 });
    await manager.setNames([{ name: 'a.example.com', issuer: 'acme' }]);
    await manager.whenIdle();
    expect(manager.status()[0]).toMatchObject({
      status: 'failing',
      lastError: 'ACME CA unreachable: connect ECONNREFUSED 127.0.0.1:14000',
      nextAttemptAt: START + MINUTE,
    });
    expect(log.lines.at(-1)).toMatchObject({
      level: 'warn',
      msg: `obtaining certificate for a.example.com failed: ACME CA unreachable: connect ECONNREFUSED 127.0.0.1:14000; next attempt at ${new Date(START + MINUTE).toISOString()}`,
    });

    await advance(31 * DAY);
    const gaps = ca.orders.slice(1).map((o, i) => o.at - (ca.orders[i] as { at: number }).at);
    expect(gaps.slice(0, 10)).toEqual([1, 2, 4, 8, 16, 32, 64, 128, 256, 360].map((m) => m * MINUTE));
    expect(new Set(gaps.slice(9, -1))).toEqual(new Set([6 * HOUR]));
    const last = ca.orders.at(-1)?.at as number;
    expect(last - START).toBeGreaterThanOrEqual(30 * DAY);
    expect(last - START).toBeLessThan(30 * DAY + 6 * HOUR);
    expect(manager.status()[0]).toMatchObject({ status: 'gave-up', nextAttemptAt: null });
    expect(log.lines.filter((l) => l.msg.includes('gave up after 30 days'))).toHaveLength(1);
    expect(log.lines.at(-1)?.level).toBe('error');

    const orders = ca.orders.length;
    await advance(10 * DAY);
    expect(ca.orders).toHaveLength(orders);
  });

  it('jitter shortens each delay by at most 20 %', async () => {
    const { time, make, advance } = setup();
    const ca = new FakeAcmeIssuer('ca1', time);
    ca.outcome = unreachable;
    let i = 0;
    const randoms = [0.999, 0.5, 0, 0.25];
    const manager = make({
      storage: new MemoryStorage(),
      acmeIssuers: [ca],
      random: () => randoms[i++ % randoms.length] as number,
    });
    await manager.setNames([{ name: 'a.example.com', issuer: 'acme' }]);
    await advance(2 * DAY);
    const gaps = ca.orders.slice(1).map((o, k) => o.at - (ca.orders[k] as { at: number }).at);
    for (const [k, gap] of gaps.entries()) {
      const base = Math.min(6 * HOUR, MINUTE * 2 ** k);
      expect(gap).toBeLessThanOrEqual(base);
      expect(gap).toBeGreaterThanOrEqual(Math.ceil(base * 0.8) - 1);
    }
    expect(gaps[0]).toBe(MINUTE - Math.floor(MINUTE * 0.2 * 0.999));
  });

  it("honours the CA's Retry-After, capped at 6 h", async () => {
    const { time, make, advance } = setup();
    const ca = new FakeAcmeIssuer('ca1', time);
    const retryAfters = [2 * HOUR, 7 * DAY];
    ca.outcome = () =>
      acmeError(CertificatesErrorCode.ACME_PROBLEM, 'rate limited', {
        type: 'urn:ietf:params:acme:error:rateLimited',
        retryAfterMs: retryAfters.shift() ?? 0,
      });
    const manager = make({ storage: new MemoryStorage(), acmeIssuers: [ca] });
    await manager.setNames([{ name: 'a.example.com', issuer: 'acme' }]);
    await manager.whenIdle();
    expect(manager.status()[0]?.nextAttemptAt).toBe(START + 2 * HOUR);
    await advance(2 * HOUR);
    expect(ca.orders).toHaveLength(2);
    expect(manager.status()[0]?.nextAttemptAt).toBe(START + 2 * HOUR + 6 * HOUR);
    expect(manager.orderCounts()).toEqual({ valid: 0, invalid: 2, error: 0 });
  });

  it('holds a name after 5 failed validations in an hour', async () => {
    const { time, make, advance } = setup();
    const ca = new FakeAcmeIssuer('ca1', time);
    ca.outcome = (order) => validationFailed(order.names[0] as string);
    const manager = make({ storage: new MemoryStorage(), acmeIssuers: [ca], challenges: ['http-01'] });
    await manager.setNames([{ name: 'a.example.com', issuer: 'acme' }]);
    await advance(20 * MINUTE); // attempts at +0, +1, +3, +7, +15 min
    expect(ca.orders.map((o) => (o.at - START) / MINUTE)).toEqual([0, 1, 3, 7, 15]);
    expect(manager.status()[0]).toMatchObject({ status: 'failing', nextAttemptAt: START + HOUR });
    await advance(HOUR - 20 * MINUTE - 1);
    expect(ca.orders).toHaveLength(5);
    await advance(1);
    expect(ca.orders).toHaveLength(6);
  });

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

  it('one failing name affects neither another name nor the served certificate', async () => {
    const { time, make, advance } = setup();
    const ca = new FakeAcmeIssuer('ca1', time);
    ca.outcome = (order) => (order.names[0] === 'bad.example.com' ? validationFailed('bad.example.com') : undefined);
    const manager = make({ storage: new MemoryStorage(), acmeIssuers: [ca] });
    await manager.setNames([
      { name: 'bad.example.com', issuer: 'acme' },
      { name: 'good.example.com', issuer: 'acme' },
    ]);
    await advance(HOUR);
    const [bad, good] = manager.status();
    expect(bad).toMatchObject({ name: 'bad.example.com', status: 'failing' });
    expect(good).toMatchObject({ name: 'good.example.com', status: 'valid', lastError: null });
    expect(ca.orders.filter((o) => o.names[0] === 'good.example.com')).toHaveLength(1);
    expect(manager.has('good.example.com')).toBe(true);
  });

  it('never overwrites a stored certificate that does not parse: logged once, left as it is, no order', async () => {
    const { time, make, log, advance } = setup();
    const { root, storage } = await tempStorage();
    const ca = new FakeAcmeIssuer('ca1', time);
    const keys = certificateKeys('ca1', 'a.example.com');
    await storage.store(keys.cert, 'not a certificate\n');
    const manager = make({ storage, acmeIssuers: [ca] });
    await manager.setNames([{ name: 'a.example.com', issuer: 'acme' }]);
    await advance(DAY);
    expect(ca.orders).toHaveLength(0);
    expect(await readFile(path.join(root, keys.cert), 'utf8')).toBe('not a certificate\n');
    expect(manager.status()[0]).toMatchObject({
      status: 'failing',
      lastError: expect.stringContaining(`${keys.cert} does not parse`),
    });
    // The file is reported once; each failed attempt says when the next one is.
    const reported = log.matching('stored certificate files of a.example.com are not usable');
    expect(reported).toHaveLength(1);
    expect(reported[0]).toMatchObject({
      level: 'error',
      obj: { code: CertificatesErrorCode.STORED_CERTIFICATE_INVALID },
    });
    expect(reported[0]?.msg).toContain('left as it is');
    expect(
      log.matching('obtaining certificate for a.example.com failed').every((l) => l.msg.includes('next attempt at')),
    ).toBe(true);

    // Removed by the operator: the next attempt obtains one.
    await storage.delete(keys.cert);
    await advance(7 * HOUR);
    expect(ca.orders).toHaveLength(1);
    expect(manager.status()[0]?.status).toBe('valid');
  });

  it('falls back to the next ACME CA when the first fails', async () => {
    const { time, make } = setup();
    const first = new FakeAcmeIssuer('ca1', time);
    const second = new FakeAcmeIssuer('ca2', time);
    first.outcome = unreachable;
    const manager = make({ storage: new MemoryStorage(), acmeIssuers: [first, second] });
    await manager.setNames([{ name: 'a.example.com', issuer: 'acme' }]);
    await manager.whenIdle();
    // Unreachable is not a challenge failure: the first CA gets one order, not one per challenge type.
    expect(first.orders).toHaveLength(1);
    expect(second.orders).toHaveLength(1);
    expect(manager.status()[0]).toMatchObject({ status: 'valid', issuer: second.directoryUrl });
    expect(manager.orderCounts()).toEqual({ valid: 1, invalid: 0, error: 1 });
  });

  it('when every CA fails, the error names each', async () => {
    const { time, make } = setup();
    const first = new FakeAcmeIssuer('ca1', time);
    const second = new FakeAcmeIssuer('ca2', time);
    first.outcome = unreachable;
    second.outcome = unreachable;
    const manager = make({ storage: new MemoryStorage(), acmeIssuers: [first, second] });
    await manager.setNames([{ name: 'a.example.com', issuer: 'acme' }]);
    await manager.whenIdle();
    expect(manager.status()[0]?.lastError).toBe(
      'ca1 (http-01): ACME CA unreachable: connect ECONNREFUSED 127.0.0.1:14000; ca2 (http-01): ACME CA unreachable: connect ECONNREFUSED 127.0.0.1:14000',
    );
  });

  it('restores the failure run from storage after a restart instead of retrying at once', async () => {
    const { time, make, advance } = setup();
    const storage = new MemoryStorage();
    const ca = new FakeAcmeIssuer('ca1', time);
    ca.outcome = unreachable;
    const before = make({ storage, acmeIssuers: [ca] });
    await before.setNames([{ name: 'a.example.com', issuer: 'acme' }]);
    await advance(4 * MINUTE); // attempts at 0, 1, 3 min; next at 7 min
    before.close();
    expect(ca.orders).toHaveLength(3);
    const after = make({ storage, acmeIssuers: [ca] });
    await after.setNames([{ name: 'a.example.com', issuer: 'acme' }]);
    await after.whenIdle();
    expect(ca.orders).toHaveLength(3);
    expect(after.status()[0]).toMatchObject({ status: 'failing', nextAttemptAt: START + 7 * MINUTE });
  });
});

describe('CertificateManager: challenge types', () => {
  it('tries the other type in the same attempt when one fails, and prefers the one that worked', async () => {
    const { time, make } = setup();
    const ca = new FakeAcmeIssuer('ca1', time);
    ca.outcome = (order) => (order.challenge === 'http-01' ? validationFailed(order.names[0] as string) : undefined);
    const manager = make({ storage: new MemoryStorage(), acmeIssuers: [ca] });
    await manager.setNames([{ name: 'a.example.com', issuer: 'acme' }]);
    await manager.whenIdle();
    expect(ca.orders.map((o) => o.challenge)).toEqual(['http-01', 'tls-alpn-01']);
    expect(manager.status()[0]?.status).toBe('valid');
    expect(manager.orderCounts()).toEqual({ valid: 1, invalid: 1, error: 0 });

    await manager.setNames([
      { name: 'a.example.com', issuer: 'acme' },
      { name: 'b.example.com', issuer: 'acme' },
    ]);
    await manager.whenIdle();
    expect(ca.orders.map((o) => o.challenge)).toEqual(['http-01', 'tls-alpn-01', 'tls-alpn-01']);
  });

  it('uses only the configured types (e.g. HTTP-01 without an HTTPS listener)', async () => {
    const { time, make } = setup();
    const ca = new FakeAcmeIssuer('ca1', time);
    ca.outcome = (order) => validationFailed(order.names[0] as string);
    const manager = make({ storage: new MemoryStorage(), acmeIssuers: [ca], challenges: ['http-01'] });
    await manager.setNames([{ name: 'a.example.com', issuer: 'acme' }]);
    await manager.whenIdle();
    expect(ca.orders.map((o) => o.challenge)).toEqual(['http-01']);
  });
});

describe('CertificateManager: ACME Renewal Information', () => {
  /** The first certificate's window: day 40 to 42 after START (earlier than the 1/3 rule at day 60). */
  const window = { start: START + 40 * DAY, end: START + 42 * DAY };
  /** Each certificate's window: day 40 to 42 of its life, as a CA would say. */
  const answer = (certPem: string) => {
    const born = Date.parse(new X509Certificate(certPem).validFrom) + 5 * MINUTE;
    return {
      certId: ariCertId(certPem),
      info: { window: { start: born + 40 * DAY, end: born + 42 * DAY }, explanationUrl: null },
      retryAfter: '21600',
    };
  };

  it('renews at the time chosen in the window, keeps it in the metadata, and sends replaces', async () => {
    const { time, make, advance, log } = setup();
    const storage = new MemoryStorage();
    const ca = new FakeAcmeIssuer('ca1', time);
    ca.renewalInfoAnswer = answer;
    const manager = make({ storage, acmeIssuers: [ca] });
    await manager.setNames([{ name: 'a.example.com', issuer: 'acme' }]);
    await manager.whenIdle();
    expect(ca.renewalInfoCalls).toEqual([START]);
    const certPem = (await storage.load(certificateKeys('ca1', 'a.example.com').cert))?.toString() as string;
    const certId = ariCertId(certPem);
    const selectedAt = selectAriRenewalTime(window, certId);
    const meta = await loadMetadata(storage, 'ca1', 'a.example.com');
    expect(meta?.ari).toEqual({ certId, window, selectedAt, nextPollAt: START + 6 * HOUR, explanationUrl: null });
    expect(manager.status()[0]?.nextAttemptAt).toBe(selectedAt);
    expect(log.matching('the CA suggests renewing a.example.com')).toHaveLength(1);

    // Polled again per Retry-After (6 h), the unchanged window logs nothing new.
    await advance(7 * HOUR);
    expect(ca.renewalInfoCalls).toEqual([START, START + 6 * HOUR]);
    expect(log.matching('the CA suggests renewing')).toHaveLength(1);

    await advance(selectedAt - time.now - 10 * MINUTE - 1);
    expect(ca.orders).toHaveLength(1);
    await advance(20 * MINUTE);
    expect(ca.orders).toHaveLength(2);
    expect(ca.orders[1]?.replaces).toBe(certId);
    await manager.whenIdle();
    expect(manager.status()[0]?.nextAttemptAt).toBeGreaterThan(time.now + 39 * DAY);
  });

  it('ignores a window that opened before the certificate began (no renewal loop)', async () => {
    const { time, make, advance, log } = setup();
    const ca = new FakeAcmeIssuer('ca1', time);
    ca.renewalInfoAnswer = (certPem) => ({
      certId: ariCertId(certPem),
      info: { window: { start: START - DAY, end: START + DAY }, explanationUrl: null },
      retryAfter: null,
    });
    const manager = make({ storage: new MemoryStorage(), acmeIssuers: [ca] });
    await manager.setNames([{ name: 'a.example.com', issuer: 'acme' }]);
    await advance(HOUR);
    expect(ca.orders).toHaveLength(1);
    expect(log.matching('ignoring the CA')).toHaveLength(1);
  });

  it('keeps the chosen time across restarts while the window is unchanged, and re-picks when it moves', async () => {
    const { time, make } = setup();
    const storage = new MemoryStorage();
    const ca = new FakeAcmeIssuer('ca1', time);
    ca.renewalInfoAnswer = answer;
    const first = make({ storage, acmeIssuers: [ca] });
    await first.setNames([{ name: 'a.example.com', issuer: 'acme' }]);
    await first.whenIdle();
    first.close();
    // Make the stored choice recognisable: a restart must use it, not pick again.
    const meta = (await loadMetadata(storage, 'ca1', 'a.example.com')) as NonNullable<
      Awaited<ReturnType<typeof loadMetadata>>
    >;
    const stored = window.start + 1234;
    await storage.store(
      certificateKeys('ca1', 'a.example.com').meta,
      JSON.stringify({ ...meta, ari: { ...meta.ari, selectedAt: stored, nextPollAt: START - 1 } }),
    );
    const second = make({ storage, acmeIssuers: [ca] });
    await second.setNames([{ name: 'a.example.com', issuer: 'acme' }]);
    await second.whenIdle();
    expect(ca.renewalInfoCalls).toHaveLength(2); // polled again at start (nextPollAt was due)
    expect(second.status()[0]?.nextAttemptAt).toBe(stored);
    second.close();

    const moved = { start: START + 50 * DAY, end: START + 51 * DAY };
    ca.renewalInfoAnswer = (certPem) => ({
      certId: ariCertId(certPem),
      info: { window: moved, explanationUrl: 'https://ca.test/why' },
      retryAfter: null,
    });
    await storage.store(
      certificateKeys('ca1', 'a.example.com').meta,
      JSON.stringify({ ...meta, ari: { ...meta.ari, selectedAt: stored, nextPollAt: START - 1 } }),
    );
    const third = make({ storage, acmeIssuers: [ca] });
    await third.setNames([{ name: 'a.example.com', issuer: 'acme' }]);
    await third.whenIdle();
    const certId = meta.ari?.certId as string;
    expect(third.status()[0]?.nextAttemptAt).toBe(selectAriRenewalTime(moved, certId));
    expect((await loadMetadata(storage, 'ca1', 'a.example.com'))?.ari).toMatchObject({
      window: moved,
      explanationUrl: 'https://ca.test/why',
      nextPollAt: time.now + 6 * HOUR,
    });
  });

  it('renews at 1/20 of the lifetime left whatever the window says', async () => {
    const { time, make, advance } = setup();
    const ca = new FakeAcmeIssuer('ca1', time);
    const late = { start: START + 200 * DAY, end: START + 201 * DAY };
    ca.renewalInfoAnswer = (certPem) => ({
      certId: ariCertId(certPem),
      info: { window: late, explanationUrl: null },
      retryAfter: '86400',
    });
    const manager = make({ storage: new MemoryStorage(), acmeIssuers: [ca] });
    await manager.setNames([{ name: 'a.example.com', issuer: 'acme' }]);
    await manager.whenIdle();
    const notAfter = manager.status()[0]?.notAfter as number;
    const { forceAt, renewAt } = lifetimeRenewalTimes({ notBefore: START - 5 * MINUTE, notAfter });
    expect(manager.status()[0]?.nextAttemptAt).toBe(forceAt);
    await advance(renewAt - time.now + HOUR); // past the 1/3 rule: ARI says later
    expect(ca.orders).toHaveLength(1);
    await advance(forceAt - time.now + 10 * MINUTE);
    expect(ca.orders).toHaveLength(2);
  });

  it('falls back to the lifetime rule without renewalInfo, and asks again an hour after a failed request', async () => {
    const { time, make, advance } = setup();
    const ca = new FakeAcmeIssuer('ca1', time);
    ca.renewalInfoAnswer = () => null; // the directory has no renewalInfo
    const manager = make({ storage: new MemoryStorage(), acmeIssuers: [ca] });
    await manager.setNames([{ name: 'a.example.com', issuer: 'acme' }]);
    await advance(DAY);
    expect(ca.renewalInfoCalls).toHaveLength(1);

    const failing = new FakeAcmeIssuer('ca2', time);
    failing.renewalInfoAnswer = () => new Error('connect ECONNREFUSED');
    const other = make({ storage: new MemoryStorage(), acmeIssuers: [failing] });
    await other.setNames([{ name: 'b.example.com', issuer: 'acme' }]);
    await advance(2 * HOUR + MINUTE);
    expect(failing.renewalInfoCalls.map((at) => at - (failing.renewalInfoCalls[0] as number))).toEqual([
      0,
      HOUR,
      2 * HOUR,
    ]);
    const summary = other.status()[0];
    expect(summary?.nextAttemptAt).toBe(
      lifetimeRenewalTimes({
        notBefore: (summary?.notAfter as number) - 90 * DAY - 5 * MINUTE,
        notAfter: summary?.notAfter as number,
      }).renewAt,
    );
  });
});
