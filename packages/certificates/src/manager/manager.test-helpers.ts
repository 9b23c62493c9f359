import type { IssuedCertificate, ObtainOptions, RenewalInfoAnswer } from '../acme/acme-issuer.js';
import type { ChallengeType } from '../acme/challenge-solver.js';
import { AcmeProblemError } from '../acme/problem.js';
import { CertificatesError, type CertificatesErrorCode } from '../errors.js';
import { LocalCa } from '../local-ca/local-ca.js';
import { MemoryStorage } from '../local-ca/memory-storage.test-helpers.js';
import type { CertificateLogger, ManagedAcmeIssuer } from './certificate-manager.js';
import type { Scheduler } from './scheduler.js';

/** 2030-01-01T00:00:00Z: a whole second, as X.509 times are. */
export const START = Date.UTC(2030, 0, 1);
export const MINUTE = 60_000;
export const HOUR = 60 * MINUTE;
export const DAY = 24 * HOUR;

interface Timer {
  at: number;
  seq: number;
  callback: () => void;
}

/**
 * A fake clock and a manual {@link Scheduler} in one: tests move time with
 * {@link advance}, which fires due timers in order and lets the manager
 * settle after each, so no test sleeps.
 */
export class FakeTime implements Scheduler {
  now = START;
  readonly clock = (): number => this.now;
  readonly #timers = new Set<Timer>();
  #seq = 0;

  setTimeout(callback: () => void, ms: number): Timer {
    const timer = { at: this.now + Math.max(0, ms), seq: this.#seq++, callback };
    this.#timers.add(timer);
    return timer;
  }

  clearTimeout(handle: unknown): void {
    this.#timers.delete(handle as Timer);
  }

  /** Timers not yet fired. */
  get pending(): number {
    return this.#timers.size;
  }

  /** Moves the clock `ms` forward, firing each timer due on the way at its time, then `settle()`. */
  async advance(ms: number, settle: () => Promise<unknown>): Promise<void> {
    const target = this.now + ms;
    await settle();
    for (;;) {
      let next: Timer | undefined;
      for (const timer of this.#timers) {
        if (timer.at > target) continue;
        if (next === undefined || timer.at < next.at || (timer.at === next.at && timer.seq < next.seq)) next = timer;
      }
      if (next === undefined) break;
      this.#timers.delete(next);
      this.now = Math.max(this.now, next.at);
      next.callback();
      await settle();
    }
    this.now = target;
  }
}

/** A logger that keeps every line. */
export class MemoryLogger implements CertificateLogger {
  readonly lines: { level: 'info' | 'warn' | 'error'; obj: Record<string, unknown>; msg: string }[] = [];
  info(obj: object, msg: string): void {
    this.lines.push({ level: 'info', obj: obj as Record<string, unknown>, msg });
  }
  warn(obj: object, msg: string): void {
    this.lines.push({ level: 'warn', obj: obj as Record<string, unknown>, msg });
  }
  error(obj: object, msg: string): void {
    this.lines.push({ level: 'error', obj: obj as Record<string, unknown>, msg });
  }
  /** Lines whose message contains `text`. */
  matching(text: string): { level: string; obj: Record<string, unknown>; msg: string }[] {
    return this.lines.filter((line) => line.msg.includes(text));
  }
}

/** One call of {@link FakeAcmeIssuer.obtain}. */
export interface FakeOrder {
  names: string[];
  challenge: ChallengeType | undefined;
  replaces: string | undefined;
  /** The DNS-01 solver the order was given, if any. */
  dnsSolver: ObtainOptions['dnsSolver'];
  at: number;
}

/** What a fake order does: issue (undefined) or throw this error. */
export type FakeOutcome = (order: FakeOrder) => Error | undefined;

/**
 * A fake ACME CA for the manager's tests. The manager's logic (which
 * names, when, backoff, fallback, challenge order) is the point there, not
 * the protocol, and a fake lets the tests control every answer and the
 * clock; the real protocol against a real CA is covered by the pebble tests
 * (acme-issuer.test.ts, certificate-manager.pebble.test.ts). Certificates
 * are real: leaves of a private local CA, so they parse, serve and carry an
 * ARI identifier.
 */
export class FakeAcmeIssuer implements ManagedAcmeIssuer {
  readonly accountFolder: string;
  readonly directoryUrl: string;
  readonly orders: FakeOrder[] = [];
  /** Decides each order's outcome (default: issue). */
  outcome: FakeOutcome = () => undefined;
  /** Lifetime of issued leaves, ms (default 90 days). */
  lifetimeMs = 90 * DAY;
  /** When set, obtain waits for it (to observe the manager mid-order). */
  gate: Promise<void> | undefined;
  /** renewalInfo's answer; undefined: the issuer has no renewalInfo method at all. */
  renewalInfoAnswer: ((certPem: string) => RenewalInfoAnswer | null | Error) | undefined;
  readonly renewalInfoCalls: number[] = [];
  readonly #ca: Promise<LocalCa>;
  readonly #time: { now(): number };

  constructor(id: string, time: { clock(): number } | { now(): number } = { now: Date.now }) {
    this.accountFolder = `acme/${id}/default`;
    this.directoryUrl = `https://${id}.test/directory`;
    const now = 'clock' in time ? () => time.clock() : () => time.now();
    this.#time = { now };
    this.#ca = LocalCa.open(new MemoryStorage(), { now, intermediateLifetimeMs: 3650 * DAY });
  }

  /** `renewalInfo` exists only while {@link renewalInfoAnswer} is set (a CA without ARI has none). */
  get renewalInfo(): ((certPem: string) => Promise<RenewalInfoAnswer | null>) | undefined {
    const answer = this.renewalInfoAnswer;
    if (answer === undefined) return undefined;
    return async (certPem) => {
      this.renewalInfoCalls.push(this.#time.now());
      const result = answer(certPem);
      if (result instanceof Error) throw result;
      return result;
    };
  }

  async obtain(names: readonly string[], options: ObtainOptions = {}): Promise<IssuedCertificate> {
    const order: FakeOrder = {
      names: [...names],
      challenge: options.challenge,
      replaces: options.replaces,
      dnsSolver: options.dnsSolver,
      at: this.#time.now(),
    };
    this.orders.push(order);
    if (this.gate !== undefined) await this.gate;
    const error = this.outcome(order);
    if (error !== undefined) throw error;
    const leaf = await (await this.#ca).issue(names, { lifetimeMs: this.lifetimeMs });
    return {
      names: [...names],
      certificatePem: leaf.certPem,
      privateKeyPem: leaf.keyPem,
      notBefore: +leaf.notBefore,
      notAfter: +leaf.notAfter,
      directoryUrl: this.directoryUrl,
      orderUrl: `${this.directoryUrl}/order/${this.orders.length}`,
    };
  }
}

/** A `CertificatesError` as the ACME issuer throws it, with a problem document and an optional `Retry-After`. */
export function acmeError(
  code: CertificatesErrorCode,
  message: string,
  problem?: { type: string; retryAfterMs?: number },
): CertificatesError {
  return new CertificatesError(
    code,
    message,
    problem === undefined
      ? undefined
      : { cause: new AcmeProblemError({ type: problem.type, detail: message, status: 400 }, problem.retryAfterMs) },
  );
}
