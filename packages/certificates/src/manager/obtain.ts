import type { ChallengeType } from '../acme/challenge-solver.js';
import { CertificatesError, CertificatesErrorCode } from '../errors.js';
import type { LocalCa } from '../local-ca/local-ca.js';
import { recordValidationFailure, validationHeldUntil } from '../schedule/validation-hold.js';
import { ChallengePreference } from './challenge-preference.js';
import { type CertificateLogger, type Entry, issuerIdOf, type ManagedAcmeIssuer, messageOf } from './entry.js';
import { type Jobs, RateLimited } from './jobs.js';
import { LOCAL_ISSUER_ID, type LoadedCertificate, loadedCertificate } from './stored-certificate.js';
import { WorkQueue } from './work-queue.js';

/** Orders placed with ACME CAs by result: `valid` (issued), `invalid` (the CA refused: a problem document), `error` (network, TLS, timeout, other). */
export type OrderResult = 'valid' | 'invalid' | 'error';

/** A refusal by the CA: what the `invalid` order counter counts. */
const REFUSED: ReadonlySet<string> = new Set([
  CertificatesErrorCode.ACME_PROBLEM,
  CertificatesErrorCode.ACME_VALIDATION_FAILED,
  CertificatesErrorCode.ACME_ORDER_FAILED,
  CertificatesErrorCode.ACME_CHALLENGE_UNAVAILABLE,
]);
/** Failures of one challenge type: the same attempt tries the next type. */
const CHALLENGE_FAILED: ReadonlySet<string> = new Set([
  CertificatesErrorCode.ACME_VALIDATION_FAILED,
  CertificatesErrorCode.ACME_CHALLENGE_UNAVAILABLE,
  CertificatesErrorCode.ACME_CHALLENGE_SETUP_FAILED,
]);

/** Every ACME CA failed for a name: each one's error, in order. */
export class AttemptFailed extends Error {
  constructor(readonly failures: { id: string; error: unknown }[]) {
    super(
      failures.length === 1
        ? messageOf(failures[0]?.error)
        : failures.map((f) => `${f.id}: ${messageOf(f.error)}`).join('; '),
    );
  }
}

/** Options of {@link Obtainer}. */
export interface ObtainerOptions {
  /** The ACME CAs, in order. */
  issuers: readonly ManagedAcmeIssuer[];
  /** The local CA, or a function opening it (called at the first internal name; again after a failure). */
  localCa: LocalCa | (() => Promise<LocalCa>) | undefined;
  /** The challenge types, in order of preference. */
  challenges: readonly ChallengeType[];
  keyType: 'ecdsa' | 'rsa';
  now: () => number;
  log: CertificateLogger;
  /** Where order slots are taken (the per-account rate limit). */
  jobs: Jobs;
  /** Orders at once per ACME CA (a name that falls back to the next CA waits for a place there too). */
  acmeConcurrency: number;
}

/**
 * Orders one certificate from an issuer (certmagic's obtain in
 * `config.go`): the local CA for `internal` names; for `acme` names the CAs
 * in order, per CA the challenge types in order (DNS-01 only for a name
 * with a DNS solver), the first that issues wins. Counts orders by result.
 * Neither locks nor stores: the maintenance loop does.
 */
export class Obtainer {
  readonly #issuers: readonly ManagedAcmeIssuer[];
  readonly #localCaSource: LocalCa | (() => Promise<LocalCa>) | undefined;
  #localCa: Promise<LocalCa> | undefined;
  readonly #preference: ChallengePreference;
  readonly #keyType: 'ecdsa' | 'rsa';
  readonly #now: () => number;
  readonly #log: CertificateLogger;
  readonly #jobs: Jobs;
  readonly #orders: Record<OrderResult, number> = { valid: 0, invalid: 0, error: 0 };
  readonly #acmeConcurrency: number;
  /** One queue per ACME CA: orders at once stay within `acmeConcurrency` with fallbacks too. */
  readonly #caQueues = new Map<string, WorkQueue>();

  constructor(options: ObtainerOptions) {
    this.#issuers = options.issuers;
    this.#localCaSource = options.localCa;
    this.#preference = new ChallengePreference(options.challenges);
    this.#keyType = options.keyType;
    this.#now = options.now;
    this.#log = options.log;
    this.#jobs = options.jobs;
    this.#acmeConcurrency = options.acmeConcurrency;
  }

