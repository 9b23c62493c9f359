import { describe, expect, it } from 'vitest';
import { CertificatesError, CertificatesErrorCode } from '../errors.js';
import { MemoryStorage } from '../local-ca/memory-storage.test-helpers.js';
import { FakeAcmeIssuer } from './manager.test-helpers.js';
import {
  type CertificateMetadata,
  certificateKeys,
  loadCertificate,
  loadMetadata,
  nameSegment,
  storeCertificate,
  storeMetadata,
} from './stored-certificate.js';

const metadata = (name: string, issuer: string | null): CertificateMetadata => ({
  name,
  issuer,
  notBefore: null,
  notAfter: null,
  ari: null,
  lastError: null,
  nextAttemptAt: null,
  backoff: null,
  validationFailures: [],
});

async function issued(name: string) {
  const issuedCertificate = await new FakeAcmeIssuer('ca1').obtain([name]);
  return { certPem: issuedCertificate.certificatePem, keyPem: issuedCertificate.privateKeyPem };
}

async function invalidCode(promise: Promise<unknown>): Promise<string> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(CertificatesError);
  return (err as CertificatesError).code;
}

describe('stored certificate layout', () => {
  it('keeps a name under certificates/<issuer>/<name>/, wildcards without *', () => {
    expect(certificateKeys('ca1', 'a.example.com')).toEqual({
      cert: 'certificates/ca1/a.example.com/a.example.com.crt',
      key: 'certificates/ca1/a.example.com/a.example.com.key',
      meta: 'certificates/ca1/a.example.com/a.example.com.json',
    });
    expect(nameSegment('*.example.com')).toBe('wildcard_.example.com');
    expect(nameSegment('::1')).toBe('::1');
  });

  it('stores key (secret), chain and metadata, and loads them back', async () => {
    const storage = new MemoryStorage();
    const pair = await issued('a.example.com');
    await storeCertificate(storage, 'ca1', pair, metadata('a.example.com', 'https://ca1.test/directory'));
    const keys = certificateKeys('ca1', 'a.example.com');
    expect(storage.secrets).toEqual(new Set([keys.key]));
    const read = await loadCertificate(storage, 'ca1', 'a.example.com');
    expect(read.state).toBe('loaded');
    if (read.state !== 'loaded') return;
    expect(read.certificate).toMatchObject({
      issuerId: 'ca1',
      issuer: 'https://ca1.test/directory',
      certPem: pair.certPem,
    });
    expect(read.certificate.notAfter).toBeGreaterThan(read.certificate.notBefore);
  });

  it('issue 30: builds the TLS context when first read, once (a primary whose workers serve TLS never does)', async () => {
    const storage = new MemoryStorage();
    const pair = await issued('a.example.com');
    await storeCertificate(storage, 'ca1', pair, metadata('a.example.com', null));
    const read = await loadCertificate(storage, 'ca1', 'a.example.com');
    if (read.state !== 'loaded') throw new Error(read.state);
    // Not a value held since the load: a getter that builds it.
    expect(Object.getOwnPropertyDescriptor(read.certificate, 'context')?.value).toBeUndefined();
    const context = read.certificate.context;
    // A real context (its native handle), usable by a TLS server.
    expect(context).toHaveProperty('context');
    expect(read.certificate.context).toBe(context);
  });

  it('reads a missing or half pair as missing, and a pair that does not match as mismatched', async () => {
    const storage = new MemoryStorage();
    expect(await loadCertificate(storage, 'ca1', 'a.example.com')).toEqual({ state: 'missing' });
    const keys = certificateKeys('ca1', 'a.example.com');
    const [one, two] = [await issued('a.example.com'), await issued('a.example.com')];
    await storage.store(keys.key, one.keyPem);
    expect(await loadCertificate(storage, 'ca1', 'a.example.com')).toEqual({ state: 'missing' });
    await storage.store(keys.cert, two.certPem);
    expect((await loadCertificate(storage, 'ca1', 'a.example.com')).state).toBe('mismatched');
    // A mismatched pair parses: the next certificate may replace it.
    await storeCertificate(storage, 'ca1', two, metadata('a.example.com', null));
    expect((await loadCertificate(storage, 'ca1', 'a.example.com')).state).toBe('loaded');
  });

  it('a certificate, key or metadata file that does not parse is CERT_STORED_CERTIFICATE_INVALID and never overwritten', async () => {
    const pair = await issued('a.example.com');
    const keys = certificateKeys('ca1', 'a.example.com');
    for (const [key, garbage] of [
      [keys.cert, 'not a certificate'],
      [keys.key, '-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----\n'],
    ] as const) {
      const storage = new MemoryStorage();
      await storage.store(key, garbage);
      expect(await invalidCode(loadCertificate(storage, 'ca1', 'a.example.com'))).toBe(
        CertificatesErrorCode.STORED_CERTIFICATE_INVALID,
      );
      expect(await invalidCode(storeCertificate(storage, 'ca1', pair, metadata('a.example.com', null)))).toBe(
        CertificatesErrorCode.STORED_CERTIFICATE_INVALID,
      );
      expect(storage.values.get(key)?.toString()).toBe(garbage);
      expect([...storage.values.keys()]).toEqual([key]);
    }

    const storage = new MemoryStorage();
    await storage.store(keys.meta, '{"issuer": ');
    expect(await invalidCode(loadMetadata(storage, 'ca1', 'a.example.com'))).toBe(
      CertificatesErrorCode.STORED_CERTIFICATE_INVALID,
    );
    expect(await invalidCode(storeMetadata(storage, 'ca1', metadata('a.example.com', null)))).toBe(
      CertificatesErrorCode.STORED_CERTIFICATE_INVALID,
    );
    expect(await invalidCode(storeCertificate(storage, 'ca1', pair, metadata('a.example.com', null)))).toBe(
      CertificatesErrorCode.STORED_CERTIFICATE_INVALID,
    );
    expect(storage.values.get(keys.meta)?.toString()).toBe('{"issuer": ');
    await storage.store(keys.meta, '[]');
    expect(await invalidCode(loadMetadata(storage, 'ca1', 'a.example.com'))).toBe(
      CertificatesErrorCode.STORED_CERTIFICATE_INVALID,
    );
  });

  it('metadata fields of the wrong type read as absent', async () => {
    const storage = new MemoryStorage();
    await storage.store(
      certificateKeys('ca1', 'a.example.com').meta,
      JSON.stringify({
        issuer: 5,
        notAfter: 'soon',
        ari: { certId: 'x.y', window: { start: 2, end: 1 }, selectedAt: 'no', nextPollAt: 10 },
        validationFailures: [1, 'two', 3],
      }),
    );
    expect(await loadMetadata(storage, 'ca1', 'a.example.com')).toEqual({
      ...metadata('a.example.com', null),
      ari: { certId: 'x.y', window: null, selectedAt: null, nextPollAt: 10, explanationUrl: null },
      validationFailures: [1, 3],
    });
  });
});
