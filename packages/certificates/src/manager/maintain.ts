import type { RenewalInfoAnswer } from '../acme/acme-issuer.js';
import { AcmeProblemError } from '../acme/problem.js';
import { dnsStepOf } from '../dns/dns01-solver.js';
import { CertificatesError } from '../errors.js';
import { nextRenewalInfoPoll, selectAriRenewalTime } from '../schedule/ari.js';
import { recordFailure } from '../schedule/backoff.js';
import { type RenewalDecision, renewalDecision, renewalSpreadOf } from '../schedule/renewal-window.js';
import { validationHeldUntil } from '../schedule/validation-hold.js';
import type { CertificateStorage, StorageLock } from '../storage/storage.js';
import { type CertificateLogger, type Entry, messageOf } from './entry.js';
import { type Jobs, RateLimited } from './jobs.js';
import type { NameStorage } from './name-storage.js';
import { AttemptFailed, type Obtainer } from './obtain.js';
import type { NameMaintenance, ServedCertificates } from './serve.js';
import type { CertificateInfo, LoadedCertificate } from './stored-certificate.js';
import { WorkQueue } from './work-queue.js';

/** Attempts at once per issuer by default: the local CA, and each ACME CA. */
export const DEFAULT_ISSUANCE_CONCURRENCY = { local: 16, acme: 2 } as const;
/** What {@link Maintainer.queues} tells of one issuer queue. */
export interface IssuanceQueueStats {
  /** Attempts running. */
  running: number;
  /** Attempts waiting for a place (each holds its promises, nothing else). */
  waiting: number;
  /** Names due that wait as a map entry until the queue has room. */
  backlog: number;
  /** The most attempts that ever ran at once. */
  peak: number;
}

/** Attempts an issuer's queue holds (running and waiting), per place it runs at once; the rest wait in its backlog. */
const QUEUE_DEPTH = 4;
/** Storage reads of names (loading a stored certificate) at once. */
export const STORAGE_READ_CONCURRENCY = 8;
/** renewalInfo (ARI) requests at once. */
const RENEWAL_INFO_CONCURRENCY = 4;

/** After a failed renewalInfo request, ask again after this long, ms (the last known window stays in force). */
const RENEWAL_INFO_RETRY_MS = 60 * 60 * 1000;

/** Options of {@link Maintainer}. */
export interface MaintainerOptions {
  storage: CertificateStorage;
  names: NameStorage;
  obtainer: Obtainer;
  served: ServedCertificates;
  jobs: Jobs;
  now: () => number;
  random: () => number;
  log: CertificateLogger;
  checkIntervalMs: number;
  lockTimeoutMs: number | undefined;
  /** Called once a certificate this process obtained is stored (a fleet tells its other nodes). */
  onObtained?: ((name: string) => void) | undefined;
  /** Attempts at once: for the local CA, and for each ACME CA. */
  concurrency: { local: number; acme: number };
  /** The lifetime rule's spread, a fraction of the lifetime (see `renewalDecision`). */
  renewalSpread: number;
  /** Resolves when an attempt that no handshake waits for may start (see `loopPacer`); absent: at once. */
  pace?: (() => Promise<void>) | undefined;
}

/**
 * Keeps each name's certificate obtained and renewed (certmagic's
 * `maintain.go` and renew in `config.go`): the renewal decision (1/3 of the
 * lifetime left, the time chosen in the CA's ARI window, 1/20 regardless),
 * ARI polling, one attempt at a time under the name's storage lock with
 * storage re-read inside it, and per name backoff, `Retry-After`, the
 * validation hold and the order rate limit after a failure.
 */
