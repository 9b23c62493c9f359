import { createPrivateKey, X509Certificate } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { CertificatesErrorCode } from '../errors.js';
import { LocalCa } from '../local-ca/local-ca.js';
import { MemoryStorage } from '../local-ca/memory-storage.test-helpers.js';
import { DAY, FakeAcmeIssuer, MINUTE, START } from './manager.test-helpers.js';
import { managerHarness, unreachable, validationFailed } from './manager-harness.test-helpers.js';
import { certificateKeys, loadMetadata } from './stored-certificate.js';

// CertificateManager: obtaining from an issuer (obtain.ts): the local CA, the ACME CAs in order, challenge types, DNS-01, wildcards.

const { setup } = managerHarness();

describe('CertificateManager: obtaining', () => {
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
    // What a worker asks at a handshake: the served names (the index), then one name's PEM pair, the one in storage.
    expect(manager.servedNames()).toEqual(['*.apps.internal', 'app.localhost']);
    const served = await manager.pemFor('App.localhost');
    expect(served?.name).toBe('app.localhost');
    expect(served?.cert).toBe(pem);
    expect(new X509Certificate(served?.cert as string).checkPrivateKey(createPrivateKey(served?.key as string))).toBe(
      true,
    );
    expect(served?.notAfter).toBe(new Date(leaf.validTo).getTime());
    // Exact, else the wildcard.
    expect((await manager.pemFor('x.apps.internal'))?.name).toBe('*.apps.internal');
    expect(await manager.pemFor('nope.localhost')).toBeNull();
    await manager.setNames([{ name: 'app.localhost', issuer: 'internal' }]);
    expect(manager.servedNames()).toEqual(['app.localhost']);
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
});

describe('CertificateManager: obtaining from the next CA', () => {
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

describe('CertificateManager: the reads of an attempt (issue 30)', () => {
  it('reads a new name’s files under its lock once, not again before the write, and still never writes over one that does not parse', async () => {
    const { time, make } = setup();
    const storage = new MemoryStorage();
    const loads: string[] = [];
    const load = storage.load.bind(storage);
    storage.load = async (key) => {
      loads.push(key);
      return await load(key);
    };
    const manager = make({ storage, localCa: await LocalCa.open(storage, { now: time.clock }) });
    await manager.setNames([{ name: 'a.test', issuer: 'internal' }]);
    await manager.whenIdle();
    expect(manager.has('a.test')).toBe(true);
    const keys = certificateKeys('local', 'a.test');
    // Certificate and key read twice each: when the name is added and under its lock; not again before the write.
    expect(loads.filter((key) => key === keys.cert)).toHaveLength(2);
    expect(loads.filter((key) => key === keys.key)).toHaveLength(2);
    expect(storage.values.has(keys.cert)).toBe(true);

    // A metadata file that does not parse: the attempt reads it under the lock and obtains nothing over it.
    storage.values.set(certificateKeys('local', 'b.test').meta, Buffer.from('{not json'));
    await manager.setNames([
      { name: 'a.test', issuer: 'internal' },
      { name: 'b.test', issuer: 'internal' },
    ]);
    await manager.whenIdle();
    expect(manager.has('b.test')).toBe(false);
    expect(storage.values.get(certificateKeys('local', 'b.test').meta)?.toString()).toBe('{not json');
  });
});