  /** ACME orders placed so far, by result (a copy). */
  orderCounts(): Record<OrderResult, number> {
    return { ...this.#orders };
  }

  /** The issuer ids a name's certificate may be stored under, in order of preference. */
  issuerIds(entry: Entry): string[] {
    if (entry.kind === 'internal') return [LOCAL_ISSUER_ID];
    return [...new Set(this.#issuers.map(issuerIdOf))];
  }

  /** The ACME account an attempt for `entry` orders from first, or null (the local CA, no CA configured). */
  firstAccount(entry: Entry): string | null {
    return entry.kind === 'acme' ? (this.#issuers[0]?.accountFolder ?? null) : null;
  }

  /** The issuer that issued `certificate` and can answer renewalInfo for it, if any. */
  ariIssuer(entry: Entry, certificate: { issuerId: string }): ManagedAcmeIssuer | undefined {
    if (entry.kind !== 'acme') return undefined;
    return this.#issuers.find((issuer) => issuerIdOf(issuer) === certificate.issuerId && issuer.renewalInfo);
  }

  /** An ACME wildcard without a DNS provider is never attempted: logged once, shown as failing. */
  markUnsupported(entry: Entry): void {
    const wildcardWithoutDns = entry.kind === 'acme' && entry.name.startsWith('*.') && entry.dns === undefined;
    if (!wildcardWithoutDns) {
      entry.unsupported = null;
      return;
    }
    entry.unsupported = `${entry.name}: an ACME certificate for a wildcard needs the DNS-01 challenge: configure a DNS provider (tls { dns <provider> … } in the site, or acme_dns in the global options), use "tls internal", or list the names`;
    this.#log.error(
      { name: entry.name, code: CertificatesErrorCode.ACME_WILDCARD_UNSUPPORTED },
      `no certificate for ${entry.name}: ${entry.unsupported}`,
    );
  }

  /**
   * Issues from the local CA, or from the ACME CAs in order (the first that
   * succeeds wins). Throws {@link RateLimited} when the account's order
   * limit says wait before any order was tried, {@link AttemptFailed} with
   * each CA's error otherwise.
   */
  async obtain(entry: Entry): Promise<LoadedCertificate> {
    if (entry.kind === 'internal') {
      const ca = await this.#openLocalCa();
      const leaf = await ca.issue([entry.name]);
      return loaded(LOCAL_ISSUER_ID, LOCAL_ISSUER_ID, leaf.certPem, leaf.keyPem, leaf.notBefore, leaf.notAfter);
    }
    if (this.#issuers.length === 0) {
      throw new CertificatesError(
        CertificatesErrorCode.ISSUER_UNAVAILABLE,
        `no ACME CA is configured for ${entry.name}`,
      );
    }
    const failures: { id: string; error: unknown }[] = [];
    for (const issuer of this.#issuers) {
      const ca = issuerIdOf(issuer);
      // With a DNS provider, DNS-01 only: the site asked for it (a wildcard or a host the CA cannot reach).
      const challenges: ChallengeType[] = entry.dns === undefined ? this.#preference.order(ca) : ['dns-01'];
      for (const challenge of challenges) {
        const retryAt = this.#jobs.orderSlot(issuer.accountFolder);
        if (retryAt !== null) {
          if (failures.length === 0) throw new RateLimited(retryAt);
          throw new AttemptFailed(failures);
        }
        // `replaces` (RFC 9773 §5) names the served certificate, and only to the CA that issued it.
        const replaces = entry.current?.issuerId === ca && entry.ari?.certId ? entry.ari.certId : undefined;
        entry.challenge = challenge;
        try {
          const issued = await this.#caQueue(ca).run(entry.name, () =>
            issuer.obtain([entry.name], {
              challenge,
              keyType: this.#keyType,
              ...(replaces === undefined ? {} : { replaces }),
              ...(entry.dns === undefined ? {} : { dnsSolver: entry.dns }),
            }),
          );
          this.#orders.valid += 1;
          if (challenge !== 'dns-01') this.#preference.succeeded(ca, challenge);
          return loaded(
            ca,
            issued.directoryUrl,
            issued.certificatePem,
            issued.privateKeyPem,
            issued.notBefore,
            issued.notAfter,
          );
        } catch (err) {
          const code = err instanceof CertificatesError ? err.code : undefined;
          this.#orders[code !== undefined && REFUSED.has(code) ? 'invalid' : 'error'] += 1;
          failures.push({ id: `${ca} (${challenge})`, error: err });
          if (code === CertificatesErrorCode.ACME_VALIDATION_FAILED) {
            const now = this.#now();
            entry.validationFailures = recordValidationFailure(entry.validationFailures, now);
            if (validationHeldUntil(entry.validationFailures, now) !== null) throw new AttemptFailed(failures);
          }
          // Only a challenge that failed tries the next type; a CA that failed otherwise hands over to the next CA.
          if (code === undefined || !CHALLENGE_FAILED.has(code)) break;
        }
      }
    }
    throw new AttemptFailed(failures);
  }

  #caQueue(ca: string): WorkQueue {
    let queue = this.#caQueues.get(ca);
    if (queue === undefined) {
      queue = new WorkQueue(this.#acmeConcurrency);
      this.#caQueues.set(ca, queue);
    }
    return queue;
  }

  async #openLocalCa(): Promise<LocalCa> {
    const source = this.#localCaSource;
    if (source === undefined) {
      throw new CertificatesError(CertificatesErrorCode.ISSUER_UNAVAILABLE, 'no local CA is configured');
    }
    if (typeof source !== 'function') return source;
    this.#localCa ??= source();
    try {
      return await this.#localCa;
    } catch (err) {
      this.#localCa = undefined;
      throw err;
    }
  }
}

/** An issued certificate as the manager holds it: PEMs, issuer, validity and its TLS context (built when read). */
function loaded(
  issuerId: string,
  issuer: string,
  certPem: string,
  keyPem: string,
  notBefore: number | Date,
  notAfter: number | Date,
): LoadedCertificate {
  return loadedCertificate({ certPem, keyPem, issuerId, issuer, notBefore: +notBefore, notAfter: +notAfter });
}
