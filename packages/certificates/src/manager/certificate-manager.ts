import type { SecureContext } from 'node:tls';
import type { CertificateStore, ChallengeResponder } from '@proxyd/proxy-core';
import type { ChallengeType } from '../acme/challenge-solver.js';
import type { LocalCa } from '../local-ca/local-ca.js';
import { DEFAULT_RENEWAL_SPREAD, RENEWAL_CHECK_INTERVAL_MS } from '../schedule/renewal-window.js';
import type { CertificateSummary } from '../schedule/status.js';
import type { CertificateStorage } from '../storage/storage.js';
import {
  CertificateCache,
  type CertificateCacheStats,
  DEFAULT_CERTIFICATE_CACHE_CAPACITY,
} from './certificate-cache.js';
import { DEFAULT_CHALLENGE_ORDER } from './challenge-preference.js';
import { ChallengeTable } from './challenge-table.js';
import {
  type CertificateLogger,
  createEntry,
  type Entry,
  type ManagedAcmeIssuer,
  type ManagedName,
  silentLogger,
} from './entry.js';
import { Jobs } from './jobs.js';
import { DEFAULT_ISSUANCE_CONCURRENCY, type IssuanceQueueStats, Maintainer } from './maintain.js';
import { NameStorage } from './name-storage.js';
import { Obtainer, type OrderResult } from './obtain.js';
import type { OnDemandOptions } from './on-demand.js';
import { realScheduler, type Scheduler } from './scheduler.js';
import { type CertificateChange, OnDemandHandshakes, type ServedCertificate, ServedCertificates } from './serve.js';
import { nameSegment } from './stored-certificate.js';
import { summarizeEntries } from './summary.js';

export type { CertificateCacheStats } from './certificate-cache.js';
export type { CertificateLogger, ManagedAcmeIssuer, ManagedName } from './entry.js';
export type { OrderResult } from './obtain.js';
export type { CertificateChange, ServedCertificate } from './serve.js';

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
  /**
   * Called once a certificate this manager obtained or renewed is stored:
   * with shared storage, the daemon tells the other nodes, which call
   * {@link CertificateManager.reload}.
   */
  onObtained?: (name: string) => void;
  /**
   * Attempts (lock, storage re-read, order, store) at once: `local` for the
   * local CA (default 16), `acme` for each ACME CA (default 2). Names wait
   * in a queue holding nothing; a handshake moves its name to the front.
   */
  concurrency?: { local?: number; acme?: number };
  /**
   * How far renewals by the lifetime rule spread after 1/3 of the lifetime
   * left, as a fraction of the lifetime (default 1/12: between 1/3 and 1/4
   * left; each certificate its own time). 0 renews at exactly 1/3 left.
   */
  renewalSpread?: number;
  /**
   * Loaded certificates (PEMs and TLS context) kept in memory, least
   * recently used out first (default 10,000, as Caddy). Every managed name
   * stays served: an evicted one is read from storage at its next handshake.
   */
  cacheCapacity?: number;
  /**
   * Resolves when an attempt no handshake waits for may start (default: at
   * once). The daemon passes `loopPacer()`: issuance takes what the event
   * loop has spare, so route writes do not wait behind it.
   */
  pace?: () => Promise<void>;
}

/** A managed-name change: names to add (or whose issuer or DNS solver changed) and names to remove. */
export interface NameChanges {
  add: readonly ManagedName[];
  remove: readonly string[];
}

/** Past this many new names, what storage holds is learned from one listing instead of a read per name. */
const LIST_STORAGE_FROM = 32;
/** Loads of stored names in flight at once (four per storage read at once: the reads queue stays short). */
const LOADERS = 32;

