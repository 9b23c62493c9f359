import { type RenewalWindow, selectAriRenewalTime } from './ari.js';

/**
 * How often the maintenance loop checks every managed certificate, ms:
 * 10 minutes, as certmagic's `RenewCheckInterval`.
 */
export const RENEWAL_CHECK_INTERVAL_MS = 10 * 60 * 1000;

/** A certificate's validity period: `notBefore` and `notAfter`, epoch ms (integers). */
export interface Validity {
  notBefore: number;
  notAfter: number;
}

/** When the lifetime rules fire for a certificate, epoch ms. */
export interface LifetimeRenewalTimes {
  /** The first instant with at most 1/3 of the lifetime left: renew (unless ARI says otherwise). */
  renewAt: number;
  /** The first instant with at most 1/20 of the lifetime left: renew regardless of ARI. */
  forceAt: number;
}

/**
 * The lifetime rules (certmagic's and the issue's): renew once 1/3 of the
 * lifetime (`notAfter - notBefore`) is left, and regardless of anything
 * else once 1/20 is left. Both bounds are inclusive and exact in integer ms:
 * `renewAt` is the first ms at which `3 × (notAfter − t) ≤ lifetime`. A
 * certificate whose lifetime is 0 or negative is due at `notAfter`.
 */
export function lifetimeRenewalTimes(validity: Validity): LifetimeRenewalTimes {
  const lifetime = Math.max(0, validity.notAfter - validity.notBefore);
  return {
    renewAt: validity.notAfter - Math.floor(lifetime / 3),
    forceAt: validity.notAfter - Math.floor(lifetime / 20),
  };
}

/**
 * Which rule decided {@link RenewalDecision.dueAt}: `lifetime` (1/3 left),
 * `ari` (the time selected in the CA's suggested window), `force` (1/20 left,
 * ARI or not).
 */
export type RenewalReason = 'lifetime' | 'ari' | 'force';

/** What the maintenance check should do with one certificate now. */
export interface RenewalDecision {
  /** Start a renewal now. */
  renew: boolean;
  /** When renewal is (or was) due, epoch ms: the earlier of the primary rule (ARI or lifetime) and the 1/20 rule. */
  dueAt: number;
  /** The rule that set `dueAt`. */
  reason: RenewalReason;
  /** The certificate has expired (`now ≥ notAfter`); `renew` is then always true. */
  expired: boolean;
}

/** The input of {@link renewalDecision}. */
export interface RenewalInput {
  /** The certificate's validity period. */
  validity: Validity;
  /**
   * The CA's ARI window for this certificate and its ARI identifier
   * ({@link ariCertId}); null or absent when the CA offers no ARI, the
   * request failed or the answer did not parse: the lifetime rule applies.
   * `selectedAt`, when given, is the time already chosen in this window
   * (kept in the certificate's metadata); absent, it is
   * {@link selectAriRenewalTime}'s pick.
   */
  ari?: { window: RenewalWindow; certId: string; selectedAt?: number } | null;
  /** The current time, epoch ms. */
  now: number;
  /** The interval between maintenance checks, ms (default {@link RENEWAL_CHECK_INTERVAL_MS}). */
  checkIntervalMs?: number;
  /**
   * How much later than 1/3 of the lifetime left the lifetime rule fires,
   * as a fraction of the lifetime (default 0; never past the 1/20 rule):
   * the manager gives each certificate its own, so certificates issued
   * together do not all renew at once.
   */
  spread?: number;
}

/** The lifetime spread the manager uses by default: renewals between 1/3 and 1/4 of the lifetime left. */
export const DEFAULT_RENEWAL_SPREAD = 1 / 12;

/**
 * A certificate's own place in the renewal spread, in [0, 1): a hash of its
 * name and notBefore, so it is the same after a restart and differs between
 * certificates issued at the same time.
 */
export function renewalSpreadOf(name: string, notBefore: number): number {
  let hash = 0x811c9dc5;
  const text = `${name}|${notBefore}`;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash / 2 ** 32;
}

/**
 * Decides whether a certificate is due for renewal.
 *
 * Without ARI: due at {@link LifetimeRenewalTimes.renewAt}, later by
 * `spread` of the lifetime when given. With ARI: due at
 * the time {@link selectAriRenewalTime} picks in the CA's window (earlier or
 * later than the lifetime rule, as the CA asks; a window wholly in the past
 * means now), and — as RFC 9773 §4.2 says — already when that time falls
 * before the next check (`selected < now + checkIntervalMs`), so a check
 * every 10 minutes never renews up to 10 minutes late. In both cases the 1/20
 * rule still forces renewal: a CA's window is never trusted to let a
 * certificate run out.
 */
export function renewalDecision(input: RenewalInput): RenewalDecision {
  const { validity, now } = input;
  const interval = input.checkIntervalMs ?? RENEWAL_CHECK_INTERVAL_MS;
  const { renewAt, forceAt } = lifetimeRenewalTimes(validity);
  const expired = now >= validity.notAfter;
  const forced = now >= forceAt || expired;
  if (input.ari) {
    const selected = input.ari.selectedAt ?? selectAriRenewalTime(input.ari.window, input.ari.certId);
    const ariDue = selected <= now || selected < now + interval;
    return selected <= forceAt
      ? { renew: ariDue || forced, dueAt: selected, reason: 'ari', expired }
      : { renew: forced, dueAt: forceAt, reason: 'force', expired };
  }
  // renewAt ≤ forceAt always (1/3 of a lifetime is never less than 1/20 of it); the spread keeps it so.
  const lifetime = Math.max(0, validity.notAfter - validity.notBefore);
  const spreadAt = Math.min(forceAt, renewAt + Math.floor(Math.max(0, input.spread ?? 0) * lifetime));
  return { renew: now >= spreadAt || expired, dueAt: spreadAt, reason: 'lifetime', expired };
}
