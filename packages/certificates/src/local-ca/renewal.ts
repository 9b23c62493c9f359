/** A certificate's validity period (what `needsRenewal` reads). */
export interface Validity {
  /** First instant the certificate is valid. */
  notBefore: Date;
  /** Last instant the certificate is valid. */
  notAfter: Date;
}

/**
 * Fraction of a certificate's lifetime left at which it is renewed: 1/3,
 * as Caddy and certmagic do (a 7-day intermediate is renewed with ~2.3 days
 * left, a 12 h leaf with 4 h left).
 */
export const RENEW_WHEN_LEFT = 1 / 3;

/**
 * Whether a certificate with this validity should be replaced at `now`
 * (ms since the epoch): true once at most {@link RENEW_WHEN_LEFT} of its
 * lifetime (notAfter − notBefore) is left, and so also once it has expired.
 * Pure: the caller's clock decides.
 */
export function needsRenewal(validity: Validity, now: number): boolean {
  const notBefore = validity.notBefore.getTime();
  const notAfter = validity.notAfter.getTime();
  const lifetime = notAfter - notBefore;
  return notAfter - now <= lifetime * RENEW_WHEN_LEFT;
}