export class Maintainer implements NameMaintenance {
  readonly #storage: CertificateStorage;
  readonly #names: NameStorage;
  readonly #obtainer: Obtainer;
  readonly #served: ServedCertificates;
  readonly #jobs: Jobs;
  readonly #now: () => number;
  readonly #random: () => number;
  readonly #log: CertificateLogger;
  readonly #checkIntervalMs: number;
  readonly #lockTimeoutMs: number | undefined;
  readonly #onObtained: ((name: string) => void) | undefined;
  readonly #concurrency: { local: number; acme: number };
  readonly #renewalSpread: number;
  readonly #pace: (() => Promise<void>) | undefined;
  /** One issuance queue per issuer (`local`, or the ACME CA an attempt starts with). */
  readonly #queues = new Map<string, WorkQueue>();
  /**
   * Names due now beyond what their issuer's queue holds ({@link QUEUE_DEPTH}
   * × its concurrency), in order: an entry in a Map, not a waiting task (a
   * waiting task is its promises and closures, ~1.6 KB a name: 160 MB at
   * 100,000 names). Each finished attempt moves names from here to its queue.
   */
  readonly #backlogs = new Map<WorkQueue, Map<string, Entry>>();
  /**
   * Where each backlog is read from: one live iterator, which steps over the
   * names already taken. `entries().next()` from the start each time walked
   * every deleted slot before the first live one (V8 compacts a Map's table
   * only as it shrinks): 1.2 s of the primary's thread over a 100k-name start.
   */
  readonly #cursors = new Map<WorkQueue, IterableIterator<[string, Entry]>>();
  /** Reads of names' stored files. */
  readonly #reads = new WorkQueue(STORAGE_READ_CONCURRENCY);
  /** renewalInfo requests (a restart with many ACME names does not send them all at once). */
  readonly #polls = new WorkQueue(RENEWAL_INFO_CONCURRENCY);

  constructor(options: MaintainerOptions) {
    this.#storage = options.storage;
    this.#names = options.names;
    this.#obtainer = options.obtainer;
    this.#served = options.served;
    this.#jobs = options.jobs;
    this.#now = options.now;
    this.#random = options.random;
    this.#log = options.log;
    this.#checkIntervalMs = options.checkIntervalMs;
    this.#lockTimeoutMs = options.lockTimeoutMs;
    this.#onObtained = options.onObtained;
    this.#concurrency = options.concurrency;
    this.#renewalSpread = options.renewalSpread;
    this.#pace = options.pace;
  }

  /**
   * Serves the name's stored certificate and restores its state (see
   * {@link NameStorage.load}), a few names at a time: `urgent` (a handshake
   * waits) goes first.
   */
  load(entry: Entry, urgent = false): Promise<void> {
    return this.#reads.run(entry.name, () => (entry.removed ? Promise.resolve() : this.#names.load(entry)), urgent);
  }

  /** The name's newest stored certificate, read ahead of other reads (a handshake waits for it). */
  async read(entry: Entry): Promise<LoadedCertificate | null> {
    return await this.#reads.run(entry.name, async () => (await this.#names.read(entry)).certificate, true);
  }

  /** Moves a name's waiting load or attempt to the front of its queue (a handshake asked for it). */
  promote(entry: Entry): void {
    this.#reads.promote(entry.name);
    const queue = this.#queueFor(entry);
    if (queue.promote(entry.name)) return;
    const backlog = this.#backlogs.get(queue);
    if (backlog?.delete(entry.name) === true) this.#enqueue(entry, queue, true);
  }

  /**
   * Per issuer queue: the attempts running and waiting, the names due in its
   * backlog, and the most that ever ran at once (tests, diagnostics).
   */
  queues(): Record<string, IssuanceQueueStats> {
    const out: Record<string, IssuanceQueueStats> = {};
    for (const [id, queue] of this.#queues) {
      const backlog = this.#backlogs.get(queue)?.size ?? 0;
      out[id] = { running: queue.running, waiting: queue.waiting, backlog, peak: queue.peak };
    }
    return out;
  }

  #queueFor(entry: Entry): WorkQueue {
    const id = this.#obtainer.issuerIds(entry)[0] ?? entry.kind;
    let queue = this.#queues.get(id);
    if (queue === undefined) {
      queue = new WorkQueue(entry.kind === 'internal' ? this.#concurrency.local : this.#concurrency.acme);
      this.#queues.set(id, queue);
    }
    return queue;
  }

  /**
   * Serves the name's stored certificate when storage holds a newer one
   * than the served (another node obtained or renewed it). Never rejects:
   * a read failure is logged once, as at load.
   */
  reload(entry: Entry): Promise<void> {
    // Through the reads queue: a reload of every name (after a reconnect) reads a few at a time.
    return this.#reads.run(entry.name, () => this.#reloadNow(entry));
  }

