import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, createServer } from 'node:tls';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CertificatesError, CertificatesErrorCode } from '../errors.js';
import { FileStorage } from '../storage/file-storage.js';
import { LocalCa, LocalCaKeys } from './local-ca.js';
import { MemoryStorage } from './memory-storage.test-helpers.js';

// Real ECDSA keys, real certificates, real openssl and a real TLS handshake
// on loopback. Storage is the in-memory helper (the file storage is built
// separately; the local CA only needs the interface).

const HOUR = 3600_000;
const DAY = 24 * HOUR;
const T0 = Date.UTC(2025, 5, 1, 12, 0, 0);

/** A clock the test moves by hand. */
function fakeClock(start = T0): { now: () => number; advance: (ms: number) => void } {
  let t = start;
  return {
    now: () => t,
    advance: (ms) => {
      t += ms;
    },
  };
}

/** The PEM blocks of a bundle, parsed. */
function chainOf(certPem: string): X509Certificate[] {
  return (certPem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []).map(
    (pem) => new X509Certificate(pem),
  );
}

function lifetime(cert: X509Certificate): number {
  return cert.validToDate.getTime() - cert.validFromDate.getTime();
}

async function expectCode(promise: Promise<unknown>, code: CertificatesErrorCode): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(CertificatesError);
  expect((error as CertificatesError).code).toBe(code);
}

