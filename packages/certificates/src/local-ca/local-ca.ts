import { createPrivateKey, KeyObject } from 'node:crypto';
import { isIP } from 'node:net';
import { domainToASCII } from 'node:url';
import { CertificatesError, CertificatesErrorCode } from '../errors.js';
import type { CertificateStorage } from '../storage/storage.js';
import {
  type Authority,
  BACKDATE_MS,
  createIntermediateCertificate,
  createRootCertificate,
  INTERMEDIATE_LIFETIME_MS,
  LEAF_LIFETIME_MS,
  ROOT_LIFETIME_MS,
} from './certificates.js';
import { type CryptoKey, crypto, exportPrivateKeyPem, generateKeyPair, importSigningKey, publicKeyOf } from './keys.js';
import { keyIdOf, type LeafSigner, signLeaf, subjectNameDer } from './leaf.js';
import { needsRenewal } from './renewal.js';
import { X509Certificate } from './x509.js';

export { isLocalName } from './local-name.js';

/** Storage keys of the local CA's files (certificates PEM, keys PKCS #8 PEM stored as secrets). */
export const LocalCaKeys = {
  rootCert: 'ca/local/root.crt',
  rootKey: 'ca/local/root.key',
  intermediateCert: 'ca/local/intermediate.crt',
  intermediateKey: 'ca/local/intermediate.key',
} as const;

/** The storage lock taken while the local root or intermediate is created or renewed. */
export const LOCAL_CA_LOCK = 'local-ca';

/** Options of {@link LocalCa.open}. */
export interface LocalCaOptions {
  /** The clock, ms since the epoch (default `Date.now`): every validity and renewal decision reads it. */
  now?: () => number;
  /** Lifetime of a newly created root, ms (default 3,650 days). */
  rootLifetimeMs?: number;
  /** Lifetime of each intermediate, ms (default 7 days); renewed when 1/3 of it is left. */
  intermediateLifetimeMs?: number;
}

/** Options of {@link LocalCa.issue}. */
export interface LocalCaIssueOptions {
  /** Lifetime of the leaf, ms (default 12 hours); capped at the intermediate's notAfter. */
  lifetimeMs?: number;
}

/** A leaf certificate issued by the local CA, ready for `tls.createSecureContext`. */
export interface LocalCaCertificate {
  /** The leaf then the intermediate, PEM: the chain a server sends (the root is not included). */
  certPem: string;
  /** The leaf's ECDSA P-256 private key, PKCS #8 PEM. */
  keyPem: string;
  /** The names certified, normalised (lowercase, ASCII, no trailing dot, duplicates removed), in order. */
  names: string[];
  /** First instant the leaf is valid (5 minutes before issuance, for clock skew). */
  notBefore: Date;
  /** Last instant the leaf is valid. */
  notAfter: Date;
}

/**
 * The local certificate authority behind `tls internal` and names with no
 * public suffix: a root (~10 years) and an intermediate (7 days, renewed when
 * 1/3 of its life is left) kept in a {@link CertificateStorage} under
 * `ca/local/`, and short-lived ECDSA P-256 leaves chained to the current
 * intermediate.
 *
 * A stored root is always loaded, never regenerated: browsers and systems
 * trust it by its key. A stored file that does not parse is an error
 * (`CERT_LOCAL_CA_INVALID`) and is left as it is. Creating or renewing takes
 * the storage lock {@link LOCAL_CA_LOCK} and re-reads storage inside it, so
 * processes sharing a storage end up with one root.
 */
export class LocalCa {
  private readonly storage: CertificateStorage;
  private readonly now: () => number;
  private readonly intermediateLifetimeMs: number;
  private readonly root: Authority;
  private intermediate: StoredAuthority;
  /** What signs leaves: the current intermediate as node:crypto needs it (rebuilt when it is renewed). */
  private signer: LeafSigner;
  private renewing: Promise<void> | undefined;

  /** The root certificate, PEM: what `proxyd trust` installs and clients verify against. */
  readonly rootPem: string;

  private constructor(
    storage: CertificateStorage,
    now: () => number,
    intermediateLifetimeMs: number,
    root: StoredAuthority,
    intermediate: StoredAuthority,
  ) {
    this.storage = storage;
    this.now = now;
    this.intermediateLifetimeMs = intermediateLifetimeMs;
    this.root = root;
    this.rootPem = root.pem;
    this.intermediate = intermediate;
    this.signer = leafSignerOf(intermediate);
  }

  /**
   * Loads the local CA from `storage`, creating the root when none is stored
   * and the intermediate when none is stored, it does not chain to the root
   * or match its key, or it needs renewal at `now()`. Rejects with
   * `CERT_LOCAL_CA_INVALID` when a stored file does not parse (or a root key
   * does not match its certificate) and `CERT_LOCAL_CA_INCOMPLETE` when only
   * half of the root is stored.
   */
  static async open(storage: CertificateStorage, options: LocalCaOptions = {}): Promise<LocalCa> {
    const now = options.now ?? Date.now;
    const root = await loadOrCreateRoot(storage, now, options.rootLifetimeMs ?? ROOT_LIFETIME_MS);
    const lifetimeMs = options.intermediateLifetimeMs ?? INTERMEDIATE_LIFETIME_MS;
    const intermediate = await loadOrCreateIntermediate(storage, root, now, lifetimeMs);
    return new LocalCa(storage, now, lifetimeMs, root, intermediate);
  }

