import { createSecureContext, type SecureContext } from 'node:tls';
import type { CertificateStore, ChallengeResponder } from '@proxyd/proxy-core';
import type { IssuedCertificate, ObtainOptions } from '../acme/acme-issuer.js';
import { AcmeProblemError } from '../acme/problem.js';
import { CertificatesError, CertificatesErrorCode } from '../errors.js';
import type { LocalCa } from '../local-ca/local-ca.js';
import { type BackoffState, recordFailure } from '../schedule/backoff.js';
import { OrderRateLimiter } from '../schedule/order-rate-limiter.js';
import { RENEWAL_CHECK_INTERVAL_MS, renewalDecision } from '../schedule/renewal-window.js';
import { type CertificateSummary, summarizeCertificate } from '../schedule/status.js';
import { recordValidationFailure, validationHeldUntil } from '../schedule/validation-hold.js';
import type { CertificateStorage, StorageLock } from '../storage/storage.js';
import { ChallengeTable } from './challenge-table.js';
import { realScheduler, type Scheduler, type TimerHandle } from './scheduler.js';
import {
  type CertificateMetadata,
  certificateKeys,
  LOCAL_ISSUER_ID,
  type LoadedCertificate,
  loadCertificate,
  loadMetadata,
  storeCertificate,
} from './stored-certificate.js';

/** A name the daemon wants HTTPS for, and who should certify it. */
export interface ManagedName {
  /** A DNS name, a `*.` wildcard or an IP address (compared lowercase). */
  name: string;
  /** `acme` (the configured CAs, in order) or `internal` (the local CA). */
  issuer: 'acme' | 'internal';
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
  challenges?: ChallengeTable;
  /** The ACME challenge to answer (default `http-01`). */
  challenge?: ObtainOptions['challenge'];
  /** Leaf key type (default `ecdsa`, P-256). */
  keyType?: 'ecdsa' | 'rsa';
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
  current: LoadedCertificate | null;
  backoff: BackoffState | null;
  validationFailures: number[];
  /** An order rate limit delays the next attempt until then. */
  rateLimitedUntil: number | null;
  /** Why this name is never attempted (an ACME wildcard), or null. */
  unsupported: string | null;
  inFlight: boolean;
  timer: TimerHandle | undefined;
  removed: boolean;
}

const silent: CertificateLogger = { info() {}, warn() {}, error() {} };
/** A refusal by the CA: what the `invalid` order counter counts. */
const REFUSED: ReadonlySet<string> = new Set([
  CertificatesErrorCode.ACME_PROBLEM,
  CertificatesErrorCode.ACME_VALIDATION_FAILED,
  CertificatesErrorCode.ACME_ORDER_FAILED,
  CertificatesErrorCode.ACME_CHALLENGE_UNAVAILABLE,
]);

/** Thrown inside an attempt when the order rate limit says wait: not a failure. */
class RateLimited {
  constructor(readonly retryAt: number) {}
}

/**
 * Keeps certificates for a changing set of names, never blocking traffic
 * (certmagic's `maintain.go`/`async.go` in one class):
 *
 * - {@link setNames}: a new name's stored, unexpired certificate is served at
 *   once and the CA is not contacted; a missing one is obtained in the
 *   background under the storage lock `cert-<name>`, storage re-read inside
 *   it (another process may have stored one), then stored and served.
 *   Removed names stop being maintained; their files stay.
 * - Every `checkIntervalMs` each certificate is checked ({@link renewalDecision}:
 *   1/3 of its lifetime left); a renewed one replaces the served context in
 *   place, so new handshakes get it without a restart.
 * - A failure never touches other names or the served certificate: the
 *   name backs off ({@link recordFailure}: 1 min doubling to 6 h, jitter,
 *   `Retry-After` capped, gives up after 30 days), waits after 5 failed
 *   validations in an hour, and at most 10 orders per 10 s go to one
 *   account. Each failure is logged once: what, why, next attempt.
 * - ACME wildcards need DNS-01, which proxyd does not have: no order, a
 *   `CERT_ACME_WILDCARD_UNSUPPORTED` status error. The local CA issues them.
 *
 * It is the data plane's `CertificateStore` (by SNI, exact name or
 * `*.parent`) and `ChallengeResponder` (HTTP-01), and answers TLS-ALPN-01
 * handshakes through {@link alpnContextFor}.
 */
