import { createPrivateKey, X509Certificate } from 'node:crypto';
import { createSecureContext, type SecureContext } from 'node:tls';
import { CertificatesError, CertificatesErrorCode } from '../errors.js';
import type { BackoffState } from '../schedule/backoff.js';
import type { CertificateStorage } from '../storage/storage.js';

/** The issuer id of certificates from the local CA (`certificates/local/<name>/…`). */
export const LOCAL_ISSUER_ID = 'local';

/** What the manager keeps of a certificate's ACME Renewal Information (RFC 9773), times epoch ms. */
export interface AriMetadata {
  /** The certificate's ARI identifier (`ariCertId`): the rest applies only to that certificate. */
  certId: string;
  /** The CA's suggested window, or null when the CA has none for it (or its answer did not parse). */
  window: { start: number; end: number } | null;
  /** The renewal time chosen in `window`; kept while the window is unchanged, so restarts do not re-pick it. */
  selectedAt: number | null;
  /** When to ask the CA again; null: never (its directory has no `renewalInfo`). */
  nextPollAt: number | null;
  /** The CA's `explanationURL`, or null. */
  explanationUrl: string | null;
}

/**
 * The metadata file kept beside a certificate (`<name>.json`): plain data,
 * times epoch ms. The certificate file is the truth for validity; this file
 * carries what the certificate does not (who issued it, the ARI window, the
 * failure run), so a restart neither forgets a backoff nor re-picks an ARI
 * time nor hammers a failing CA.
 */
export interface CertificateMetadata {
  /** The managed name. */
  name: string;
  /** Who issued the certificate: the CA's directory URL, or `local`; null when none was obtained yet. */
  issuer: string | null;
  notBefore: number | null;
  notAfter: number | null;
  /** The CA's ARI state for the certificate, or null (no ARI, not asked yet, or the local CA). */
  ari: AriMetadata | null;
  /** The latest failure since the last success, or null. */
  lastError: string | null;
  /** When the next attempt starts after a failure, or null. */
  nextAttemptAt: number | null;
  /** The failure run ({@link BackoffState}), or null. */
  backoff: BackoffState | null;
  /** Times of recent failed validations (see `validationHeldUntil`). */
  validationFailures: number[];
}

/** A certificate read from storage (or just issued) and ready to serve. */
export interface LoadedCertificate {
  /** The chain, PEM, leaf first. */
  certPem: string;
  /** The leaf's key, PEM. */
  keyPem: string;
  /** Where it is stored: `local` or the CA's storage segment. */
  issuerId: string;
  /** The metadata's `issuer` (the CA's directory URL or `local`), or `issuerId` when the metadata is missing. */
  issuer: string;
  notBefore: number;
  notAfter: number;
  /** The TLS context, built at the first read (see {@link loadedCertificate}). */
  readonly context: SecureContext;
}

/**
 * A loaded certificate whose TLS context is built when first read: a
 * context is ~50 KB of native memory, and a control plane whose workers
 * serve TLS (they pull PEMs) never reads it, so 10,000 cached certificates
 * cost their PEMs, not 500 MB of contexts nobody uses (issue 30).
 */
export function loadedCertificate(fields: Omit<LoadedCertificate, 'context'>): LoadedCertificate {
  let context: SecureContext | undefined;
  return {
    ...fields,
    get context(): SecureContext {
      context ??= createSecureContext({ cert: fields.certPem, key: fields.keyPem });
      return context;
    },
  };
}

/**
 * What the manager keeps of a name's served certificate at all times (the
 * compact index): enough to decide renewal, report status and match ARI
 * state. The PEMs and TLS context live in the bounded certificate cache and
 * are read from storage again after an eviction.
 */
export interface CertificateInfo {
  issuerId: string;
  issuer: string;
  notBefore: number;
  notAfter: number;
  /** The RFC 9773 cert ID, or null when the certificate has none. */
  certId: string | null;
}

/** What is stored for a name under one issuer. */
export type StoredCertificate =
  | { state: 'missing' }
  /** Certificate and key both parse but are not a pair (a write interrupted between the two): replaced by the next certificate. */
  | { state: 'mismatched'; detail: string }
  | { state: 'loaded'; certificate: LoadedCertificate };

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

function invalid(key: string, why: string, cause?: unknown): CertificatesError {
  return new CertificatesError(
    CertificatesErrorCode.STORED_CERTIFICATE_INVALID,
    `${key} ${why}; it is left as it is and nothing is obtained over it: fix or remove it`,
    cause === undefined ? undefined : { cause },
  );
}

const isNumber = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value);
const numberOrNull = (value: unknown): number | null => (isNumber(value) ? value : null);

function parseAri(value: unknown): AriMetadata | null {
  if (typeof value !== 'object' || value === null) return null;
  const ari = value as Record<string, unknown>;
  if (typeof ari.certId !== 'string') return null;
  const window = ari.window as { start?: unknown; end?: unknown } | null | undefined;
  return {
    certId: ari.certId,
    window:
      window && isNumber(window.start) && isNumber(window.end) && window.end > window.start
        ? { start: window.start, end: window.end }
        : null,
    selectedAt: numberOrNull(ari.selectedAt),
    nextPollAt: numberOrNull(ari.nextPollAt),
    explanationUrl: typeof ari.explanationUrl === 'string' ? ari.explanationUrl : null,
  };
}

