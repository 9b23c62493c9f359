import { lifetimeRenewalTimes } from '../schedule/renewal-window.js';

/** A certificate's validity period (what `needsRenewal` reads). */
export interface Validity {
  /** First instant the certificate is valid. */
  notBefore: Date;
  /** Last instant the certificate is valid. */
  notAfter: Date;
}

/**
 * Whether a certificate with this validity should be replaced at `now`
 * (ms since the epoch): the schedule's lifetime rule (renew once at most 1/3
 * of notAfter − notBefore is left, as Caddy and certmagic do: a 7-day
 * intermediate with ~2.3 days left, a 12 h leaf with 4 h left), and so also
 * once it has expired. Pure: the caller's clock decides.
 */
export function needsRenewal(validity: Validity, now: number): boolean {
  const { renewAt } = lifetimeRenewalTimes({
    notBefore: validity.notBefore.getTime(),
    notAfter: validity.notAfter.getTime(),
  });
  return now >= renewAt;
}