export class CertificateManager implements CertificateStore, ChallengeResponder {
  /** The challenges presented now; give it to every `AcmeIssuer` as `solver`. */
  readonly challenges: ChallengeTable;
  readonly #storage: CertificateStorage;
  readonly #issuers: readonly ManagedAcmeIssuer[];
  readonly #localCaSource: LocalCa | (() => Promise<LocalCa>) | undefined;
  #localCa: Promise<LocalCa> | undefined;
  readonly #challenge: NonNullable<ObtainOptions['challenge']>;
  readonly #keyType: 'ecdsa' | 'rsa';
  readonly #now: () => number;
  readonly #random: () => number;
  readonly #scheduler: Scheduler;
  readonly #log: CertificateLogger;
  readonly #checkIntervalMs: number;
  readonly #lockTimeoutMs: number | undefined;
  readonly #rateLimiter: OrderRateLimiter;
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
    this.challenges = options.challenges ?? new ChallengeTable();
    this.#challenge = options.challenge ?? 'http-01';
    this.#keyType = options.keyType ?? 'ecdsa';
    this.#now = options.now ?? Date.now;
    this.#random = options.random ?? Math.random;
    this.#scheduler = options.scheduler ?? realScheduler;
    this.#log = options.logger ?? silent;
    this.#checkIntervalMs = options.checkIntervalMs ?? RENEWAL_CHECK_INTERVAL_MS;
    this.#lockTimeoutMs = options.lockTimeoutMs;
    this.#rateLimiter = new OrderRateLimiter({ clock: { now: this.#now } });
    this.#closedSignal = new Promise<null>((resolve) => {
      this.#signalClosed = () => resolve(null);
    });
    this.#scheduleTick();
  }

  /**
   * Makes `names` the managed set. New names: the stored certificate is
   * loaded and served (resolves once that is done); obtaining or renewing
   * goes on in the background. A name whose issuer kind changed is managed
   * anew. Names no longer in the set are no longer served or maintained;
   * their files stay. Never rejects.
   */
  async setNames(names: readonly ManagedName[]): Promise<void> {
    if (this.#closed) return;
    const wanted = new Map<string, ManagedName['issuer']>();
    for (const { name, issuer } of names) wanted.set(name.toLowerCase(), issuer);
    for (const [name, entry] of this.#entries) {
      if (wanted.get(name) === entry.kind) continue;
      entry.removed = true;
      this.#clearTimer(entry);
      this.#entries.delete(name);
      this.#contexts.delete(name);
    }
    const added: Entry[] = [];
    for (const [name, kind] of wanted) {
      if (this.#entries.has(name)) continue;
      const entry: Entry = {
        name,
        kind,
        current: null,
        backoff: null,
        validationFailures: [],
        rateLimitedUntil: null,
        unsupported: null,
        inFlight: false,
        timer: undefined,
        removed: false,
      };
      if (kind === 'acme' && name.startsWith('*.')) {
        entry.unsupported = `${name}: an ACME certificate for a wildcard needs the DNS-01 challenge, which proxyd does not support; use "tls internal" or list the names`;
        this.#log.error(
          { name, code: CertificatesErrorCode.ACME_WILDCARD_UNSUPPORTED },
          `no certificate for ${name}: ${entry.unsupported}`,
        );
      }
      this.#entries.set(name, entry);
      added.push(entry);
    }
    await Promise.all(added.map((entry) => this.#track(this.#loadStored(entry))));
    for (const entry of added) this.#check(entry);
  }

  /** The served context for `serverName` (lowercase): the exact name's, else its `*.parent` wildcard's, else null. */
  contextFor(serverName: string): SecureContext | null {
    const name = serverName.toLowerCase();
    const exact = this.#contexts.get(name);
    if (exact !== undefined) return exact;
    const dot = name.indexOf('.');
    return dot > 0 ? (this.#contexts.get(`*${name.slice(dot)}`) ?? null) : null;
  }

  /** Whether a certificate for `host` is served now (the data plane redirects HTTP to HTTPS only then). */
  has(host: string): boolean {
    return this.contextFor(host) !== null;
  }

  /** The HTTP-01 answer for `token` on `host` (see {@link ChallengeTable.respond}). */
  respond(token: string, host: string): string | null {
    return this.challenges.respond(token, host);
  }

  /** The TLS-ALPN-01 challenge context for `serverName` while one is presented (see {@link ChallengeTable.alpnContextFor}). */
  alpnContextFor(serverName: string): SecureContext | null {
    return this.challenges.alpnContextFor(serverName);
  }

  /** Calls `listener` whenever a certificate is installed or replaced; returns the unsubscribe function. */
  onChange(listener: (change: CertificateChange) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
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
          };
        }
        return summarizeCertificate({
          name: entry.name,
          certificate: current === null ? null : { issuer: current.issuer, notAfter: current.notAfter },
          renewal: current === null ? null : this.#renewal(current, now),
          backoff: entry.backoff,
          heldUntil: this.#heldUntil(entry, now),
          inFlight: entry.inFlight,
          now,
        });
      });
  }

  /** ACME orders placed so far, by result (a copy): the metrics counter. */
  orderCounts(): Record<OrderResult, number> {
    return { ...this.#orders };
  }

  /** Resolves once no load or attempt is running (tests and orderly shutdown). */
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

  #scheduleTick(): void {
    this.#tick = this.#scheduler.setTimeout(() => {
      if (this.#closed) return;
      this.#scheduleTick();
      for (const entry of this.#entries.values()) this.#check(entry);
    }, this.#checkIntervalMs);
  }

  #renewal(current: LoadedCertificate, now: number) {
    return renewalDecision({
      validity: { notBefore: current.notBefore, notAfter: current.notAfter },
      now,
      checkIntervalMs: this.#checkIntervalMs,
    });
  }

  /** The latest of the backoff's next attempt, the validation hold and the rate limit, or null. */
  #heldUntil(entry: Entry, now: number): number | null {
    const times = [validationHeldUntil(entry.validationFailures, now), entry.rateLimitedUntil].filter(
      (t): t is number => t !== null && t > now,
    );
    return times.length === 0 ? null : Math.max(...times);
  }

  /** Starts an attempt when one is due now, else sets the name's wake-up for the next retry. */
  #check(entry: Entry): void {
    if (this.#closed || entry.removed || entry.inFlight || entry.unsupported !== null) return;
    if (entry.backoff?.gaveUp) return;
    const now = this.#now();
    if (entry.current !== null && !this.#renewal(entry.current, now).renew && entry.backoff === null) return;
    const at = Math.max(entry.backoff?.nextAttemptAt ?? now, this.#heldUntil(entry, now) ?? now);
    this.#clearTimer(entry);
    if (at > now) {
      entry.timer = this.#scheduler.setTimeout(
        () => {
          entry.timer = undefined;
          this.#check(entry);
        },
        Math.min(at - now, 2 ** 31 - 1),
      );
      return;
    }
    this.#track(this.#attempt(entry));
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

  /** The newest unexpired stored certificate of a name, and the failure history of its primary issuer. */
  async #readStorage(entry: Entry): Promise<{ certificate: LoadedCertificate | null; meta: CertificateMetadata | null }> {
    const now = this.#now();
    let best: LoadedCertificate | null = null;
    const ids = this.#issuerIds(entry);
    for (const id of ids) {
      let loaded: LoadedCertificate | null = null;
      try {
        loaded = await loadCertificate(this.#storage, id, entry.name);
      } catch (err) {
        this.#log.warn(
          { name: entry.name, key: certificateKeys(id, entry.name).cert, error: messageOf(err) },
          `stored certificate for ${entry.name} is not usable (left as it is): ${messageOf(err)}`,
        );
      }
      if (loaded !== null && loaded.notAfter > now && (best === null || loaded.notAfter > best.notAfter)) {
        best = loaded;
      }
    }
    const primary = ids[0];
    const meta =
      primary === undefined ? null : await loadMetadata(this.#storage, primary, entry.name).catch(() => null);
    return { certificate: best, meta };
  }

  /** At setNames: serve the stored certificate, restore the failure history. */
  async #loadStored(entry: Entry): Promise<void> {
    try {
      const { certificate, meta } = await this.#readStorage(entry);
      if (entry.removed) return;
      if (certificate !== null) this.#install(entry, certificate);
      if (meta !== null) {
        entry.validationFailures = meta.validationFailures;
        // A failure run recorded after the served certificate still applies (a restart must not hammer the CA).
        if (meta.backoff !== null && (certificate === null || meta.backoff.lastFailureAt > certificate.notBefore)) {
          entry.backoff = meta.backoff;
        }
      }
    } catch (err) {
      this.#log.warn({ name: entry.name, error: messageOf(err) }, `cannot read stored certificate for ${entry.name}`);
    }
  }

  #install(entry: Entry, certificate: LoadedCertificate): void {
    const replaced = entry.current !== null;
    entry.current = certificate;
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

  /** One attempt: lock, re-read storage, obtain, store, serve; a failure backs off this name only. */
  async #attempt(entry: Entry): Promise<void> {
    entry.inFlight = true;
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
      const { certificate: stored } = await this.#readStorage(entry);
      const now = this.#now();
      if (stored !== null && !this.#renewal(stored, now).renew) {
        // Another process (or an earlier run) stored a current certificate.
        if (entry.current === null || stored.certPem !== entry.current.certPem) this.#install(entry, stored);
        entry.backoff = null;
        return;
      }
      const obtained = await this.#obtain(entry);
      const metadata: CertificateMetadata = {
        name: entry.name,
        issuer: obtained.issuer,
        notBefore: obtained.notBefore,
        notAfter: obtained.notAfter,
        ari: null,
        lastError: null,
        nextAttemptAt: null,
        backoff: null,
        validationFailures: entry.validationFailures,
      };
      await storeCertificate(this.#storage, obtained.issuerId, obtained, metadata);
      entry.backoff = null;
      entry.rateLimitedUntil = null;
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
      entry.inFlight = false;
      this.#check(entry);
    }
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
      const slot = this.#rateLimiter.tryAcquire(issuer.accountFolder);
      if (!slot.ok) throw new RateLimited(slot.retryAt);
      try {
        const issued = await issuer.obtain([entry.name], { challenge: this.#challenge, keyType: this.#keyType });
        this.#orders.valid += 1;
        return loaded(
          issuerIdOf(issuer),
          issued.directoryUrl,
          issued.certificatePem,
          issued.privateKeyPem,
          issued.notBefore,
          issued.notAfter,
        );
      } catch (err) {
        const refused = err instanceof CertificatesError && REFUSED.has(err.code);
        this.#orders[refused ? 'invalid' : 'error'] += 1;
        failures.push({ id: issuerIdOf(issuer), error: err });
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

  /** Records a failed attempt: backoff, validation hold, one log line, the metadata (best effort). */
  async #failed(entry: Entry, err: unknown): Promise<void> {
    const now = this.#now();
    const errors = err instanceof AttemptFailed ? err.failures.map((f) => f.error) : [err];
    const message = messageOf(err);
    if (errors.some((e) => e instanceof CertificatesError && e.code === CertificatesErrorCode.ACME_VALIDATION_FAILED)) {
      entry.validationFailures = recordValidationFailure(entry.validationFailures, now);
    }
    const retryAfters = errors.map(retryAfterMsOf).filter((ms): ms is number => ms !== undefined);
    const retryAt = retryAfters.length === 0 ? null : now + Math.max(...retryAfters);
    entry.backoff = recordFailure(entry.backoff, { at: now, error: message, retryAt }, this.#random);
    const nextAttemptAt = entry.backoff.gaveUp ? null : Math.max(entry.backoff.nextAttemptAt, this.#heldUntil(entry, now) ?? 0);
    const what = entry.current === null ? 'obtaining' : 'renewing';
    const fields = {
      name: entry.name,
      issuer: entry.kind,
      error: message,
      failures: entry.backoff.failures,
      nextAttemptAt: nextAttemptAt === null ? null : new Date(nextAttemptAt).toISOString(),
    };
    if (nextAttemptAt === null) {
      this.#log.error(fields, `${what} certificate for ${entry.name} failed: ${message}; gave up after 30 days of failures`);
    } else {
      this.#log.warn(
        fields,
        `${what} certificate for ${entry.name} failed: ${message}; next attempt at ${fields.nextAttemptAt}`,
      );
    }
    const primary = this.#issuerIds(entry)[0];
    if (primary === undefined) return;
    const current = entry.current;
    const metadata: CertificateMetadata = {
      name: entry.name,
      issuer: current?.issuer ?? null,
      notBefore: current?.notBefore ?? null,
      notAfter: current?.notAfter ?? null,
      ari: null,
      lastError: message,
      nextAttemptAt,
      backoff: entry.backoff,
      validationFailures: entry.validationFailures,
    };
    const key = certificateKeys(primary, entry.name).meta;
    await this.#storage.store(key, `${JSON.stringify(metadata, null, 2)}\n`).catch((storeErr: unknown) => {
      this.#log.warn({ name: entry.name, key, error: messageOf(storeErr) }, `cannot store metadata of ${entry.name}`);
    });
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