  async #reloadNow(entry: Entry): Promise<void> {
    if (entry.removed || entry.attempt !== null) return;
    const read = await this.#names.read(entry);
    const stored = read.certificate;
    if (entry.removed || stored === null) return;
    if (entry.current !== null && stored.notAfter <= entry.current.notAfter) return;
    this.#served.install(entry, stored);
    this.#names.restoreAri(entry, read.meta);
    entry.backoff = null;
  }

  /** The renewal decision for `certificate` of `entry` (its ARI window when it is the served one). */
  renewal(entry: Entry, certificate: Pick<CertificateInfo, 'notBefore' | 'notAfter'>, now: number): RenewalDecision {
    const ari = entry.current === certificate ? entry.ari : null;
    return renewalDecision({
      validity: { notBefore: certificate.notBefore, notAfter: certificate.notAfter },
      now,
      checkIntervalMs: this.#checkIntervalMs,
      spread: this.#renewalSpread * renewalSpreadOf(entry.name, certificate.notBefore),
      ari:
        ari?.window && ari.selectedAt !== null
          ? { window: ari.window, certId: ari.certId, selectedAt: ari.selectedAt }
          : null,
    });
  }

  /** The latest of the validation hold and the rate limit, when in the future, else null. */
  heldUntil(entry: Entry, now: number): number | null {
    const times = [validationHeldUntil(entry.validationFailures, now), entry.rateLimitedUntil].filter(
      (t): t is number => t !== null && t > now,
    );
    return times.length === 0 ? null : Math.max(...times);
  }

  /** Polls renewalInfo when due, and starts an attempt when one is due now, else sets the name's wake-up for the next retry. */
  check(entry: Entry): void {
    if (this.#jobs.closed || entry.removed || entry.attempt !== null || entry.unsupported !== null) return;
    if (entry.backoff?.gaveUp && !entry.retryOnce) return;
    const now = this.#now();
    const current = entry.current;
    if (current !== null) this.#pollRenewalInfoIfDue(entry, current, now);
    const renewal = current === null ? null : this.renewal(entry, current, now);
    const due = renewal === null || entry.backoff !== null || renewal.renew;
    if (!due) {
      // Due before the next check (a short-lived certificate): wake up for it instead of renewing late.
      if (renewal.dueAt - now < this.#checkIntervalMs) this.#wakeAt(entry, renewal.dueAt, now);
      return;
    }
    const at = Math.max(
      entry.backoff !== null && !entry.backoff.gaveUp ? entry.backoff.nextAttemptAt : now,
      this.heldUntil(entry, now) ?? now,
    );
    if (at > now) {
      this.#wakeAt(entry, at, now);
      return;
    }
    entry.retryOnce = false;
    // The attempt waits for a place in its issuer's queue holding nothing (no lock, no file) until it starts.
    const queue = this.#queueFor(entry);
    // An on-demand name's first certificate: a handshake is waiting for it.
    const urgent = entry.onDemand && entry.current === null;
    if (!urgent && queue.running + queue.waiting >= queue.limit * QUEUE_DEPTH) {
      let backlog = this.#backlogs.get(queue);
      if (backlog === undefined) {
        backlog = new Map();
        this.#backlogs.set(queue, backlog);
      }
      backlog.set(entry.name, entry);
      return;
    }
    this.#enqueue(entry, queue, urgent);
  }

  /** Starts the name's attempt through `queue`; once it ends, the name is checked again and the backlog moves up. */
  #enqueue(entry: Entry, queue: WorkQueue, urgent: boolean): void {
    this.#jobs.run(
      entry,
      () =>
        queue.run(
          entry.name,
          async () => {
            // A handshake waiting for the name is not paced; the rest take what the event loop has spare.
            if (!urgent && this.#pace !== undefined) await this.#pace();
            if (this.#jobs.closed || entry.removed) return;
            await this.#attempt(entry);
          },
          urgent,
        ),
      () => {
        this.check(entry);
        this.#refill(queue);
      },
    );
  }

  /** Moves names from `queue`'s backlog into it while it has room. */
  #refill(queue: WorkQueue): void {
    const backlog = this.#backlogs.get(queue);
    if (backlog === undefined) return;
    while (backlog.size > 0 && queue.running + queue.waiting < queue.limit * QUEUE_DEPTH) {
      let step = this.#cursors.get(queue)?.next();
      if (step === undefined || step.done === true) {
        // A finished iterator stays finished: names added after it ended need a new one.
        const cursor = backlog.entries();
        this.#cursors.set(queue, cursor);
        step = cursor.next();
      }
      const [name, entry] = step.value as [string, Entry];
      backlog.delete(name);
      this.check(entry);
    }
    if (backlog.size === 0) {
      this.#backlogs.delete(queue);
      this.#cursors.delete(queue);
    }
  }

  #wakeAt(entry: Entry, at: number, now: number): void {
    this.#jobs.wakeAt(entry, at, now, () => this.check(entry));
  }

  /** One attempt: lock, re-read storage, obtain, store, serve; a failure backs off this name only. */
  async #attempt(entry: Entry): Promise<void> {
    let lock: StorageLock | null = null;
    try {
      // Over the account's order rate limit: wait for a slot without taking the lock or reading storage.
      const account = this.#obtainer.firstAccount(entry);
      const slotAt = account === null ? 0 : this.#jobs.orderSlotAt(account);
      if (slotAt > this.#now()) throw new RateLimited(slotAt);
      lock = await this.#jobs.lock(this.#storage, `cert-${entry.name}`, this.#lockTimeoutMs);
      if (lock === null) return;
      if (entry.removed) return;
      const read = await this.#names.read(entry);
      const stored = read.certificate;
      if (stored !== null && (entry.current === null || stored.notAfter > entry.current.notAfter)) {
        // Another process (or an earlier run) stored a newer certificate.
        this.#served.install(entry, stored);
        this.#names.restoreAri(entry, read.meta);
      }
      const now = this.#now();
      if (entry.current !== null && !this.renewal(entry, entry.current, now).renew) {
        entry.backoff = null;
        return;
      }
      // Never obtain over a stored file that does not parse: it is left as it is.
      if (read.error !== null) throw read.error;
      const obtained = await this.#obtainer.obtain(entry);
      await this.#names.storeObtained(entry, obtained, read);
      this.#onObtained?.(entry.name);
      entry.backoff = null;
      entry.rateLimitedUntil = null;
      entry.loggedStorageProblem = null;
      entry.dnsStep = null;
      if (entry.removed) return;
      this.#served.install(entry, obtained);
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
      : Math.max(entry.backoff.nextAttemptAt, this.heldUntil(entry, now) ?? 0);
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
    const folder = entry.current?.issuerId ?? this.#obtainer.issuerIds(entry)[0];
    if (folder !== undefined) await this.#names.storeMetadata(entry, folder, nextAttemptAt);
  }

  /** Starts a renewalInfo request for the served certificate when one is due (RFC 9773 §4.3 polling). */
  #pollRenewalInfoIfDue(entry: Entry, current: CertificateInfo, now: number): void {
    if (entry.polling) return;
    if (entry.ari !== null && (entry.ari.nextPollAt === null || entry.ari.nextPollAt > now)) return;
    const issuer = this.#obtainer.ariIssuer(entry, current);
    if (issuer?.renewalInfo === undefined) return;
    const certId = current.certId;
    if (certId === null) {
      entry.ari = { certId: '', window: null, selectedAt: null, nextPollAt: null, explanationUrl: null };
      return;
    }
    entry.polling = true;
    const poll = issuer.renewalInfo.bind(issuer);
    this.#jobs.track(
      (async () => {
        let answer: RenewalInfoAnswer | null;
        try {
          const asked = await this.#polls.run(entry.name, async () => {
            // The PEM from the cache, or storage when it was evicted.
            const loaded = await this.#served.loaded(entry);
            if (loaded === null || entry.current !== current) return undefined;
            return await poll(loaded.certPem);
          });
          if (asked === undefined) return;
          answer = asked;
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
        await this.#names.storeMetadata(entry, current.issuerId);
      })().finally(() => {
        entry.polling = false;
        this.check(entry);
      }),
    );
  }

  /** Keeps the CA's window; the time chosen in it is kept while the window is unchanged, so restarts do not re-pick it. */
  #applyRenewalInfo(entry: Entry, current: CertificateInfo, certId: string, answer: RenewalInfoAnswer | null): void {
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
}

/** The CA's `Retry-After`, ms, when the error carries one. */
function retryAfterMsOf(err: unknown): number | undefined {
  const cause = err instanceof CertificatesError ? err.cause : err;
  return cause instanceof AcmeProblemError ? cause.retryAfterMs : undefined;
}
