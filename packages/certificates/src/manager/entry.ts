import type { IssuedCertificate, ObtainOptions, RenewalInfoAnswer } from '../acme/acme-issuer.js';
import type { ChallengeSolver, ChallengeType } from '../acme/challenge-solver.js';
import type { DnsStep } from '../dns/dns01-solver.js';
import { ariCertId } from '../schedule/ari.js';
import type { BackoffState } from '../schedule/backoff.js';
import type { TimerHandle } from './scheduler.js';
import type { AriMetadata, CertificateInfo } from './stored-certificate.js';

/** A name the daemon wants HTTPS for, and who should certify it. */
export interface ManagedName {
  /** A DNS name, a `*.` wildcard or an IP address (compared lowercase). */
  name: string;
  /** `acme` (the configured CAs, in order) or `internal` (the local CA). */
  issuer: 'acme' | 'internal';
  /**
   * Publishes this name's DNS-01 records (a `Dns01Solver` over the site's
   * DNS provider). With one, an `acme` name is validated with DNS-01 only
   * (a wildcard needs it); without, HTTP-01 and TLS-ALPN-01 as configured.
   */
  dns?: ChallengeSolver | undefined;
}

/**
 * What the manager needs of an ACME issuer: `AcmeIssuer` fits as it is
 * (built with the manager's `ChallengeTable` as its solver).
 */
export interface ManagedAcmeIssuer {
  /** `acme/<ca>/<email>`: the account, the key of the order rate limit, and (its `<ca>`) the certificates' storage folder. */
  readonly accountFolder: string;
  /** Obtains a certificate for `names`; throws a `CertificatesError` saying what failed. */
  obtain(names: readonly string[], options?: ObtainOptions): Promise<IssuedCertificate>;
  /** The CA's renewal information for a certificate it issued (RFC 9773); null when it offers none. Absent: no ARI. */
  renewalInfo?: ((certPem: string) => Promise<RenewalInfoAnswer | null>) | undefined;
}

/** The structured logger the manager writes to (pino fits; the daemon passes one with target `proxy::tls`). */
export interface CertificateLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** The logger used when none is given: writes nowhere. */
export const silentLogger: CertificateLogger = { info() {}, warn() {}, error() {} };

/**
 * One managed name's state: the record every phase (obtain, maintain,
 * serve, jobs, summary) reads and writes. The manager owns the map of them.
 */
export interface Entry {
  readonly name: string;
  readonly kind: 'acme' | 'internal';
  /** Obtained at a handshake (on-demand TLS): kept when `setNames` does not list it. */
  readonly onDemand: boolean;
  /** The served certificate as the index keeps it (its PEMs and context are in the certificate cache), or null. */
  current: CertificateInfo | null;
  /** The CA's ARI state for `current`, or null (not asked yet, no ARI, local CA). */
  ari: AriMetadata | null;
  polling: boolean;
  backoff: BackoffState | null;
  /** A gave-up state restored from storage still gets one attempt (a restart or a re-added name asks anew). */
  retryOnce: boolean;
  validationFailures: number[];
  /** An order rate limit delays the next attempt until then. */
  rateLimitedUntil: number | null;
  /** Why this name is never attempted (an ACME wildcard without DNS-01), or null. */
  unsupported: string | null;
  /** Publishes DNS-01 records for this name, or undefined (HTTP-01/TLS-ALPN-01). */
  dns: ChallengeSolver | undefined;
  /** The challenge type of the last ACME order tried for this name, or null. */
  challenge: ChallengeType | null;
  /** The DNS step the last attempt failed at, or null. */
  dnsStep: DnsStep | null;
  /** The attempt running now, or null. */
  attempt: Promise<void> | null;
  timer: TimerHandle | undefined;
  removed: boolean;
  /** The last storage problem logged for this name (each is logged once). */
  loggedStorageProblem: string | null;
}

/** A managed name's state before anything is known about it. */
export function createEntry(name: string, kind: Entry['kind'], onDemand: boolean): Entry {
  return {
    name,
    kind,
    onDemand,
    current: null,
    ari: null,
    polling: false,
    backoff: null,
    retryOnce: false,
    validationFailures: [],
    rateLimitedUntil: null,
    unsupported: null,
    dns: undefined,
    challenge: null,
    dnsStep: null,
    attempt: null,
    timer: undefined,
    removed: false,
    loggedStorageProblem: null,
  };
}

/** `acme/<ca>/<email>` → `<ca>`: the folder of that CA's certificates. */
export function issuerIdOf(issuer: ManagedAcmeIssuer): string {
  return issuer.accountFolder.split('/')[1] ?? issuer.accountFolder;
}

/** An error's message (or the thrown value as a string). */
export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** The certificate's RFC 9773 cert ID, or null when it has none (no authority key identifier, unparsable). */
export function safeAriCertId(certPem: string): string | null {
  try {
    return ariCertId(certPem);
  } catch {
    return null;
  }
}

/** Orders `a` before `b` by name (the order of `served()` and `status()`). */
export function byName(a: { name: string }, b: { name: string }): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}
