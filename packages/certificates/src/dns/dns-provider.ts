/** One TXT record of a DNS-01 challenge, as a provider adds and removes it. */
export interface TxtRecord {
  /** The zone that holds the record, lowercase, no trailing dot (e.g. `example.com`). */
  zone: string;
  /** The record's full name, lowercase, no trailing dot (e.g. `_acme-challenge.www.example.com`). */
  fqdn: string;
  /** `fqdn` relative to `zone` (e.g. `_acme-challenge.www`; `@` for the apex). */
  relativeName: string;
  /** The TXT value (the challenge digest, 43 base64url characters). */
  value: string;
  /** Seconds. */
  ttl: number;
}

/**
 * A DNS provider: adds and removes one TXT record in a zone it controls.
 * `appendTxt` adds a value beside any other values of the same name (a
 * name and its wildcard are validated with two values at one name at
 * once); `deleteTxt` removes that value only. Both resolve once the
 * provider accepted the change, and throw a `CertificatesError`
 * (`CERT_DNS_UPDATE_REFUSED`) saying what the provider answered. A
 * provider never puts a credential in an error message.
 */
export interface DnsProvider {
  /** The provider's name as the Proxyfile spells it (`rfc2136`, `cloudflare`, …). */
  readonly name: string;
  appendTxt(record: TxtRecord): Promise<void>;
  deleteTxt(record: TxtRecord): Promise<void>;
}

/** `fqdn` relative to `zone` (`@` for the apex). */
export function relativeTo(fqdn: string, zone: string): string {
  if (fqdn === zone) return '@';
  return fqdn.endsWith(`.${zone}`) ? fqdn.slice(0, -(zone.length + 1)) : fqdn;
}

/** Lowercase, without a trailing dot. */
export function normalizeName(name: string): string {
  return name.toLowerCase().replace(/\.$/, '');
}