/**
 * Reads a name's metadata under one issuer; null when there is none. Throws
 * `CERT_STORED_CERTIFICATE_INVALID` when the file is not a JSON object: it
 * is then never overwritten. Fields of the wrong type read as absent.
 */
export async function loadMetadata(
  storage: CertificateStorage,
  issuerId: string,
  name: string,
): Promise<CertificateMetadata | null> {
  const key = certificateKeys(issuerId, name).meta;
  const raw = await storage.load(key);
  if (raw === null) return null;
  let value: Record<string, unknown>;
  try {
    value = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
  } catch (cause) {
    throw invalid(key, 'does not parse as JSON', cause);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid(key, 'is not a JSON object');
  return {
    name,
    issuer: typeof value.issuer === 'string' ? value.issuer : null,
    notBefore: numberOrNull(value.notBefore),
    notAfter: numberOrNull(value.notAfter),
    ari: parseAri(value.ari),
    lastError: typeof value.lastError === 'string' ? value.lastError : null,
    nextAttemptAt: numberOrNull(value.nextAttemptAt),
    backoff: typeof value.backoff === 'object' && value.backoff !== null ? (value.backoff as BackoffState) : null,
    validationFailures: Array.isArray(value.validationFailures) ? value.validationFailures.filter(isNumber) : [],
  };
}

/**
 * Reads a name's certificate and key under one issuer. `missing` when
 * either file is absent; `mismatched` when both parse but are not a pair.
 * Throws `CERT_STORED_CERTIFICATE_INVALID` when a present file does not
 * parse (certificate, key or metadata): the caller logs it and leaves it as
 * it is.
 */
export async function loadCertificate(
  storage: CertificateStorage,
  issuerId: string,
  name: string,
): Promise<StoredCertificate> {
  const keys = certificateKeys(issuerId, name);
  const [cert, key, meta] = await Promise.all([
    storage.load(keys.cert),
    storage.load(keys.key),
    // The metadata only names the issuer here: one that does not parse is the caller's to report.
    loadMetadata(storage, issuerId, name).catch(() => null),
  ]);
  let leaf: X509Certificate | undefined;
  if (cert !== null) {
    try {
      leaf = new X509Certificate(cert);
    } catch (cause) {
      throw invalid(keys.cert, 'does not parse as a PEM certificate', cause);
    }
  }
  if (key !== null) {
    try {
      createPrivateKey(key);
    } catch (cause) {
      throw invalid(keys.key, 'does not parse as a PEM private key', cause);
    }
  }
  if (cert === null || key === null || leaf === undefined) return { state: 'missing' };
  const certPem = cert.toString('utf8');
  const keyPem = key.toString('utf8');
  // Whether the pair matches, without building the TLS context (built when a handshake needs it).
  if (!leaf.checkPrivateKey(createPrivateKey(keyPem))) {
    return { state: 'mismatched', detail: `${keys.cert} and ${keys.key}: the key is not the certificate's` };
  }
  return {
    state: 'loaded',
    certificate: loadedCertificate({
      certPem,
      keyPem,
      issuerId,
      issuer: meta?.issuer ?? issuerId,
      notBefore: Date.parse(leaf.validFrom),
      notAfter: Date.parse(leaf.validTo),
    }),
  };
}

/** Stores a name's metadata under one issuer (over a metadata file that parses, or none: see {@link loadMetadata}). */
export async function storeMetadata(
  storage: CertificateStorage,
  issuerId: string,
  metadata: CertificateMetadata,
): Promise<void> {
  await loadMetadata(storage, issuerId, metadata.name);
  await storage.store(certificateKeys(issuerId, metadata.name).meta, `${JSON.stringify(metadata, null, 2)}\n`);
}

/**
 * Stores a certificate (chain), its key (as a secret) and its metadata, key
 * first. Throws `CERT_STORED_CERTIFICATE_INVALID`, writing nothing, when a
 * file already there does not parse: it is never overwritten. `checked`
 * says what the caller read and found parseable under the name's lock just
 * before (the attempt does): those files are not read again (issue 30: four
 * reads of a name's files fewer per certificate).
 */
export async function storeCertificate(
  storage: CertificateStorage,
  issuerId: string,
  certificate: { certPem: string; keyPem: string },
  metadata: CertificateMetadata,
  checked: { certificate: boolean; metadata: boolean } = { certificate: false, metadata: false },
): Promise<void> {
  if (!checked.certificate) await loadCertificate(storage, issuerId, metadata.name);
  if (!checked.metadata) await loadMetadata(storage, issuerId, metadata.name);
  const keys = certificateKeys(issuerId, metadata.name);
  // One directory fsync for the three files (issue 30: seven fsyncs per certificate were four of them).
  await storage.store(keys.key, certificate.keyPem, { secret: true, syncDirectory: false });
  await storage.store(keys.cert, certificate.certPem, { syncDirectory: false });
  await storage.store(keys.meta, `${JSON.stringify(metadata, null, 2)}\n`);
}
