import { type CryptoKey, type CryptoKeyPair, crypto, EC_SIGNING_ALGORITHM } from './keys.js';
import {
  AuthorityKeyIdentifierExtension,
  BasicConstraintsExtension,
  KeyUsageFlags,
  KeyUsagesExtension,
  SubjectKeyIdentifierExtension,
  type X509Certificate,
  X509CertificateGenerator,
} from './x509.js';

/** Lifetime of the local root, ms: 3,650 days (~10 years), as Caddy's. */
export const ROOT_LIFETIME_MS = 3650 * 24 * 3600 * 1000;
/** Lifetime of the local intermediate, ms: 7 days, as Caddy's. */
export const INTERMEDIATE_LIFETIME_MS = 7 * 24 * 3600 * 1000;
/** Default lifetime of a leaf certificate, ms: 12 hours, as Caddy's. */
export const LEAF_LIFETIME_MS = 12 * 3600 * 1000;
/** How far notBefore is set before the issuing instant, ms (5 minutes): room for clock skew between proxyd and its clients. */
export const BACKDATE_MS = 5 * 60 * 1000;

/** A CA certificate with its signing key. */
export interface Authority {
  certificate: X509Certificate;
  privateKey: CryptoKey;
}

/** Subject common name of the root created at `now` (ms), e.g. `proxyd Local Authority - 2025 ECC Root`. */
export function rootCommonName(now: number): string {
  return `proxyd Local Authority - ${new Date(now).getUTCFullYear()} ECC Root`;
}

/** Subject common name of every intermediate. */
export const INTERMEDIATE_COMMON_NAME = 'proxyd Local Authority - ECC Intermediate';

/** 16 random bytes as a positive DER integer in hex (the top bit cleared, never a leading zero byte). */
function randomSerial(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[0] = ((bytes[0] as number) & 0x7f) | 0x40;
  return Buffer.from(bytes).toString('hex');
}

/** The X.500 name `CN=<commonName>`, escaped as @peculiar/x509's string form expects. */
function commonName(name: string): string {
  return `CN=${name.replace(/([,+"\\<>;=#])/g, '\\$1')}`;
}

/**
 * A self-signed root: CA:TRUE (critical), keyCertSign + cRLSign (critical),
 * valid from `now − BACKDATE_MS` for `lifetimeMs` (default {@link ROOT_LIFETIME_MS}).
 */
export async function createRootCertificate(
  keys: CryptoKeyPair,
  now: number,
  lifetimeMs = ROOT_LIFETIME_MS,
): Promise<X509Certificate> {
  return X509CertificateGenerator.createSelfSigned(
    {
      serialNumber: randomSerial(),
      name: commonName(rootCommonName(now)),
      notBefore: new Date(now - BACKDATE_MS),
      notAfter: new Date(now + lifetimeMs),
      keys,
      signingAlgorithm: EC_SIGNING_ALGORITHM,
      extensions: [
        new BasicConstraintsExtension(true, undefined, true),
        new KeyUsagesExtension(KeyUsageFlags.keyCertSign | KeyUsageFlags.cRLSign, true),
        await SubjectKeyIdentifierExtension.create(keys.publicKey, false, crypto),
      ],
    },
    crypto,
  );
}

/**
 * An intermediate signed by `root`: CA:TRUE with pathLen 0 (critical),
 * keyCertSign + cRLSign (critical), valid from `now − BACKDATE_MS` for
 * `lifetimeMs` (default {@link INTERMEDIATE_LIFETIME_MS}) but never past the root.
 */
export async function createIntermediateCertificate(
  root: Authority,
  publicKey: CryptoKey,
  now: number,
  lifetimeMs = INTERMEDIATE_LIFETIME_MS,
): Promise<X509Certificate> {
  return X509CertificateGenerator.create(
    {
      serialNumber: randomSerial(),
      subject: commonName(INTERMEDIATE_COMMON_NAME),
      issuer: root.certificate.subject,
      notBefore: new Date(now - BACKDATE_MS),
      notAfter: new Date(Math.min(now + lifetimeMs, root.certificate.notAfter.getTime())),
      publicKey,
      signingKey: root.privateKey,
      signingAlgorithm: EC_SIGNING_ALGORITHM,
      extensions: [
        new BasicConstraintsExtension(true, 0, true),
        new KeyUsagesExtension(KeyUsageFlags.keyCertSign | KeyUsageFlags.cRLSign, true),
        await SubjectKeyIdentifierExtension.create(publicKey, false, crypto),
        await AuthorityKeyIdentifierExtension.create(root.certificate.publicKey, false, crypto),
      ],
    },
    crypto,
  );
}
