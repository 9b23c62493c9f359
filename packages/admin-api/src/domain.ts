import { AdminError, quote } from './errors.js';

/** Longest hostname, in bytes (RFC 1035). */
export const MAX_DOMAIN_BYTES = 253;

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * The problem with a hostname pattern, or undefined when it is valid.
 * Valid: labels of 1–63 characters from `[a-z0-9-]` that neither start nor
 * end with `-`, joined by `.`, at most 253 characters, optionally prefixed by
 * `*.` (a wildcard matching one label). Expects lowercase input.
 */
export function domainProblem(domain: string): string | undefined {
  if (domain.length === 0) return 'domain is empty';
  if (domain.length > MAX_DOMAIN_BYTES) return `${quote(domain)} is longer than ${MAX_DOMAIN_BYTES} characters`;
  const bare = domain.startsWith('*.') ? domain.slice(2) : domain;
  if (bare.length === 0) return `${quote(domain)} has nothing after the wildcard`;
  for (const label of bare.split('.')) {
    if (label.length === 0) return `${quote(domain)} has an empty label`;
    if (label.length > 63) return `${quote(domain)} has a label longer than 63 characters`;
    if (!LABEL.test(label)) {
      return label.includes('*')
        ? `${quote(domain)}: a wildcard is only allowed as a leading "*." label`
        : `${quote(domain)}: label ${quote(label)} must use [a-z0-9-] and not start or end with "-"`;
    }
  }
  return undefined;
}

/**
 * Lowercases and validates a hostname pattern (routes accept `*.` wildcards).
 * Throws `ADMIN_INVALID_DOMAIN` with the reason.
 */
export function normalizeDomain(input: string): string {
  const domain = input.toLowerCase();
  const problem = domainProblem(domain);
  if (problem !== undefined) throw new AdminError('ADMIN_INVALID_DOMAIN', problem);
  return domain;
}
