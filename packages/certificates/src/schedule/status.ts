import type { BackoffState } from './backoff.js';
import type { RenewalDecision } from './renewal-window.js';

/**
 * A managed name's state as the admin API shows it: `valid` (a certificate
 * that is not due), `renewing` (an attempt runs or is due now — also the
 * first certificate being obtained), `failing` (the last attempt failed; a
 * retry is scheduled), `gave-up` (failing for 30 days; no more attempts).
 */
export type CertificateStatus = 'valid' | 'renewing' | 'failing' | 'gave-up';

/** One managed name in `GET /certificates`: plain data, times epoch ms. */
export interface CertificateSummary {
  /** The name (a DNS name, `*.` wildcard or IP address). */
  name: string;
  /** Who issued the current certificate (e.g. the CA's directory URL or `local`), or null when there is none. */
  issuer: string | null;
  /** The current certificate's notAfter, or null when there is none. */
  notAfter: number | null;
  status: CertificateStatus;
  /** The latest failure of the current run, or null since the last success. */
  lastError: string | null;
  /** When the next attempt starts: the retry time when failing, the renewal time when valid, now when renewing, null once given up. */
  nextAttemptAt: number | null;
  /** The ACME challenge type of the last order tried (`http-01`, `tls-alpn-01`, `dns-01`), or null (none yet, local CA). */
  challenge?: 'http-01' | 'tls-alpn-01' | 'dns-01' | null;
  /**
   * With a failure of DNS-01: the step that failed (`zone-not-found`,
   * `update-refused`, `not-propagated`, `provider-invalid`), else null.
   */
  dnsStep?: 'zone-not-found' | 'update-refused' | 'not-propagated' | 'provider-invalid' | null;
}

/** What {@link summarizeCertificate} derives a summary from. */
export interface SummaryInput {
  name: string;
  /** The current certificate, or null when there is none yet. */
  certificate: { issuer: string; notAfter: number } | null;
  /** The renewal decision for the current certificate at `now` ({@link renewalDecision}), or null when there is none. */
  renewal: RenewalDecision | null;
  /** The name's backoff state, or null when it has not failed since the last success. */
  backoff: BackoffState | null;
  /** Until when a hold (validation failures, order rate limit) delays the next attempt, epoch ms, or null. */
  heldUntil?: number | null;
  /** An attempt for this name is running now. */
  inFlight: boolean;
  /** The current time, epoch ms. */
  now: number;
}

/**
 * Derives a name's summary. Precedence: an attempt running (`renewing`,
 * keeping the last error — after giving up, only an attempt someone asked
 * for anew runs), then gave up, then failing, then due or no
 * certificate (`renewing`), else `valid`. A hold only ever moves the next
 * attempt later.
 */
export function summarizeCertificate(input: SummaryInput): CertificateSummary {
  const { backoff, now } = input;
  const base = {
    name: input.name,
    issuer: input.certificate?.issuer ?? null,
    notAfter: input.certificate?.notAfter ?? null,
    lastError: backoff?.lastError ?? null,
  };
  const held = (at: number): number => Math.max(at, input.heldUntil ?? at);
  if (input.inFlight) return { ...base, status: 'renewing', nextAttemptAt: now };
  if (backoff?.gaveUp) return { ...base, status: 'gave-up', nextAttemptAt: null };
  if (backoff) return { ...base, status: 'failing', nextAttemptAt: held(backoff.nextAttemptAt) };
  if (input.certificate === null || input.renewal === null || input.renewal.renew) {
    return { ...base, status: 'renewing', nextAttemptAt: held(now) };
  }
  return { ...base, status: 'valid', nextAttemptAt: held(input.renewal.dueAt) };
}
