import { createSecureContext, type SecureContext } from 'node:tls';
import type { CertificateStore, ChallengeResponder } from '@proxyd/proxy-core';
import type { IssuedCertificate, ObtainOptions, RenewalInfoAnswer } from '../acme/acme-issuer.js';
import type { ChallengeSolver, ChallengeType } from '../acme/challenge-solver.js';
import { AcmeProblemError } from '../acme/problem.js';
import { type DnsStep, dnsStepOf } from '../dns/dns01-solver.js';
import { CertificatesError, CertificatesErrorCode } from '../errors.js';
import type { LocalCa } from '../local-ca/local-ca.js';
import { ariCertId, nextRenewalInfoPoll, selectAriRenewalTime } from '../schedule/ari.js';
import { type BackoffState, recordFailure } from '../schedule/backoff.js';
import { OrderRateLimiter } from '../schedule/order-rate-limiter.js';
import { RENEWAL_CHECK_INTERVAL_MS, type RenewalDecision, renewalDecision } from '../schedule/renewal-window.js';
import { type CertificateSummary, summarizeCertificate } from '../schedule/status.js';
import { recordValidationFailure, validationHeldUntil } from '../schedule/validation-hold.js';
import type { CertificateStorage, StorageLock } from '../storage/storage.js';
import { ChallengePreference, DEFAULT_CHALLENGE_ORDER } from './challenge-preference.js';
import { ChallengeTable } from './challenge-table.js';
import {
  askEndpoint,
  isOnDemandCandidate,
  ON_DEMAND_ASK_TIMEOUT_MS,
  ON_DEMAND_REFUSAL_TTL_MS,
  type OnDemandIssuer,
  type OnDemandOptions,
  RefusalMemory,
} from './on-demand.js';
import { realScheduler, type Scheduler, type TimerHandle } from './scheduler.js';
import {
  type AriMetadata,
  type CertificateMetadata,
  LOCAL_ISSUER_ID,
  type LoadedCertificate,
  loadCertificate,
  loadMetadata,
  storeCertificate,
  storeMetadata,
} from './stored-certificate.js';

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
 * (built with the manager's {@link ChallengeTable} as its solver).
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

/** What {@link CertificateManager.onChange} listeners get: a certificate was installed or replaced. */
export interface CertificateChange {
  name: string;
  /** Who issued it (the CA's directory URL, or `local`). */
  issuer: string;
  /** Its notAfter, epoch ms. */
  notAfter: number;
  /** It replaced a certificate already served for this name. */
  replaced: boolean;
}

/** A certificate the manager serves, as {@link CertificateManager.served} lists it. */
export interface ServedCertificate {
  name: string;
  /** The chain, PEM, leaf first. */
  cert: string;
  /** The leaf's key, PEM. */
  key: string;
  /** notAfter, epoch ms. */
  notAfter: number;
}

/** Orders placed with ACME CAs by result: `valid` (issued), `invalid` (the CA refused: a problem document), `error` (network, TLS, timeout, other). */
export type OrderResult = 'valid' | 'invalid' | 'error';

/** Options of {@link CertificateManager}. */
export interface CertificateManagerOptions {
  /** Where certificates, keys and metadata live; its locks serialise orders across processes. */
  storage: CertificateStorage;
  /** The local CA for `internal` names, or a function opening it (called once, at the first internal name; again after a failure). */
  localCa?: LocalCa | (() => Promise<LocalCa>);
  /** The ACME CAs, in order: the first that issues wins, the next is tried when one fails. */
  acmeIssuers?: readonly ManagedAcmeIssuer[];
  /** The challenge table the ACME issuers were given as their solver (default a new one). */
  challengeTable?: ChallengeTable;
  /**
   * The ACME challenge types to use, in order of preference (default
   * `http-01`, then `tls-alpn-01`); e.g. only `http-01` when there is no
   * HTTPS listener. (A `ChallengeTable` here is the former spelling of
   * {@link challengeTable}, accepted until the daemon moves.)
   */
  challenges?: readonly ChallengeType[] | ChallengeTable;
  /** Leaf key type (default `ecdsa`, P-256). */
  keyType?: 'ecdsa' | 'rsa';
  /** On-demand TLS: certificates at the first handshake for names a route allows and `ask` agrees to. Default off. */
  onDemand?: OnDemandOptions;
  /** The clock, epoch ms (default `Date.now`). */
  now?: () => number;
  /** A random source in [0, 1) for backoff jitter (default `Math.random`). */
  random?: () => number;
  /** Timers (default real, unref-ed timers). */
  scheduler?: Scheduler;
  /** Where failures and issuances are logged (default: nowhere). */
  logger?: CertificateLogger;
  /** How often every certificate is checked for renewal, ms (default {@link RENEWAL_CHECK_INTERVAL_MS}, 10 min). */
  checkIntervalMs?: number;
  /** How long to wait for a name's storage lock, ms (default the storage's, 60 s). */
  lockTimeoutMs?: number;
}

/** One managed name's state. */
interface Entry {
  readonly name: string;
  readonly kind: 'acme' | 'internal';
  /** Obtained at a handshake (on-demand TLS): kept when `setNames` does not list it. */
  readonly onDemand: boolean;
  current: LoadedCertificate | null;
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

/** What storage holds for a name: the newest usable certificate, its metadata, and the first file that does not parse. */
interface StorageRead {
  certificate: LoadedCertificate | null;
  meta: CertificateMetadata | null;
  /** A stored file that does not parse (or cannot be read): nothing is obtained over it. */
  error: unknown;
}

const silent: CertificateLogger = { info() {}, warn() {}, error() {} };
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
/** After a failed renewalInfo request, ask again after this long, ms (the last known window stays in force). */
const RENEWAL_INFO_RETRY_MS = 60 * 60 * 1000;

/** Thrown inside an attempt when the order rate limit says wait: not a failure. */
class RateLimited {
  constructor(readonly retryAt: number) {}
}

/**
 * Keeps certificates for a changing set of names, never blocking traffic
 * (certmagic's `maintain.go`/`async.go` in one class); see README.md for
 * the full contract:
 *
 * - {@link setNames}: a stored, unexpired certificate is served at once and
 *   the CA is not contacted; a missing one is obtained in the background
 *   under the storage lock `cert-<name>`, storage re-read inside it.
 * - Every `checkIntervalMs` each certificate is checked: renewal at 1/3 of
 *   its lifetime left, or at the time chosen in the CA's ARI window, and at
 *   1/20 left regardless; a renewed one replaces the served context in place.
 * - A failure never touches other names or the served certificate: backoff
 *   per name, `Retry-After` capped, a validation hold, 10 orders per 10 s
 *   per account, the next CA of the list, the other challenge type.
 * - On-demand TLS ({@link CertificateManagerOptions.onDemand}): a name a
 *   route allows and the ask endpoint agrees to is obtained at its first
 *   handshake.
 *
 * It is the data plane's `CertificateStore` (by SNI, exact name or
 * `*.parent`) and `ChallengeResponder` (HTTP-01), and answers TLS-ALPN-01
 * handshakes through {@link alpnContextFor}.
 */
export class CertificateManager implements CertificateStore, ChallengeResponder {
  /** The challenges presented now; give it to every `AcmeIssuer` as `solver`. */
  readonly challengeTable: ChallengeTable;
  readonly #storage: CertificateStorage;
  readonly #issuers: readonly ManagedAcmeIssuer[];
  readonly #localCaSource: LocalCa | (() => Promise<LocalCa>) | undefined;
  #localCa: Promise<LocalCa> | undefined;
  readonly #preference: ChallengePreference;
  readonly #keyType: 'ecdsa' | 'rsa';
  readonly #now: () => number;
  readonly #random: () => number;
  readonly #scheduler: Scheduler;
  readonly #log: CertificateLogger;
  readonly #checkIntervalMs: number;
  readonly #lockTimeoutMs: number | undefined;
  readonly #rateLimiter: OrderRateLimiter;
  readonly #onDemand: OnDemandOptions | undefined;
  readonly #refusals: RefusalMemory;
  readonly #onDemandPending = new Map<string, Promise<SecureContext | null>>();
  readonly #entries = new Map<string, Entry>();
  readonly #contexts = new Map<string, SecureContext>();
  readonly #listeners = new Set<(change: CertificateChange) => void>();
  readonly #orders: Record<OrderResult, number> = { valid: 0, invalid: 0, error: 0 };
  readonly #pending = new Set<Promise<unknown>>();
  #tick: TimerHandle | undefined;
  #closed = false;
  readonly #closedSignal: Promise<null>;
  #signalClosed: () => void = () => {};

  constructor(options: CertificateManagerOptions) {
    this.#storage = options.storage;
    this.#issuers = options.acmeIssuers ?? [];
    this.#localCaSource = options.localCa;
    const legacyTable = options.challenges instanceof ChallengeTable ? options.challenges : undefined;
    this.challengeTable = options.challengeTable ?? legacyTable ?? new ChallengeTable();
    this.#preference = new ChallengePreference(
      options.challenges === undefined || options.challenges instanceof ChallengeTable
        ? DEFAULT_CHALLENGE_ORDER
        : options.challenges,
    );
    this.#keyType = options.keyType ?? 'ecdsa';
    this.#now = options.now ?? Date.now;
    this.#random = options.random ?? Math.random;
    this.#scheduler = options.scheduler ?? realScheduler;
    this.#log = options.logger ?? silent;
    this.#checkIntervalMs = options.checkIntervalMs ?? RENEWAL_CHECK_INTERVAL_MS;
    this.#lockTimeoutMs = options.lockTimeoutMs;
    this.#rateLimiter = new OrderRateLimiter({ clock: { now: this.#now } });
    this.#onDemand = options.onDemand;
    this.#refusals = new RefusalMemory(options.onDemand?.refusalTtlMs ?? ON_DEMAND_REFUSAL_TTL_MS);
    this.#closedSignal = new Promise<null>((resolve) => {
      this.#signalClosed = () => resolve(null);
    });
    this.#scheduleTick();
  }

  /**
   * Makes `names` the managed set. New names: the stored certificate is
   * loaded and served (resolves once that is done); obtaining or renewing
   * goes on in the background. A name whose issuer kind changed is managed
   * anew. Names no longer in the set are no longer served or maintained
   * (their files stay), except names obtained on demand. Never rejects.
   */
  async setNames(names: readonly ManagedName[]): Promise<void> {
    if (this.#closed) return;
    const wanted = new Map<string, ManagedName>();
    for (const managed of names) wanted.set(managed.name.toLowerCase(), managed);
    const changed: Entry[] = [];
    for (const [name, entry] of this.#entries) {
      const want = wanted.get(name);
      if (want === undefined ? entry.onDemand : want.issuer === entry.kind) {
        // A DNS provider given, changed or taken away applies from the next attempt.
        if (want !== undefined && want.dns !== entry.dns) {
          entry.dns = want.dns;
          this.#markUnsupported(entry);
          changed.push(entry);
        }
        continue;
      }
      this.#remove(entry);
    }
    const added: Entry[] = [];
    for (const [name, { issuer: kind, dns }] of wanted) {
      if (this.#entries.has(name)) continue;
      const entry = this.#newEntry(name, kind, false);
      entry.dns = dns;
      this.#markUnsupported(entry);
      added.push(entry);
    }
    await Promise.all(added.map((entry) => this.#track(this.#loadStored(entry))));
    for (const entry of [...changed, ...added]) this.#check(entry);
  }

  /** An ACME wildcard without a DNS provider is never attempted: logged once, shown as failing. */
  #markUnsupported(entry: Entry): void {
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
   * The context for a handshake with SNI `serverName`: the exact name's
   * certificate, else its `*.parent` wildcard's. Otherwise null, except for
   * on-demand TLS: a name no certificate covers, that no one manages yet,
   * that `onDemand.allowed` gives an issuer for and that the ask endpoint
   * allows, is obtained now and the promise resolves to its context (null
   * when refused or when obtaining failed; it is then retried in the
   * background with backoff). Concurrent handshakes for one name share one
   * ask and one order; a refusal is remembered for `refusalTtlMs`.
   */
  contextFor(serverName: string): SecureContext | null | Promise<SecureContext | null> {
    const name = serverName.toLowerCase();
    const served = this.#served(name);
    if (served !== null || this.#onDemand === undefined || this.#closed) return served;
    const pending = this.#onDemandPending.get(name);
    if (pending !== undefined) return pending;
    if (this.#entries.has(name) || !isOnDemandCandidate(name)) return null;
    let issuer: OnDemandIssuer | null;
    try {
      issuer = this.#onDemand.allowed(name);
    } catch (err) {
      this.#log.error({ name, error: messageOf(err) }, `on-demand check for ${name} threw: ${messageOf(err)}`);
      return null;
    }
    if (issuer === null || this.#refusals.refused(name, this.#now())) return null;
    const promise = (async () => {
      try {
        return await this.#obtainOnDemand(name, issuer);
      } finally {
        this.#onDemandPending.delete(name);
      }
    })();
    this.#onDemandPending.set(name, promise);
    this.#track(promise);
    return promise;
  }

  /** Whether a certificate for `host` is served now (the data plane redirects HTTP to HTTPS only then). */
  has(host: string): boolean {
    return this.#served(host.toLowerCase()) !== null;
  }

  /** The HTTP-01 answer for `token` on `host` (see {@link ChallengeTable.respond}). */
  respond(token: string, host: string): string | null {
    return this.challengeTable.respond(token, host);
  }

  /**
   * The TLS-ALPN-01 challenge context for a handshake with SNI `serverName`
   * that offered ALPN `acme-tls/1`, while a challenge for that name is
   * presented; else null (see {@link ChallengeTable.alpnContextFor}).
   */
  alpnContextFor(serverName: string): SecureContext | null {
    return this.challengeTable.alpnContextFor(serverName);
  }

  /** Calls `listener` whenever a certificate is installed or replaced; returns the unsubscribe function. */
  onChange(listener: (change: CertificateChange) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * The certificates served now, one per name (exact names and `*.parent`
   * wildcards), as PEM: what another process serving the same names (a
   * data-plane worker) loads. Sorted by name.
   */
  served(): ServedCertificate[] {
    const out: ServedCertificate[] = [];
    for (const entry of this.#entries.values()) {
      const pem = this.#servedPem(entry);
      if (pem !== null) out.push(pem);
    }
    return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /**
   * The certificate served for a handshake's `serverName` (its exact name,
   * else the `*.parent` wildcard) as {@link served} lists it, or null.
   */
  servedFor(serverName: string): ServedCertificate | null {
    const name = serverName.toLowerCase();
    const exact = this.#entries.get(name);
    const pem = exact === undefined ? null : this.#servedPem(exact);
    if (pem !== null) return pem;
    const dot = name.indexOf('.');
    const wildcard = dot > 0 ? this.#entries.get(`*${name.slice(dot)}`) : undefined;
    return wildcard === undefined ? null : this.#servedPem(wildcard);
  }

  #servedPem(entry: Entry): ServedCertificate | null {
    const current = entry.current;
    if (current === null || this.#contexts.get(entry.name) !== current.context) return null;
    return { name: entry.name, cert: current.certPem, key: current.keyPem, notAfter: current.notAfter };
  }

  /** Every managed name's summary for `GET /certificates`, sorted by name. */
  status(): CertificateSummary[] {
    const now = this.#now();
    return [...this.#entries.values()]
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .map((entry) => {
        const current = entry.current;
        if (entry.unsupported !== null) {
          return {
            name: entry.name,
            issuer: current?.issuer ?? null,
            notAfter: current?.notAfter ?? null,
            status: 'failing',
            lastError: entry.unsupported,
            nextAttemptAt: null,
            challenge: null,
            dnsStep: null,
          };
        }
        const summary = summarizeCertificate({
          name: entry.name,
          certificate: current === null ? null : { issuer: current.issuer, notAfter: current.notAfter },
          renewal: current === null ? null : this.#renewal(entry, current, now),
          backoff: entry.backoff,
          heldUntil: this.#heldUntil(entry, now),
          inFlight: entry.attempt !== null,
          now,
        });
        return {
          ...summary,
          challenge: entry.challenge,
          dnsStep: summary.lastError === null ? null : entry.dnsStep,
        };
      });
  }

  /** ACME orders placed so far, by result (a copy): the metrics counter. */
  orderCounts(): Record<OrderResult, number> {
    return { ...this.#orders };
  }

  /** Resolves once no load, attempt or renewalInfo request is running (tests and orderly shutdown). */
  async whenIdle(): Promise<void> {
    while (this.#pending.size > 0) await Promise.allSettled([...this.#pending]);
  }

  /**
   * Stops maintenance: timers are cleared, waits for a lock end, nothing
   * new starts. An order already sent to a CA finishes and is stored (its
   * certificate is not wasted), but nothing is scheduled after it.
   */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#signalClosed();
    if (this.#tick !== undefined) this.#scheduler.clearTimeout(this.#tick);
    for (const entry of this.#entries.values()) this.#clearTimer(entry);
  }

  #served(name: string): SecureContext | null {
    const exact = this.#contexts.get(name);
    if (exact !== undefined) return exact;
    const dot = name.indexOf('.');
    return dot > 0 ? (this.#contexts.get(`*${name.slice(dot)}`) ?? null) : null;
  }

  #newEntry(name: string, kind: Entry['kind'], onDemand: boolean): Entry {
    const entry: Entry = {
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
    this.#entries.set(name, entry);
    return entry;
  }

  #remove(entry: Entry): void {
    entry.removed = true;
    this.#clearTimer(entry);
    this.#entries.delete(entry.name);
    this.#contexts.delete(entry.name);
  }

  /** The on-demand path of {@link contextFor}: ask, then manage the name and obtain it in the foreground. */
  async #obtainOnDemand(name: string, issuer: OnDemandIssuer): Promise<SecureContext | null> {
    const options = this.#onDemand as OnDemandOptions;
    const answer = await askEndpoint(options.ask, name, options.fetchTimeoutMs ?? ON_DEMAND_ASK_TIMEOUT_MS);
    if (this.#closed) return null;
    if (!answer.allowed) {
      if (this.#refusals.remember(name, this.#now())) {
        this.#log.warn(
          { name, code: CertificatesErrorCode.ON_DEMAND_REFUSED, reason: answer.reason },
          `on-demand certificate for ${name} refused: ${answer.reason}`,
        );
      }
      return null;
    }
    const entry = this.#entries.get(name) ?? this.#newEntry(name, issuer, true);
    if (entry.current === null && entry.attempt === null) {
      await this.#loadStored(entry);
      this.#check(entry);
    }
    await entry.attempt;
    return this.#served(name);
  }

  #scheduleTick(): void {
    this.#tick = this.#scheduler.setTimeout(() => {
      if (this.#closed) return;
      this.#scheduleTick();
      for (const entry of this.#entries.values()) this.#check(entry);
    }, this.#checkIntervalMs);
  }

  /** The renewal decision for `certificate` of `entry` (its ARI window when it is the served one). */
  #renewal(entry: Entry, certificate: LoadedCertificate, now: number): RenewalDecision {
    const ari = entry.current === certificate ? entry.ari : null;
    return renewalDecision({
      validity: { notBefore: certificate.notBefore, notAfter: certificate.notAfter },
      now,
      checkIntervalMs: this.#checkIntervalMs,
      ari:
        ari?.window && ari.selectedAt !== null
          ? { window: ari.window, certId: ari.certId, selectedAt: ari.selectedAt }
          : null,
    });
  }

  /** The latest of the validation hold and the rate limit, when in the future, else null. */
  #heldUntil(entry: Entry, now: number): number | null {
    const times = [validationHeldUntil(entry.validationFailures, now), entry.rateLimitedUntil].filter(
      (t): t is number => t !== null && t > now,
    );
    return times.length === 0 ? null : Math.max(...times);
  }

  /** Polls renewalInfo when due, and starts an attempt when one is due now, else sets the name's wake-up for the next retry. */
  #check(entry: Entry): void {
    if (this.#closed || entry.removed || entry.attempt !== null || entry.unsupported !== null) return;
    if (entry.backoff?.gaveUp && !entry.retryOnce) return;
    const now = this.#now();
    const current = entry.current;
    if (current !== null) this.#pollRenewalInfoIfDue(entry, current, now);
    const renewal = current === null ? null : this.#renewal(entry, current, now);
    const due = renewal === null || entry.backoff !== null || renewal.renew;
    if (!due) {
      // Due before the next check (a short-lived certificate): wake up for it instead of renewing late.
      if (renewal.dueAt - now < this.#checkIntervalMs) this.#wakeAt(entry, renewal.dueAt, now);
      return;
    }
    const at = Math.max(
      entry.backoff !== null && !entry.backoff.gaveUp ? entry.backoff.nextAttemptAt : now,
      this.#heldUntil(entry, now) ?? now,
    );
    if (at > now) {
      this.#wakeAt(entry, at, now);
      return;
    }
    this.#clearTimer(entry);
    entry.retryOnce = false;
    const attempt = this.#attempt(entry).finally(() => {
      entry.attempt = null;
      this.#check(entry);
    });
    entry.attempt = attempt;
    this.#track(attempt);
  }

  /** Sets the name's one wake-up to `at` (replacing an earlier one). */
  #wakeAt(entry: Entry, at: number, now: number): void {
    this.#clearTimer(entry);
    entry.timer = this.#scheduler.setTimeout(
      () => {
        entry.timer = undefined;
        this.#check(entry);
      },
      Math.min(Math.max(0, at - now), 2 ** 31 - 1),
    );
  }

  #clearTimer(entry: Entry): void {
    if (entry.timer === undefined) return;
    this.#scheduler.clearTimeout(entry.timer);
    entry.timer = undefined;
  }

  #track<T>(promise: Promise<T>): Promise<T> {
    this.#pending.add(promise);
    void promise.finally(() => this.#pending.delete(promise)).catch(() => {});
    return promise;
  }

  /** The issuer ids a name's certificate may be stored under, in order of preference. */
  #issuerIds(entry: Entry): string[] {
    if (entry.kind === 'internal') return [LOCAL_ISSUER_ID];
    return [...new Set(this.#issuers.map(issuerIdOf))];
  }

  /** Logs a storage problem of a name once (until a different one comes). */
  #logStorageProblem(entry: Entry, err: unknown): void {
    const message = messageOf(err);
    if (entry.loggedStorageProblem === message) return;
    entry.loggedStorageProblem = message;
    this.#log.error(
      { name: entry.name, code: (err as { code?: unknown }).code, error: message },
      `stored certificate files of ${entry.name} are not usable: ${message}`,
    );
  }

  /** The newest unexpired stored certificate of a name under any of its issuers, its metadata, and the first unreadable file. */
  async #readStorage(entry: Entry): Promise<StorageRead> {
    const now = this.#now();
    let best: LoadedCertificate | null = null;
    let error: unknown = null;
    const ids = this.#issuerIds(entry);
    for (const id of ids) {
      try {
        const read = await loadCertificate(this.#storage, id, entry.name);
        if (read.state === 'mismatched') {
          this.#logStorageProblem(
            entry,
            new Error(`${read.detail} (an interrupted write?): replaced by the next certificate`),
          );
        } else if (read.state === 'loaded') {
          const loaded = read.certificate;
          if (loaded.notAfter > now && (best === null || loaded.notAfter > best.notAfter)) best = loaded;
        }
      } catch (err) {
        error ??= err;
        this.#logStorageProblem(entry, err);
      }
    }
    let meta: CertificateMetadata | null = null;
    const metaId = best?.issuerId ?? ids[0];
    if (metaId !== undefined) {
      try {
        meta = await loadMetadata(this.#storage, metaId, entry.name);
      } catch (err) {
        error ??= err;
        this.#logStorageProblem(entry, err);
      }
    }
    return { certificate: best, meta, error };
  }

  /** At setNames (or an on-demand name's first handshake): serve the stored certificate, restore its ARI state and failure history. */
  async #loadStored(entry: Entry): Promise<void> {
    const { certificate, meta } = await this.#readStorage(entry);
    if (entry.removed) return;
    if (certificate !== null) this.#install(entry, certificate);
    if (meta === null) return;
    entry.validationFailures = meta.validationFailures;
    if (certificate !== null && meta.ari !== null && meta.ari.certId === safeAriCertId(certificate.certPem)) {
      entry.ari = meta.ari;
    }
    // A failure run recorded after the served certificate still applies (a restart must not hammer the CA).
    if (meta.backoff !== null && (certificate === null || meta.backoff.lastFailureAt > certificate.notBefore)) {
      entry.backoff = meta.backoff;
      entry.retryOnce = meta.backoff.gaveUp;
    }
  }

  #install(entry: Entry, certificate: LoadedCertificate): void {
    const replaced = entry.current !== null;
    entry.current = certificate;
    entry.ari = null;
    this.#contexts.set(entry.name, certificate.context);
    const change = { name: entry.name, issuer: certificate.issuer, notAfter: certificate.notAfter, replaced };
    for (const listener of this.#listeners) {
      try {
        listener(change);
      } catch (err) {
        this.#log.error({ name: entry.name, error: messageOf(err) }, 'certificate change listener threw');
      }
    }
  }

  /** The issuer that issued `certificate` and can answer renewalInfo for it, if any. */
  #ariIssuer(entry: Entry, certificate: LoadedCertificate): ManagedAcmeIssuer | undefined {
    if (entry.kind !== 'acme') return undefined;
    return this.#issuers.find((issuer) => issuerIdOf(issuer) === certificate.issuerId && issuer.renewalInfo);
  }

  /** Starts a renewalInfo request for the served certificate when one is due (RFC 9773 §4.3 polling). */
  #pollRenewalInfoIfDue(entry: Entry, current: LoadedCertificate, now: number): void {
    if (entry.polling) return;
    if (entry.ari !== null && (entry.ari.nextPollAt === null || entry.ari.nextPollAt > now)) return;
    const issuer = this.#ariIssuer(entry, current);
    if (issuer?.renewalInfo === undefined) return;
    const certId = safeAriCertId(current.certPem);
    if (certId === null) {
      entry.ari = { certId: '', window: null, selectedAt: null, nextPollAt: null, explanationUrl: null };
      return;
    }
    entry.polling = true;
    const poll = issuer.renewalInfo.bind(issuer);
    this.#track(
      (async () => {
        let answer: RenewalInfoAnswer | null;
        try {
          answer = await poll(current.certPem);
        } catch (err) {
          if (entry.current !== current) return;
          const retryAt = this.#now() + RENEWAL_INFO_RETRY_MS;
          entry.ari = {
            ...(entry.ari ?? { certId, window: null, selectedAt: null, explanationUrl: null }),
            nextPollAt: retryAt,
          };
          this.#log.warn(
            { name: entry.name, error: messageOf(err), nextPollAt: new Date(retryAt).toISOString() },
            `renewal information for ${entry.name} not available: ${messageOf(err)}; asking again at ${new Date(retryAt).toISOString()}`,
          );
          return;
        }
        if (entry.current !== current) return;
        this.#applyRenewalInfo(entry, current, certId, answer);
        await this.#storeMetadata(entry, current.issuerId);
      })().finally(() => {
        entry.polling = false;
        this.#check(entry);
      }),
    );
  }

  /** Keeps the CA's window; the time chosen in it is kept while the window is unchanged, so restarts do not re-pick it. */
  #applyRenewalInfo(entry: Entry, current: LoadedCertificate, certId: string, answer: RenewalInfoAnswer | null): void {
    const now = this.#now();
    if (answer === null) {
      entry.ari = { certId, window: null, selectedAt: null, nextPollAt: null, explanationUrl: null };
      return;
    }
    let window = answer.info?.window ?? null;
    if (window !== null && window.start < current.notBefore) {
      // A window that opened before the certificate began cannot be about it (a CA's incident window
      // opens after the certificates it concerns were issued): renewing "now" would renew every new
      // certificate at once, in a loop. The lifetime rule applies instead.
      this.#log.warn(
        {
          name: entry.name,
          window: { start: new Date(window.start).toISOString(), end: new Date(window.end).toISOString() },
        },
        `ignoring the CA's renewal window for ${entry.name}: it opened before the certificate's notBefore`,
      );
      window = null;
    }
    const previous = entry.ari;
    const unchanged =
      previous !== null &&
      previous.certId === certId &&
      previous.window !== null &&
      window !== null &&
      previous.window.start === window.start &&
      previous.window.end === window.end &&
      previous.selectedAt !== null;
    const selectedAt = window === null ? null : unchanged ? previous.selectedAt : selectAriRenewalTime(window, certId);
    entry.ari = {
      certId,
      window,
      selectedAt,
      nextPollAt: nextRenewalInfoPoll(answer.retryAfter, now),
      explanationUrl: answer.info?.explanationUrl ?? null,
    };
    if (!unchanged && window !== null && selectedAt !== null) {
      this.#log.info(
        {
          name: entry.name,
          window: { start: new Date(window.start).toISOString(), end: new Date(window.end).toISOString() },
          renewAt: new Date(selectedAt).toISOString(),
          explanationUrl: entry.ari.explanationUrl,
        },
        `the CA suggests renewing ${entry.name} between ${new Date(window.start).toISOString()} and ${new Date(window.end).toISOString()}; renewing at ${new Date(selectedAt).toISOString()}`,
      );
    }
  }

  /** The name's metadata as the manager knows it now. */
  #metadata(entry: Entry, nextAttemptAt: number | null): CertificateMetadata {
    const current = entry.current;
    return {
      name: entry.name,
      issuer: current?.issuer ?? null,
      notBefore: current?.notBefore ?? null,
      notAfter: current?.notAfter ?? null,
      ari: entry.ari,
      lastError: entry.backoff?.lastError ?? null,
      nextAttemptAt,
      backoff: entry.backoff,
      validationFailures: entry.validationFailures,
    };
  }

  /** Writes the name's metadata beside its certificate (best effort: a failure is logged). */
  async #storeMetadata(entry: Entry, issuerId: string, nextAttemptAt: number | null = null): Promise<void> {
    try {
      await storeMetadata(this.#storage, issuerId, this.#metadata(entry, nextAttemptAt));
    } catch (err) {
      this.#logStorageProblem(entry, err);
    }
  }

  /** One attempt: lock, re-read storage, obtain, store, serve; a failure backs off this name only. */
  async #attempt(entry: Entry): Promise<void> {
    let lock: StorageLock | null = null;
    try {
      const locking = this.#storage.lock(
        `cert-${entry.name}`,
        this.#lockTimeoutMs === undefined ? {} : { timeoutMs: this.#lockTimeoutMs },
      );
      lock = await Promise.race([locking, this.#closedSignal]);
      if (lock === null) {
        void locking.then((late) => late.release()).catch(() => {});
        return;
      }
      if (entry.removed) return;
      const read = await this.#readStorage(entry);
      const stored = read.certificate;
      if (stored !== null && (entry.current === null || stored.notAfter > entry.current.notAfter)) {
        // Another process (or an earlier run) stored a newer certificate.
        this.#install(entry, stored);
        this.#restoreAri(entry, read.meta);
      }
      const now = this.#now();
      if (entry.current !== null && !this.#renewal(entry, entry.current, now).renew) {
        entry.backoff = null;
        return;
      }
      // Never obtain over a stored file that does not parse: it is left as it is.
      if (read.error !== null) throw read.error;
      const obtained = await this.#obtain(entry);
      const validationFailures = entry.validationFailures;
      await storeCertificate(this.#storage, obtained.issuerId, obtained, {
        name: entry.name,
        issuer: obtained.issuer,
        notBefore: obtained.notBefore,
        notAfter: obtained.notAfter,
        ari: null,
        lastError: null,
        nextAttemptAt: null,
        backoff: null,
        validationFailures,
      });
      entry.backoff = null;
      entry.rateLimitedUntil = null;
      entry.loggedStorageProblem = null;
      entry.dnsStep = null;
      if (entry.removed) return;
      this.#install(entry, obtained);
      this.#log.info(
        { name: entry.name, issuer: obtained.issuer, notAfter: new Date(obtained.notAfter).toISOString() },
        `certificate for ${entry.name} obtained from ${obtained.issuer}`,
      );
    } catch (err) {
      if (err instanceof RateLimited) {
        entry.rateLimitedUntil = err.retryAt;
        return;
      }
      await this.#failed(entry, err);
    } finally {
      await lock?.release().catch(() => {});
    }
  }

  #restoreAri(entry: Entry, meta: CertificateMetadata | null): void {
    const current = entry.current;
    if (current === null || meta?.ari == null) return;
    if (meta.ari.certId === safeAriCertId(current.certPem)) entry.ari = meta.ari;
  }

  /** Issues from the local CA, or from the ACME CAs in order (the first that succeeds wins). */
  async #obtain(entry: Entry): Promise<LoadedCertificate> {
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
        const slot = this.#rateLimiter.tryAcquire(issuer.accountFolder);
        if (!slot.ok) {
          if (failures.length === 0) throw new RateLimited(slot.retryAt);
          throw new AttemptFailed(failures);
        }
        // `replaces` (RFC 9773 §5) names the served certificate, and only to the CA that issued it.
        const replaces = entry.current?.issuerId === ca && entry.ari?.certId ? entry.ari.certId : undefined;
        entry.challenge = challenge;
        try {
          const issued = await issuer.obtain([entry.name], {
            challenge,
            keyType: this.#keyType,
            ...(replaces === undefined ? {} : { replaces }),
            ...(entry.dns === undefined ? {} : { dnsSolver: entry.dns }),
          });
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

  /** Records a failed attempt: backoff, one log line (what, why, next attempt), the metadata (best effort). */
  async #failed(entry: Entry, err: unknown): Promise<void> {
    const now = this.#now();
    const errors = err instanceof AttemptFailed ? err.failures.map((f) => f.error) : [err];
    const message = messageOf(err);
    entry.dnsStep = errors.map(dnsStepOf).find((step) => step !== null) ?? null;
    const retryAfters = errors.map(retryAfterMsOf).filter((ms): ms is number => ms !== undefined);
    const retryAt = retryAfters.length === 0 ? null : now + Math.max(...retryAfters);
    entry.backoff = recordFailure(entry.backoff, { at: now, error: message, retryAt }, this.#random);
    const nextAttemptAt = entry.backoff.gaveUp
      ? null
      : Math.max(entry.backoff.nextAttemptAt, this.#heldUntil(entry, now) ?? 0);
    const what = entry.current === null ? 'obtaining' : 'renewing';
    const fields = {
      name: entry.name,
      issuer: entry.kind,
      code: err instanceof CertificatesError ? err.code : undefined,
      challenge: entry.challenge,
      ...(entry.dnsStep === null ? {} : { dnsStep: entry.dnsStep }),
      error: message,
      failures: entry.backoff.failures,
      nextAttemptAt: nextAttemptAt === null ? null : new Date(nextAttemptAt).toISOString(),
    };
    if (nextAttemptAt === null) {
      this.#log.error(
        fields,
        `${what} certificate for ${entry.name} failed: ${message}; gave up after 30 days of failures (no more attempts until the name is configured anew or proxyd restarts)`,
      );
    } else {
      this.#log.warn(
        fields,
        `${what} certificate for ${entry.name} failed: ${message}; next attempt at ${fields.nextAttemptAt}`,
      );
    }
    const folder = entry.current?.issuerId ?? this.#issuerIds(entry)[0];
    if (folder !== undefined) await this.#storeMetadata(entry, folder, nextAttemptAt);
  }
}