/**
 * Keeps certificates for a changing set of names, never blocking traffic;
 * see README.md for the full contract. This class wires the phases, each in
 * its own file as certmagic has them: `obtain.ts` (ordering from an
 * issuer), `maintain.ts` (renewal, ARI, backoff), `serve.ts` (handshakes,
 * on-demand), `jobs.ts` (background work, order pacing), `summary.ts`
 * (status), `name-storage.ts` (a name's files):
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
  readonly #entries = new Map<string, Entry>();
  readonly #jobs: Jobs;
  readonly #obtainer: Obtainer;
  readonly #served: ServedCertificates;
  readonly #maintainer: Maintainer;
  readonly #onDemand: OnDemandHandshakes | undefined;
  readonly #now: () => number;
  readonly #storage: CertificateStorage;
  /** Loads of stored certificates not done yet, by name (a handshake waits for its name's). */
  readonly #loading = new Map<string, Promise<void>>();
  /**
   * Names added with something stored whose load has not started: a few
   * loaders take them in order ({@link LOADERS}), so 100,000 stored names
   * are map entries, not 100,000 waiting reads; a handshake starts its
   * name's load at once.
   */
  readonly #unloaded = new Map<string, Entry>();

  constructor(options: CertificateManagerOptions) {
    const legacyTable = options.challenges instanceof ChallengeTable ? options.challenges : undefined;
    this.challengeTable = options.challengeTable ?? legacyTable ?? new ChallengeTable();
    const now = options.now ?? Date.now;
    const log = options.logger ?? silentLogger;
    const checkIntervalMs = options.checkIntervalMs ?? RENEWAL_CHECK_INTERVAL_MS;
    this.#now = now;
    this.#storage = options.storage;
    const concurrency = {
      local: options.concurrency?.local ?? DEFAULT_ISSUANCE_CONCURRENCY.local,
      acme: options.concurrency?.acme ?? DEFAULT_ISSUANCE_CONCURRENCY.acme,
    };
    this.#jobs = new Jobs({ scheduler: options.scheduler ?? realScheduler, now });
    this.#obtainer = new Obtainer({
      issuers: options.acmeIssuers ?? [],
      localCa: options.localCa,
      challenges:
        options.challenges === undefined || options.challenges instanceof ChallengeTable
          ? DEFAULT_CHALLENGE_ORDER
          : options.challenges,
      keyType: options.keyType ?? 'ecdsa',
      now,
      log,
      jobs: this.#jobs,
      acmeConcurrency: concurrency.acme,
    });
    this.#served = new ServedCertificates(
      this.#entries,
      log,
      new CertificateCache(options.cacheCapacity ?? DEFAULT_CERTIFICATE_CACHE_CAPACITY),
      (entry) => this.#maintainer.read(entry),
    );
    this.#maintainer = new Maintainer({
      storage: options.storage,
      names: new NameStorage({
        storage: options.storage,
        now,
        log,
        issuerIds: (entry) => this.#obtainer.issuerIds(entry),
        served: this.#served,
      }),
      obtainer: this.#obtainer,
      served: this.#served,
      jobs: this.#jobs,
      now,
      random: options.random ?? Math.random,
      log,
      checkIntervalMs,
      lockTimeoutMs: options.lockTimeoutMs,
      onObtained: options.onObtained,
      concurrency,
      renewalSpread: options.renewalSpread ?? DEFAULT_RENEWAL_SPREAD,
      pace: options.pace,
    });
    this.#onDemand =
      options.onDemand === undefined
        ? undefined
        : new OnDemandHandshakes({
            options: options.onDemand,
            entries: this.#entries,
            served: this.#served,
            maintenance: this.#maintainer,
            jobs: this.#jobs,
            now,
            log,
          });
    this.#jobs.every(checkIntervalMs, () => {
      for (const entry of this.#entries.values()) this.#maintainer.check(entry);
    });
  }

  /**
   * Makes `names` the managed set. New names: the stored certificate is
   * loaded and served (resolves once that is done); obtaining or renewing
   * goes on in the background. A name whose issuer kind changed is managed
   * anew. Names no longer in the set are no longer served or maintained
   * (their files stay), except names obtained on demand. Never rejects.
   * O(names): a route change gives {@link updateNames} what changed instead.
   */
  async setNames(names: readonly ManagedName[]): Promise<void> {
    if (this.#jobs.closed) return;
    const wanted = new Map<string, ManagedName>();
    for (const managed of names) wanted.set(managed.name.toLowerCase(), managed);
    const remove: string[] = [];
    for (const [name, entry] of this.#entries) if (!wanted.has(name) && !entry.onDemand) remove.push(name);
    await this.updateNames({ add: [...wanted.values()], remove });
  }

  /**
   * Applies a change of the managed set: `add` as {@link setNames} takes a
   * new name (a name already managed with the same issuer only takes its
   * DNS solver), `remove` as a name left out of it. Resolves once the
   * stored certificates of the added names are loaded; what storage holds
   * is learned from one listing when many names come at once, and read a
   * few names at a time, so the files open stay bounded at any number of
   * names. Never rejects.
   */
  async updateNames(changes: NameChanges): Promise<void> {
    if (this.#jobs.closed) return;
    for (const name of changes.remove) {
      const entry = this.#entries.get(name.toLowerCase());
      if (entry !== undefined && !entry.onDemand) this.#remove(entry);
    }
    const changed: Entry[] = [];
    const added: Entry[] = [];
    for (const managed of changes.add) {
      const name = managed.name.toLowerCase();
      const entry = this.#entries.get(name);
      if (entry !== undefined && entry.kind === managed.issuer) {
        // A DNS provider given, changed or taken away applies from the next attempt.
        if (managed.dns !== entry.dns) {
          entry.dns = managed.dns;
          this.#obtainer.markUnsupported(entry);
          changed.push(entry);
        }
        continue;
      }
      if (entry !== undefined) this.#remove(entry);
      const fresh = createEntry(name, managed.issuer, false);
      this.#entries.set(name, fresh);
      fresh.dns = managed.dns;
      this.#obtainer.markUnsupported(fresh);
      added.push(fresh);
    }
    for (const entry of changed) this.#maintainer.check(entry);
    const stored = added.length >= LIST_STORAGE_FROM ? await this.#storedSegments() : null;
    // A name with nothing stored under any issuer has nothing to read: it goes to its issuer's queue now,
    // without a promise of its own (100,000 new names are a loop, not 100,000 async calls).
    const toLoad: Entry[] = [];
    for (const entry of added) {
      if (stored === null || stored.has(nameSegment(entry.name))) {
        toLoad.push(entry);
        this.#unloaded.set(entry.name, entry);
      } else {
        this.#maintainer.check(entry);
      }
    }
    let next = 0;
    const loader = async () => {
      while (next < toLoad.length) {
        const entry = toLoad[next++] as Entry;
        if (this.#unloaded.get(entry.name) !== entry) continue;
        this.#unloaded.delete(entry.name);
        await this.#loadThenCheck(entry);
      }
    };
    await Promise.all(Array.from({ length: Math.min(LOADERS, toLoad.length) }, loader));
  }

  /** Serves the name's stored certificate (a few reads at a time; `urgent` first), then checks it. */
  async #loadThenCheck(entry: Entry, urgent = false): Promise<void> {
    const loading = this.#jobs.track(this.#maintainer.load(entry, urgent));
    this.#loading.set(entry.name, loading);
    try {
      await loading;
    } finally {
      if (this.#loading.get(entry.name) === loading) this.#loading.delete(entry.name);
    }
    this.#maintainer.check(entry);
  }

  /** The name segments with any file under `certificates/` (one listing), or null when listing failed. */
  async #storedSegments(): Promise<Set<string> | null> {
    try {
      const segments = new Set<string>();
      for (const key of await this.#storage.list('certificates')) {
        const segment = key.split('/')[2];
        if (segment !== undefined) segments.add(segment);
      }
      return segments;
    } catch {
      return null;
    }
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
    const served = this.#served.lookup(name);
    if (served !== null || this.#jobs.closed) return served;
    const waiting = this.#waitingFor(name);
    if (waiting !== null) return waiting;
    if (this.#onDemand === undefined) return null;
    return this.#onDemand.contextFor(name);
  }

  /**
   * Drops what is served for `name` (or every managed name when null) in
   * favour of storage, when storage holds a newer certificate: another node
   * sharing the storage obtained or renewed it. Names not managed here are
   * ignored (nothing of theirs is held). Resolves once read; never rejects.
   */
  async reload(name: string | null): Promise<void> {
    if (this.#jobs.closed) return;
    const entries = name === null ? [...this.#entries.values()] : [this.#entries.get(name.toLowerCase())];
    await Promise.all(
      entries.map((entry) =>
        entry === undefined ? undefined : this.#jobs.track(this.#maintainer.reload(entry)).catch(() => {}),
      ),
    );
  }

  /**
   * A managed name (exact, else its `*.parent`) with no certificate served
   * yet, asked for by a handshake: a load in progress is awaited (moved to
   * the front), a waiting attempt moves to the front of its queue (names
   * with traffic first) and the handshake gets null now. Null when the
   * name is not managed.
   */
  #waitingFor(name: string): Promise<SecureContext | null> | null {
    const dot = name.indexOf('.');
    const key = this.#entries.has(name) ? name : dot > 0 ? `*${name.slice(dot)}` : name;
    const entry = this.#entries.get(key);
    if (entry === undefined || entry.current !== null) return null;
    this.#maintainer.promote(entry);
    if (this.#unloaded.get(key) === entry) {
      this.#unloaded.delete(key);
      void this.#loadThenCheck(entry, true).catch(() => {});
    }
    const loading = this.#loading.get(key);
    return loading === undefined ? null : loading.then(() => this.#served.lookup(name));
  }

  /** Whether a certificate for `host` is served now (the data plane redirects HTTP to HTTPS only then). */
  has(host: string): boolean {
    return this.#served.has(host.toLowerCase());
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

  /** Calls `listener` with a name whose certificate is no longer served (the name left the managed set); returns the unsubscribe function. */
  onRemove(listener: (name: string) => void): () => void {
    return this.#served.onRemove(listener);
  }

  /** Calls `listener` whenever a certificate is installed or replaced; returns the unsubscribe function. */
  onChange(listener: (change: CertificateChange) => void): () => void {
    return this.#served.onChange(listener);
  }

  /**
   * The names a certificate is served for now (exact names and `*.parent`
   * wildcards), sorted: the compact index, no certificate read. What a
   * data-plane worker needs for `has(host)`; it asks {@link pemFor} for a
   * certificate at its first handshake.
   */
  servedNames(): string[] {
    return this.#served.names();
  }

  /**
   * The certificate served for a handshake's `serverName` (its exact name,
   * else the `*.parent` wildcard) as PEM, read from storage when it is not
   * in the cache, or null when none is served.
   */
  async pemFor(serverName: string): Promise<ServedCertificate | null> {
    return await this.#served.pemFor(serverName.toLowerCase());
  }

  /** Hits, misses and evictions of the loaded-certificate cache since start, and its size: the metrics. */
  cacheStats(): CertificateCacheStats {
    return this.#served.cacheStats();
  }

  /** Per issuer queue (the local CA, each ACME CA): attempts running and waiting, names in its backlog (issue 30). */
  issuanceQueues(): Record<string, IssuanceQueueStats> {
    return this.#maintainer.queues();
  }

  /** Every managed name's summary for `GET /certificates`, sorted by name. */
  status(): CertificateSummary[] {
    return summarizeEntries(this.#entries.values(), this.#maintainer, this.#now());
  }

  /** ACME orders placed so far, by result (a copy): the metrics counter. */
  orderCounts(): Record<OrderResult, number> {
    return this.#obtainer.orderCounts();
  }

  /** Resolves once no load, attempt or renewalInfo request is running (tests and orderly shutdown). */
  async whenIdle(): Promise<void> {
    await this.#jobs.whenIdle();
  }

  /**
   * Stops maintenance: timers are cleared, waits for a lock end, nothing
   * new starts. An order already sent to a CA finishes and is stored (its
   * certificate is not wasted), but nothing is scheduled after it.
   */
  close(): void {
    if (this.#jobs.closed) return;
    this.#jobs.close();
    for (const entry of this.#entries.values()) this.#jobs.clearTimer(entry);
  }

  #remove(entry: Entry): void {
    entry.removed = true;
    this.#jobs.clearTimer(entry);
    if (this.#unloaded.get(entry.name) === entry) this.#unloaded.delete(entry.name);
    this.#entries.delete(entry.name);
    this.#served.remove(entry);
  }
}