describe('LocalCa: the issued chain', () => {
  // Certificates are made with the real clock here: Node and openssl check validity against it.
  let ca: LocalCa;
  let storage: MemoryStorage;
  let dir: string;
  beforeAll(async () => {
    storage = new MemoryStorage();
    ca = await LocalCa.open(storage);
    dir = await mkdtemp(join(tmpdir(), 'proxyd-local-ca-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('verifies leaf → intermediate → root, with the names and IPs as SANs', async () => {
    const issued = await ca.issue(['app.localhost', '*.dev.localhost', '127.0.0.1', '::1']);
    const [leaf, intermediate, extra] = chainOf(issued.certPem);
    const root = new X509Certificate(ca.rootPem);
    expect(extra).toBeUndefined();
    if (leaf === undefined || intermediate === undefined) throw new Error('chain has fewer than 2 certificates');
    expect(leaf.verify(intermediate.publicKey)).toBe(true);
    expect(intermediate.verify(root.publicKey)).toBe(true);
    expect(root.verify(root.publicKey)).toBe(true);
    expect(leaf.checkIssued(intermediate)).toBe(true);
    expect(intermediate.checkIssued(root)).toBe(true);
    expect(leaf.checkHost('app.localhost')).toBe('app.localhost');
    // checkHost answers with the SAN that matched.
    expect(leaf.checkHost('api.dev.localhost')).toBe('*.dev.localhost');
    expect(leaf.checkHost('a.b.dev.localhost')).toBeUndefined();
    expect(leaf.checkHost('other.localhost')).toBeUndefined();
    expect(leaf.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(leaf.checkIP('::1')).toBe('::1');
    expect(leaf.checkIP('127.0.0.2')).toBeUndefined();
    expect(leaf.subjectAltName).toBe(
      'DNS:app.localhost, DNS:*.dev.localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1',
    );
    expect(leaf.ca).toBe(false);
    expect(leaf.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']);
    expect(leaf.publicKey.asymmetricKeyType).toBe('ec');
    expect(leaf.publicKey.asymmetricKeyDetails?.namedCurve).toBe('prime256v1');
    expect(intermediate.ca).toBe(true);
    expect(root.ca).toBe(true);
    expect(root.subject).toBe(`CN=proxyd Local Authority - ${new Date().getUTCFullYear()} ECC Root`);
    expect(issued.keyPem).toMatch(/^-----BEGIN PRIVATE KEY-----/);
  });

  it('passes `openssl verify` against the root, with the intermediate untrusted', async () => {
    const issued = await ca.issue(['site.test', '10.0.0.7']);
    const [leaf, intermediate] = chainOf(issued.certPem);
    await writeFile(join(dir, 'root.pem'), ca.rootPem);
    await writeFile(join(dir, 'intermediate.pem'), intermediate?.toString() ?? '');
    await writeFile(join(dir, 'leaf.pem'), leaf?.toString() ?? '');
    const { stdout } = await promisify(execFile)('openssl', [
      'verify',
      '-CAfile',
      join(dir, 'root.pem'),
      '-untrusted',
      join(dir, 'intermediate.pem'),
      '-purpose',
      'sslserver',
      '-verify_hostname',
      'site.test',
      join(dir, 'leaf.pem'),
    ]);
    expect(stdout.trim()).toBe(`${join(dir, 'leaf.pem')}: OK`);
    // The intermediate's pathLen 0 and CA flag as openssl reads them.
    const { stdout: text } = await promisify(execFile)('openssl', [
      'x509',
      '-noout',
      '-text',
      '-in',
      join(dir, 'intermediate.pem'),
    ]);
    expect(text).toMatch(/CA:TRUE, pathlen:0/);
    expect(text).toMatch(/Certificate Sign, CRL Sign/);
  });

  it('serves a TLS handshake on loopback that verifies against the root, and fails for a name not certified', async () => {
    const issued = await ca.issue(['app.localhost', '127.0.0.1']);
    const server = createServer({ cert: issued.certPem, key: issued.keyPem }, (socket) => socket.end('hello'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const handshake = (servername: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = connect({ host: '127.0.0.1', port, servername, ca: ca.rootPem }, () => {
          let body = '';
          socket.setEncoding('utf8');
          socket.on('data', (chunk: string) => {
            body += chunk;
          });
          socket.on('end', () => resolve(body));
        });
        socket.on('error', reject);
      });
    try {
      await expect(handshake('app.localhost')).resolves.toBe('hello');
      await expect(handshake('other.localhost')).rejects.toMatchObject({ code: 'ERR_TLS_CERT_ALTNAME_INVALID' });
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('rejects an empty name list and names that are neither DNS names nor IPs', async () => {
    await expectCode(ca.issue([]), CertificatesErrorCode.LOCAL_CA_INVALID_NAME);
    await expectCode(ca.issue(['bad name.test']), CertificatesErrorCode.LOCAL_CA_INVALID_NAME);
    await expectCode(ca.issue(['a.*.test']), CertificatesErrorCode.LOCAL_CA_INVALID_NAME);
    await expectCode(ca.issue(['-x.test']), CertificatesErrorCode.LOCAL_CA_INVALID_NAME);
  });

  it('normalises names: lowercase, no trailing dot, IPv6 brackets removed, duplicates dropped', async () => {
    const issued = await ca.issue(['App.LocalHost.', 'app.localhost', '[::1]']);
    expect(issued.names).toEqual(['app.localhost', '::1']);
    expect(chainOf(issued.certPem)[0]?.checkHost('app.localhost')).toBe('app.localhost');
  });
});

describe('LocalCa: validity periods (fake clock)', () => {
  it('root ~10 years, intermediate 7 days, leaf 12 h, each backdated 5 minutes', async () => {
    const clock = fakeClock();
    const ca = await LocalCa.open(new MemoryStorage(), { now: clock.now });
    const issued = await ca.issue(['app.localhost']);
    const [leaf, intermediate] = chainOf(issued.certPem);
    const root = new X509Certificate(ca.rootPem);
    const skew = 5 * 60_000;
    expect(root.validFromDate.getTime()).toBe(T0 - skew);
    expect(root.validToDate.getTime()).toBe(T0 + 3650 * DAY);
    expect(intermediate?.validFromDate.getTime()).toBe(T0 - skew);
    expect(intermediate?.validToDate.getTime()).toBe(T0 + 7 * DAY);
    expect(leaf?.validFromDate.getTime()).toBe(T0 - skew);
    expect(leaf?.validToDate.getTime()).toBe(T0 + 12 * HOUR);
    expect(issued.notBefore.getTime()).toBe(T0 - skew);
    expect(issued.notAfter.getTime()).toBe(T0 + 12 * HOUR);
    expect(root.subject).toBe('CN=proxyd Local Authority - 2025 ECC Root');
  });

  it('honours lifetimeMs for a leaf but never outlives the intermediate', async () => {
    const clock = fakeClock();
    const ca = await LocalCa.open(new MemoryStorage(), { now: clock.now });
    expect((await ca.issue(['a.test'], { lifetimeMs: HOUR })).notAfter.getTime()).toBe(T0 + HOUR);
    expect((await ca.issue(['a.test'], { lifetimeMs: 30 * DAY })).notAfter.getTime()).toBe(T0 + 7 * DAY);
  });

  it('gives every leaf a fresh key and a distinct random serial', async () => {
    const ca = await LocalCa.open(new MemoryStorage(), { now: fakeClock().now });
    const a = await ca.issue(['a.test']);
    const b = await ca.issue(['a.test']);
    expect(a.keyPem).not.toBe(b.keyPem);
    const [leafA] = chainOf(a.certPem);
    const [leafB] = chainOf(b.certPem);
    expect(leafA?.serialNumber).not.toBe(leafB?.serialNumber);
    expect(leafA?.serialNumber.length).toBe(32);
  });
});

describe('LocalCa: storage', () => {
  it('stores root and intermediate under ca/local/, keys as secrets', async () => {
    const storage = new MemoryStorage();
    await LocalCa.open(storage, { now: fakeClock().now });
    expect(await storage.list('ca/local')).toEqual([
      LocalCaKeys.intermediateCert,
      LocalCaKeys.intermediateKey,
      LocalCaKeys.rootCert,
      LocalCaKeys.rootKey,
    ]);
    expect([...storage.secrets].sort()).toEqual([LocalCaKeys.intermediateKey, LocalCaKeys.rootKey]);
  });

  it('reuses the stored root and intermediate across reopen, writing nothing', async () => {
    const clock = fakeClock();
    const storage = new MemoryStorage();
    const first = await LocalCa.open(storage, { now: clock.now });
    const writes = storage.writes;
    clock.advance(DAY);
    const second = await LocalCa.open(storage, { now: clock.now });
    expect(second.rootPem).toBe(first.rootPem);
    expect(second.intermediatePem).toBe(first.intermediatePem);
    expect(storage.writes).toBe(writes);
  });

  it('renews the intermediate once 1/3 of its life is left, and leaves chain to the new one', async () => {
    const clock = fakeClock();
    const storage = new MemoryStorage();
    const ca = await LocalCa.open(storage, { now: clock.now });
    const old = new X509Certificate(ca.intermediatePem);
    // Due once 1/3 of notBefore → notAfter (7 days plus the 5-minute backdate) is left.
    const renewAt = old.validToDate.getTime() - lifetime(old) / 3;
    expect(renewAt - T0).toBeCloseTo(4 * DAY + 16 * HOUR, -6);
    clock.advance(Math.ceil(renewAt) - T0 - 1);
    const before = chainOf((await ca.issue(['a.test'])).certPem);
    expect(before[1]?.fingerprint256).toBe(old.fingerprint256);
    clock.advance(1);
    const after = chainOf((await ca.issue(['a.test'])).certPem);
    const renewed = new X509Certificate(ca.intermediatePem);
    expect(renewed.fingerprint256).not.toBe(old.fingerprint256);
    expect(after[1]?.fingerprint256).toBe(renewed.fingerprint256);
    expect(renewed.validFromDate.getTime()).toBe(clock.now() - 5 * 60_000);
    expect(after[0]?.verify(renewed.publicKey)).toBe(true);
    expect(after[0]?.verify(old.publicKey)).toBe(false);
    expect(renewed.verify(new X509Certificate(ca.rootPem).publicKey)).toBe(true);
    // Persisted: a reopen picks up the renewed intermediate, and the root never changed.
    expect((await storage.load(LocalCaKeys.intermediateCert))?.toString()).toBe(ca.intermediatePem);
    const reopened = await LocalCa.open(storage, { now: clock.now });
    expect(reopened.intermediatePem).toBe(ca.intermediatePem);
    expect(reopened.rootPem).toBe(ca.rootPem);
  });

  it('renews a due stored intermediate at open and keeps the root', async () => {
    const clock = fakeClock();
    const storage = new MemoryStorage();
    const first = await LocalCa.open(storage, { now: clock.now });
    clock.advance(6 * DAY);
    const second = await LocalCa.open(storage, { now: clock.now });
    expect(second.rootPem).toBe(first.rootPem);
    expect(second.intermediatePem).not.toBe(first.intermediatePem);
  });

  it('issues concurrently across a renewal with one new intermediate', async () => {
    const clock = fakeClock();
    const storage = new MemoryStorage();
    const ca = await LocalCa.open(storage, { now: clock.now });
    clock.advance(5 * DAY);
    const writes = storage.writes;
    const issued = await Promise.all([ca.issue(['a.test']), ca.issue(['b.test']), ca.issue(['c.test'])]);
    expect(storage.writes - writes).toBe(2);
    const intermediates = new Set(issued.map((i) => chainOf(i.certPem)[1]?.fingerprint256));
    expect(intermediates.size).toBe(1);
  });

  it('two instances opening one empty storage at once end up with one root', async () => {
    const storage = new MemoryStorage();
    const clock = fakeClock();
    const [a, b] = await Promise.all([
      LocalCa.open(storage, { now: clock.now }),
      LocalCa.open(storage, { now: clock.now }),
    ]);
    expect(a.rootPem).toBe(b.rootPem);
    expect(a.intermediatePem).toBe(b.intermediatePem);
  });

  it('replaces an intermediate that was not signed by the stored root', async () => {
    const clock = fakeClock();
    const storage = new MemoryStorage();
    await LocalCa.open(storage, { now: clock.now });
    const other = new MemoryStorage();
    await LocalCa.open(other, { now: clock.now });
    for (const key of [LocalCaKeys.intermediateCert, LocalCaKeys.intermediateKey]) {
      await storage.store(key, (await other.load(key)) ?? '');
    }
    const ca = await LocalCa.open(storage, { now: clock.now });
    const root = new X509Certificate(ca.rootPem);
    expect(new X509Certificate(ca.intermediatePem).verify(root.publicKey)).toBe(true);
  });

  it('replaces an intermediate whose key is not its certificate’s key', async () => {
    const clock = fakeClock();
    const storage = new MemoryStorage();
    const first = await LocalCa.open(storage, { now: clock.now });
    await storage.store(LocalCaKeys.intermediateKey, (await storage.load(LocalCaKeys.rootKey)) ?? '');
    const ca = await LocalCa.open(storage, { now: clock.now });
    expect(ca.rootPem).toBe(first.rootPem);
    expect(ca.intermediatePem).not.toBe(first.intermediatePem);
    const issued = await ca.issue(['a.test']);
    expect(chainOf(issued.certPem)[0]?.verify(new X509Certificate(ca.intermediatePem).publicKey)).toBe(true);
  });

  it.each([
    [LocalCaKeys.rootCert, 'not a certificate'],
    [LocalCaKeys.rootKey, 'not a key'],
    [LocalCaKeys.intermediateCert, '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n'],
    [LocalCaKeys.intermediateKey, 'not a key'],
  ])('a stored %s that does not parse is CERT_LOCAL_CA_INVALID and is left as it is', async (key, garbage) => {
    const storage = new MemoryStorage();
    await LocalCa.open(storage, { now: fakeClock().now });
    await storage.store(key, garbage);
    const writes = storage.writes;
    await expectCode(LocalCa.open(storage, { now: fakeClock().now }), CertificatesErrorCode.LOCAL_CA_INVALID);
    expect(storage.writes).toBe(writes);
    expect((await storage.load(key))?.toString()).toBe(garbage);
  });

  it('a root key that is not the root certificate’s key is CERT_LOCAL_CA_INVALID', async () => {
    const storage = new MemoryStorage();
    await LocalCa.open(storage, { now: fakeClock().now });
    await storage.store(LocalCaKeys.rootKey, (await storage.load(LocalCaKeys.intermediateKey)) ?? '');
    await expectCode(LocalCa.open(storage, { now: fakeClock().now }), CertificatesErrorCode.LOCAL_CA_INVALID);
  });

  it.each([[LocalCaKeys.rootKey], [LocalCaKeys.rootCert]])(
    'with %s missing, the half root is CERT_LOCAL_CA_INCOMPLETE and no new root is made',
    async (missing) => {
      const storage = new MemoryStorage();
      await LocalCa.open(storage, { now: fakeClock().now });
      await storage.delete(missing);
      const writes = storage.writes;
      await expectCode(LocalCa.open(storage, { now: fakeClock().now }), CertificatesErrorCode.LOCAL_CA_INCOMPLETE);
      expect(storage.writes).toBe(writes);
    },
  );
});

describe('LocalCa: on the file storage', () => {
  it('two storages on one cert dir opening at once share one root, which a reopen loads', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'proxyd-local-ca-files-'));
    try {
      const options = { lockPollMs: 10 };
      const [a, b] = await Promise.all([
        LocalCa.open(new FileStorage(dir, options)),
        LocalCa.open(new FileStorage(dir, options)),
      ]);
      expect(a.rootPem).toBe(b.rootPem);
      expect(a.intermediatePem).toBe(b.intermediatePem);
      const reopened = await LocalCa.open(new FileStorage(dir, options));
      expect(reopened.rootPem).toBe(a.rootPem);
      expect(await readFile(join(dir, 'ca/local/root.crt'), 'utf8')).toBe(a.rootPem);
      const issued = await reopened.issue(['app.localhost']);
      expect(chainOf(issued.certPem)[1]?.verify(new X509Certificate(a.rootPem).publicKey)).toBe(true);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('LocalCa: IPv6 SANs (issue 30: leaves written as DER)', () => {
  it('encodes compressed IPv6 and an embedded IPv4 tail byte for byte', async () => {
    const ca = await LocalCa.open(new MemoryStorage());
    const issued = await ca.issue(['2001:db8::8:1', '::ffff:10.1.2.3', 'fe80::']);
    const [leaf] = chainOf(issued.certPem);
    expect(leaf?.subjectAltName).toBe(
      'IP Address:2001:DB8:0:0:0:0:8:1, IP Address:0:0:0:0:0:FFFF:A01:203, IP Address:FE80:0:0:0:0:0:0:0',
    );
    expect(leaf?.checkIP('2001:db8::8:1')).toBe('2001:db8::8:1');
  });
});
