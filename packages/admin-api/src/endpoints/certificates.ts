import type { Endpoint } from '../endpoint.js';
import { AdminError, quote } from '../errors.js';
import type { CertificateInfo } from '../ports.js';
import { type Certificate, CertificateList } from '../schemas.js';

/** An epoch-ms time as RFC 3339 (`toISOString`, as analytics timestamps); null stays null. */
function rfc3339(ms: number | null, field: string, name: string): string | null {
  if (ms === null) return null;
  // A non-finite time is a port bug: answer like a response that fails its schema.
  if (typeof ms !== 'number' || !Number.isFinite(ms) || Math.abs(ms) > 8.64e15) {
    throw new AdminError('ADMIN_SERIALIZE', `${field} of ${quote(String(name))} is not a time`);
  }
  return new Date(ms).toISOString();
}

function toCertificate(info: CertificateInfo): Certificate {
  return {
    name: info.name,
    issuer: info.issuer,
    not_after: rfc3339(info.notAfter, 'not_after', info.name),
    status: info.status,
    last_error: info.lastError,
    next_attempt: rfc3339(info.nextAttemptAt, 'next_attempt', info.name),
    challenge: info.challenge ?? null,
    dns_step: info.dnsStep ?? null,
  };
}

/** `GET /certificates`: every name automatic HTTPS manages; `[]` when none or when automatic HTTPS is off. */
export const listCertificates: Endpoint = {
  method: 'GET',
  path: '/certificates',
  url: '/certificates',
  tag: 'certificates',
  operationId: 'listCertificates',
  summary: 'Managed certificates',
  description:
    'Every name automatic HTTPS manages, sorted by name, with issuer, expiry, status, last error, next attempt, and the challenge type and failed DNS-01 step; times are RFC 3339 strings in UTC. [] when no name is managed, also when automatic HTTPS is off.',
  auth: true,
  responses: { 200: { description: 'The managed names', schema: CertificateList } },
  errors: {
    500: 'internal error: the certificate manager failed to answer; serialize error: a row could not be serialized',
  },
  handler: (ctx) => async () => {
    if (ctx.certificates === undefined) return [];
    const rows = await ctx.certificates.list();
    return rows.map(toCertificate).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  },
};