  /** The current intermediate certificate, PEM (renewed by {@link LocalCa.issue} when due). */
  get intermediatePem(): string {
    return this.intermediate.pem;
  }

  /**
   * Issues a leaf for `names` (DNS names, `*.` wildcards, IPv4 and IPv6
   * addresses; at least one) with a fresh key, valid for `lifetimeMs`
   * (default 12 h). Renews the intermediate first when it needs renewal at
   * `now()`, so the leaf always chains to a current intermediate. Rejects
   * with `CERT_LOCAL_CA_INVALID_NAME` for a name that is none of these.
   */
  async issue(names: readonly string[], options: LocalCaIssueOptions = {}): Promise<LocalCaCertificate> {
    const normalised = normaliseNames(names);
    await this.renewIntermediateIfDue();
    const now = this.now();
    const intermediatePem = this.intermediate.pem;
    const leaf = await signLeaf(
      this.signer,
      normalised,
      now - BACKDATE_MS,
      now + (options.lifetimeMs ?? LEAF_LIFETIME_MS),
    );
    return {
      certPem: `${leaf.certPem}\n${intermediatePem}`,
      keyPem: leaf.keyPem,
      names: normalised,
      notBefore: new Date(leaf.notBefore),
      notAfter: new Date(leaf.notAfter),
    };
  }

  /**
   * One renewal at a time in this process; the storage lock covers other
   * processes. One attempt per call, not a loop: an intermediate capped by
   * a root near its end is due from birth.
   */
  private async renewIntermediateIfDue(): Promise<void> {
    if (needsRenewal(this.intermediate.certificate, this.now())) {
      if (this.renewing === undefined) {
        this.renewing = loadOrCreateIntermediate(this.storage, this.root, this.now, this.intermediateLifetimeMs)
          .then((intermediate) => {
            this.intermediate = intermediate;
            this.signer = leafSignerOf(intermediate);
          })
          .finally(() => {
            this.renewing = undefined;
          });
      }
      await this.renewing;
    }
  }
}

/** A CA certificate with its key as WebCrypto and as node:crypto use it, and its PEM. */
type StoredAuthority = Authority & { pem: string; signingKey: KeyObject };

/** The intermediate as {@link signLeaf} needs it: a KeyObject, its subject's DER and its key identifier. */
function leafSignerOf(intermediate: StoredAuthority): LeafSigner {
  const certificate = intermediate.certificate;
  return {
    key: intermediate.signingKey,
    subjectDer: subjectNameDer(Buffer.from(certificate.rawData)),
    keyId: keyIdOf(Buffer.from(certificate.publicKey.rawData)),
    notAfter: certificate.notAfter.getTime(),
  };
}

/** Both halves of a stored pair as text, or null for a missing half. */
async function loadPair(
  storage: CertificateStorage,
  certKey: string,
  keyKey: string,
): Promise<{ cert: string | null; key: string | null }> {
  const [cert, key] = await Promise.all([storage.load(certKey), storage.load(keyKey)]);
  return { cert: cert?.toString('utf8') ?? null, key: key?.toString('utf8') ?? null };
}

/**
 * Parses a stored certificate and key; `keyMatches` says whether the key is
 * the certificate's (the caller decides what a mismatch means).
 */
async function parseAuthority(
  certPem: string,
  keyPem: string,
  what: string,
): Promise<StoredAuthority & { keyMatches: boolean }> {
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(certPem);
  } catch (cause) {
    throw new CertificatesError(
      CertificatesErrorCode.LOCAL_CA_INVALID,
      `the stored local ${what} certificate does not parse; fix or remove it`,
      { cause },
    );
  }
  let privateKey: CryptoKey;
  let signingKey: KeyObject;
  let spki: Buffer;
  try {
    privateKey = await importSigningKey(keyPem);
    signingKey = createPrivateKey(keyPem);
    spki = publicKeyOf(keyPem);
  } catch (cause) {
    throw new CertificatesError(
      CertificatesErrorCode.LOCAL_CA_INVALID,
      `the stored local ${what} key does not parse as an ECDSA P-256 private key; fix or remove it`,
      { cause },
    );
  }
  const keyMatches = spki.equals(Buffer.from(certificate.publicKey.rawData));
  return { certificate, privateKey, signingKey, pem: certificate.toString('pem'), keyMatches };
}

/** Runs `fn` holding the local CA's storage lock. */
async function withLock<T>(storage: CertificateStorage, fn: () => Promise<T>): Promise<T> {
  const lock = await storage.lock(LOCAL_CA_LOCK);
  try {
    return await fn();
  } finally {
    await lock.release();
  }
}

