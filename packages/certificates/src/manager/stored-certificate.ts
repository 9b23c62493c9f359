import { X509Certificate } from 'node:crypto';
import { createSecureContext, type SecureContext } from 'node:tls';
import type { BackoffState } from '../schedule/backoff.js';
import type { CertificateStorage } from '../storage/storage.js';

/** The issuer id of certificates from the local CA (`certificates/local/<name>/…`). */
export const LOCAL_ISSUER_ID = 'local';

/**
 * The metadata file kept beside a certificate (`<name>.json`): plain data,
 * times epoch ms. The certificate file is the truth for validity; this file
 * carries what the certificate does not (who issued it, the failure run), so
 * a restart neither forgets a backoff nor hammers a failing CA.
 */
export interface CertificateMetadata {
  /** The managed name. */
  name: string;
  /** Who issued the certificate: the CA's directory URL, or `local`; null when none was obtained yet. */
  issuer: string | null;
  notBefore: number | null;
  notAfter: number | null;
  /** The CA's ARI window, when one is known (not fetched yet: always null for now). */
  ari: { start: number; end: number } | null;
  /** The latest failure since the last success, or null. */
  lastError: string | null;
  /** When the next attempt starts after a failure, or null. */
  nextAttemptAt: number | null;
  /** The failure run ({@link BackoffState}), or null. */
  backoff: BackoffState | null;
  /** Times of recent failed validations (see `validationHeldUntil`). */
  validationFailures: number[];
}

/** A certificate read from storage and ready to serve. */
export interface LoadedCertificate {
  /** The chain, PEM, leaf first. */
  certPem: string;
  /** The leaf's key, PEM. */
  keyPem: string;
  /** Where it came from: `local` or the CA's storage segment. */
  issuerId: string;
  /** The metadata's `issuer`, or `issuerId` when the metadata is missing. */
  issuer: string;
  notBefore: number;
  notAfter: number;
  context: SecureContext;
}

/** The storage segment of a name: `*` is not kept in file names (`*.a.test` → `wildcard_.a.test`). */
export function nameSegment(name: string): string {
  return name.replace(/^\*\./, 'wildcard_.').replace(/[^A-Za-z0-9.\-_:]/g, '_');
}

/** The storage keys of a name's certificate, key and metadata under one issuer. */
export function certificateKeys(issuerId: string, name: string): { cert: string; key: string; meta: string } {
  const segment = nameSegment(name);
  const folder = `certificates/${issuerId}/${segment}`;
  return { cert: `${folder}/${segment}.crt`, key: `${folder}/${segment}.key`, meta: `${folder}/${segment}.json` };
}

/**
 * Reads a name's metadata under one issuer; null when missing or unreadable
 * (the certificate file stays the truth; a bad metadata file only loses the
 * failure history).
 */
export async function loadMetadata(
  storage: CertificateStorage,
  issuerId: string,
  name: string,
): Promise<CertificateMetadata | null> {
  const raw = await storage.load(certificateKeys(issuerId, name).meta);
  if (raw === null) return null;
  try {
    const value = JSON.parse(raw.toString('utf8')) as Partial<CertificateMetadata>;
    return {
      name,
      issuer: typeof value.issuer === 'string' ? value.issuer : null,
      notBefore: typeof value.notBefore === 'number' ? value.notBefore : null,
      notAfter: typeof value.notAfter === 'number' ? value.notAfter : null,
      ari: null,
      lastError: typeof value.lastError === 'string' ? value.lastError : null,
      nextAttemptAt: typeof value.nextAttemptAt === 'number' ? value.nextAttemptAt : null,
      backoff: typeof value.backoff === 'object' && value.backoff !== null ? value.backoff : null,
      validationFailures: Array.isArray(value.validationFailures)
        ? value.validationFailures.filter((t): t is number => typeof t === 'number')
        : [],
    };
  } catch {
    return null;
  }
}

/**
 * Reads a name's certificate and key under one issuer. Null when either is
 * missing; throws when they do not parse or do not match (the caller logs
 * it and leaves the files as they are).
 */
export async function loadCertificate(
  storage: CertificateStorage,
  issuerId: string,
  name: string,
): Promise<LoadedCertificate | null> {
  const keys = certificateKeys(issuerId, name);
  const [cert, key, meta] = await Promise.all([
    storage.load(keys.cert),
    storage.load(keys.key),
    loadMetadata(storage, issuerId, name),
  ]);
  if (cert === null || key === null) return null;
  const certPem = cert.toString('utf8');
  const keyPem = key.toString('utf8');
  const leaf = new X509Certificate(certPem);
  return {
    certPem,
    keyPem,
    issuerId,
    issuer: meta?.issuer ?? issuerId,
    notBefore: Date.parse(leaf.validFrom),
    notAfter: Date.parse(leaf.validTo),
    context: createSecureContext({ cert: certPem, key: keyPem }),
  };
}

/** Stores a certificate (chain), its key (as a secret) and its metadata, in that order. */
export async function storeCertificate(
  storage: CertificateStorage,
  issuerId: string,
  certificate: { certPem: string; keyPem: string },
  metadata: CertificateMetadata,
): Promise<void> {
  const keys = certificateKeys(issuerId, metadata.name);
  await storage.store(keys.key, certificate.keyPem, { secret: true });
  await storage.store(keys.cert, certificate.certPem);
  await storage.store(keys.meta, `${JSON.stringify(metadata, null, 2)}\n`);
}