/** Every ACME CA failed for a name: each one's error, in order. */
class AttemptFailed extends Error {
  constructor(readonly failures: { id: string; error: unknown }[]) {
    super(
      failures.length === 1
        ? messageOf(failures[0]?.error)
        : failures.map((f) => `${f.id}: ${messageOf(f.error)}`).join('; '),
    );
  }
}

/** `acme/<ca>/<email>` → `<ca>`: the folder of that CA's certificates. */
function issuerIdOf(issuer: ManagedAcmeIssuer): string {
  return issuer.accountFolder.split('/')[1] ?? issuer.accountFolder;
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function safeAriCertId(certPem: string): string | null {
  try {
    return ariCertId(certPem);
  } catch {
    return null;
  }
}

/** The CA's `Retry-After`, ms, when the error carries one. */
function retryAfterMsOf(err: unknown): number | undefined {
  const cause = err instanceof CertificatesError ? err.cause : err;
  return cause instanceof AcmeProblemError ? cause.retryAfterMs : undefined;
}

function loaded(
  issuerId: string,
  issuer: string,
  certPem: string,
  keyPem: string,
  notBefore: number | Date,
  notAfter: number | Date,
): LoadedCertificate {
  return {
    certPem,
    keyPem,
    issuerId,
    issuer,
    notBefore: +notBefore,
    notAfter: +notAfter,
    context: createSecureContext({ cert: certPem, key: keyPem }),
  };
}
