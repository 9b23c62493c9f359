import { CertificatesError, CertificatesErrorCode } from '../errors.js';
import { type DnsServer, queryAny, rcodeOf, recordData } from './dns-client.js';
import { normalizeName } from './dns-provider.js';

/** How many CNAMEs {@link challengeRecordName} follows before calling it a loop. */
const MAX_CNAME_HOPS = 10;

/**
 * Where the TXT record of a DNS-01 challenge for `identifier` goes:
 * `_acme-challenge.<identifier>`, or, when that name is a CNAME (delegating
 * validation to another zone, as lego and certmagic follow), the end of
 * the CNAME chain. Lowercase, no trailing dot.
 */
export async function challengeRecordName(
  identifier: string,
  resolvers: readonly DnsServer[],
  options: { timeoutMs?: number } = {},
): Promise<string> {
  let name = `_acme-challenge.${normalizeName(identifier).replace(/^\*\./, '')}`;
  const seen = new Set([name]);
  for (let hop = 0; hop < MAX_CNAME_HOPS; hop++) {
    let answer: Awaited<ReturnType<typeof queryAny>>;
    try {
      answer = await queryAny(resolvers, name, 'CNAME', options);
    } catch (err) {
      throw new CertificatesError(
        CertificatesErrorCode.DNS_ZONE_NOT_FOUND,
        `looking up CNAME ${name} failed: ${(err as Error).message}`,
        { cause: err },
      );
    }
    const cname = answer.answers?.find((rr) => rr.type === 'CNAME' && normalizeName(rr.name) === name);
    if (cname === undefined) return name;
    const target = normalizeName(String(recordData(cname)));
    if (seen.has(target)) {
      throw new CertificatesError(
        CertificatesErrorCode.DNS_ZONE_NOT_FOUND,
        `the CNAME chain of _acme-challenge.${identifier} loops at ${target}`,
      );
    }
    seen.add(target);
    name = target;
  }
  throw new CertificatesError(
    CertificatesErrorCode.DNS_ZONE_NOT_FOUND,
    `the CNAME chain of _acme-challenge.${identifier} is longer than ${MAX_CNAME_HOPS}`,
  );
}

/**
 * The zone that holds `fqdn`: the first name from `fqdn` up its labels
 * whose SOA the resolvers answer (the SOA in the answer section, owned by
 * that very name). Throws `CERT_DNS_ZONE_NOT_FOUND` when no label has one
 * or a resolver fails.
 */
export async function findZone(
  fqdn: string,
  resolvers: readonly DnsServer[],
  options: { timeoutMs?: number } = {},
): Promise<string> {
  const labels = normalizeName(fqdn).split('.');
  const asked: string[] = [];
  // The last label alone (a TLD) is never the zone a user controls.
  for (let i = 0; i < labels.length - 1; i++) {
    const candidate = labels.slice(i).join('.');
    asked.push(candidate);
    let answer: Awaited<ReturnType<typeof queryAny>>;
    try {
      answer = await queryAny(resolvers, candidate, 'SOA', options);
    } catch (err) {
      throw new CertificatesError(
        CertificatesErrorCode.DNS_ZONE_NOT_FOUND,
        `no zone found for ${fqdn}: ${(err as Error).message}`,
        { cause: err },
      );
    }
    const rcode = rcodeOf(answer);
    if (rcode !== 'NOERROR' && rcode !== 'NXDOMAIN') {
      throw new CertificatesError(
        CertificatesErrorCode.DNS_ZONE_NOT_FOUND,
        `no zone found for ${fqdn}: SOA ${candidate} answered ${rcode}`,
      );
    }
    const soa = answer.answers?.find((rr) => rr.type === 'SOA' && normalizeName(rr.name) === candidate);
    if (soa !== undefined) return candidate;
  }
  throw new CertificatesError(
    CertificatesErrorCode.DNS_ZONE_NOT_FOUND,
    `no zone found for ${fqdn}: no SOA at ${asked.join(', ')}`,
  );
}