async function loadOrCreateRoot(storage: CertificateStorage, now: () => number, lifetimeMs: number) {
  const read = async (): Promise<StoredAuthority | null> => {
    const { cert, key } = await loadPair(storage, LocalCaKeys.rootCert, LocalCaKeys.rootKey);
    if (cert !== null && key !== null) {
      const { keyMatches, ...root } = await parseAuthority(cert, key, 'root');
      if (keyMatches) return root;
      throw new CertificatesError(
        CertificatesErrorCode.LOCAL_CA_INVALID,
        `the stored local root key (${LocalCaKeys.rootKey}) is not the key of the stored root certificate (${LocalCaKeys.rootCert})`,
      );
    }
    if (cert === null && key === null) return null;
    throw new CertificatesError(
      CertificatesErrorCode.LOCAL_CA_INCOMPLETE,
      `the local root ${cert === null ? 'certificate' : 'key'} (${cert === null ? LocalCaKeys.rootCert : LocalCaKeys.rootKey}) is missing while its pair is stored; restore it or remove both to create a new root (which clients must trust again)`,
    );
  };
  // A writer stores the key then the certificate; a half seen outside the lock is re-read inside it.
  const first = await read().catch(() => undefined);
  if (first !== undefined && first !== null) return first;
  return withLock(storage, async () => {
    const stored = await read();
    if (stored !== null) return stored;
    const keys = await generateKeyPair();
    const certificate = await createRootCertificate(keys, now(), lifetimeMs);
    const pem = certificate.toString('pem');
    await storage.store(LocalCaKeys.rootKey, await exportPrivateKeyPem(keys.privateKey), { secret: true });
    await storage.store(LocalCaKeys.rootCert, pem);
    return { certificate, privateKey: keys.privateKey, signingKey: KeyObject.from(keys.privateKey), pem };
  });
}

/** Whether `intermediate` was signed by the root and is valid for issuing at `now`. */
async function usable(intermediate: StoredAuthority, root: Authority, now: number): Promise<boolean> {
  const signedByRoot = await intermediate.certificate.verify(
    { publicKey: root.certificate.publicKey, signatureOnly: true },
    crypto,
  );
  return (
    signedByRoot &&
    intermediate.certificate.issuer === root.certificate.subject &&
    !needsRenewal(intermediate.certificate, now)
  );
}

async function loadOrCreateIntermediate(
  storage: CertificateStorage,
  root: Authority,
  now: () => number,
  lifetimeMs: number,
): Promise<StoredAuthority> {
  // A stored intermediate that does not parse is an error; one that is
  // merely half-stored, due, or from another root is replaced: it is
  // derived state the root can sign again.
  const read = async (): Promise<StoredAuthority | null> => {
    const { cert, key } = await loadPair(storage, LocalCaKeys.intermediateCert, LocalCaKeys.intermediateKey);
    if (cert === null || key === null) return null;
    const { keyMatches, ...stored } = await parseAuthority(cert, key, 'intermediate');
    // A mismatch is a renewal half-written by another process (key first) or a stray file: re-read under the lock.
    if (!keyMatches) return null;
    return (await usable(stored, root, now())) ? stored : null;
  };
  const first = await read();
  if (first !== null) return first;
  return withLock(storage, async () => {
    const stored = await read();
    if (stored !== null) return stored;
    const keys = await generateKeyPair();
    const certificate = await createIntermediateCertificate(root, keys.publicKey, now(), lifetimeMs);
    const pem = certificate.toString('pem');
    await storage.store(LocalCaKeys.intermediateKey, await exportPrivateKeyPem(keys.privateKey), { secret: true });
    await storage.store(LocalCaKeys.intermediateCert, pem);
    return { certificate, privateKey: keys.privateKey, signingKey: KeyObject.from(keys.privateKey), pem };
  });
}

const DNS_LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/**
 * Normalises the names of a leaf: IPs as given (brackets removed), DNS names
 * lowercased, IDNs to A-labels, trailing dot removed, duplicates dropped.
 */
export function normaliseNames(names: readonly string[]): string[] {
  const out: string[] = [];
  for (const raw of names) {
    const name = normaliseName(raw);
    if (!out.includes(name)) out.push(name);
  }
  if (out.length === 0) {
    throw new CertificatesError(CertificatesErrorCode.LOCAL_CA_INVALID_NAME, 'a certificate needs at least one name');
  }
  return out;
}

function normaliseName(raw: string): string {
  let name = raw.trim();
  if (name.startsWith('[') && name.endsWith(']')) name = name.slice(1, -1);
  if (isIP(name) !== 0) return name;
  const wildcard = name.startsWith('*.');
  const host = domainToASCII((wildcard ? name.slice(2) : name).replace(/\.$/, ''));
  const labels = host.split('.');
  if (host === '' || host.length > 253 || !labels.every((label) => DNS_LABEL.test(label))) {
    throw new CertificatesError(
      CertificatesErrorCode.LOCAL_CA_INVALID_NAME,
      `${JSON.stringify(raw)} is not a DNS name, a "*." wildcard or an IP address`,
    );
  }
  return wildcard ? `*.${host}` : host;
}
