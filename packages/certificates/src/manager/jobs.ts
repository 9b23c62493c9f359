import { OrderRateLimiter } from '../schedule/order-rate-limiter.js';
import type { CertificateStorage, StorageLock } from '../storage/storage.js';
import type { Entry } from './entry.js';
import type { Scheduler, TimerHandle } from './scheduler.js';

/** Thrown inside an attempt when the order rate limit says wait: not a failure. */
export class RateLimited {
  constructor(readonly retryAt: number) {}
}

/** Options of {@link Jobs}. */
export interface JobsOptions {
  scheduler: Scheduler;
  /** The clock, epoch ms (the order rate limit's). */
  now: () => number;
}

/**
 * The manager's background work, as certmagic's `async.go`: every promise
 * it starts is tracked ({@link whenIdle}), one attempt runs per name at a
 * time, each name has at most one wake-up timer, waits for a storage lock
 * end at {@link close}, and orders are paced per ACME account (10 per 10 s).
 */
export class Jobs {
  readonly #scheduler: Scheduler;
  readonly #rateLimiter: OrderRateLimiter;
  readonly #pending = new Set<Promise<unknown>>();
  #tick: TimerHandle | undefined;
  #closed = false;
  readonly #closedSignal: Promise<null>;
  #signalClosed: () => void = () => {};

  constructor(options: JobsOptions) {
    this.#scheduler = options.scheduler;
    this.#rateLimiter = new OrderRateLimiter({ clock: { now: options.now } });
    this.#closedSignal = new Promise<null>((resolve) => {
      this.#signalClosed = () => resolve(null);
    });
  }

  /** Whether {@link close} was called: nothing new starts. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Keeps `promise` in the set {@link whenIdle} waits for, until it settles. */
  track<T>(promise: Promise<T>): Promise<T> {
    this.#pending.add(promise);
    void promise.finally(() => this.#pending.delete(promise)).catch(() => {});
    return promise;
  }

  /** Resolves once nothing tracked is running. */
  async whenIdle(): Promise<void> {
    while (this.#pending.size > 0) await Promise.allSettled([...this.#pending]);
  }

  /** Calls `check` every `intervalMs` until {@link close}. */
  every(intervalMs: number, check: () => void): void {
    this.#tick = this.#scheduler.setTimeout(() => {
      if (this.#closed) return;
      this.every(intervalMs, check);
      check();
    }, intervalMs);
  }

  /** Runs `attempt` as the name's one attempt (`entry.attempt` while it runs), then calls `after`. */
  run(entry: Entry, attempt: () => Promise<void>, after: () => void): void {
    this.clearTimer(entry);
    const running = attempt().finally(() => {
      entry.attempt = null;
      after();
    });
    entry.attempt = running;
    this.track(running);
  }

  /** Sets the name's one wake-up to `at` (replacing an earlier one); `wake` is called then. */
  wakeAt(entry: Entry, at: number, now: number, wake: () => void): void {
    this.clearTimer(entry);
    entry.timer = this.#scheduler.setTimeout(
      () => {
        entry.timer = undefined;
        wake();
      },
      Math.min(Math.max(0, at - now), 2 ** 31 - 1),
    );
  }

  /** Cancels the name's wake-up, if any. */
  clearTimer(entry: Entry): void {
    if (entry.timer === undefined) return;
    this.#scheduler.clearTimeout(entry.timer);
    entry.timer = undefined;
  }

  /**
   * The storage lock `key`, or null when {@link close} came first (a lock
   * obtained after that is released at once).
   */
  async lock(storage: CertificateStorage, key: string, timeoutMs: number | undefined): Promise<StorageLock | null> {
    const locking = storage.lock(key, timeoutMs === undefined ? {} : { timeoutMs });
    const lock = await Promise.race([locking, this.#closedSignal]);
    if (lock === null) void locking.then((late) => late.release()).catch(() => {});
    return lock;
  }

  /** When the ACME account `accountFolder` has an order slot free, epoch ms (now or earlier: free now); takes nothing. */
  orderSlotAt(accountFolder: string): number {
    return this.#rateLimiter.availableAt(accountFolder);
  }

  /** Takes one order slot of the ACME account `accountFolder`: null when taken, else when the next one frees, epoch ms. */
  orderSlot(accountFolder: string): number | null {
    const slot = this.#rateLimiter.tryAcquire(accountFolder);
    return slot.ok ? null : slot.retryAt;
  }

  /** Nothing new starts; the periodic check stops and waits for a lock end. Timers of names are the caller's to clear. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#signalClosed();
    if (this.#tick !== undefined) this.#scheduler.clearTimeout(this.#tick);
  }
}
