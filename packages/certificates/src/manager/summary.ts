import type { RenewalDecision } from '../schedule/renewal-window.js';
import { type CertificateSummary, summarizeCertificate } from '../schedule/status.js';
import { byName, type Entry } from './entry.js';
import type { CertificateInfo } from './stored-certificate.js';

/** What a summary needs of maintenance: the renewal decision and the hold of a name. */
export interface RenewalView {
  renewal(entry: Entry, certificate: Pick<CertificateInfo, 'notBefore' | 'notAfter'>, now: number): RenewalDecision;
  heldUntil(entry: Entry, now: number): number | null;
}

/**
 * Every managed name's `GET /certificates` entry, sorted by name: the
 * schedule's summary (valid, renewing, failing, gave-up; last error; next
 * attempt) with the challenge type of the last order tried and the DNS-01
 * step the last failure happened at. An ACME wildcard without DNS-01 is
 * `failing` with why.
 */
export function summarizeEntries(entries: Iterable<Entry>, view: RenewalView, now: number): CertificateSummary[] {
  return [...entries].sort(byName).map((entry) => {
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
      renewal: current === null ? null : view.renewal(entry, current, now),
      backoff: entry.backoff,
      heldUntil: view.heldUntil(entry, now),
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
