import { MAX_DOMAIN_BYTES, parseDomain } from '@proxyd/proxy-core/model';
import { AdminError, quote } from './errors.js';

/** Longest hostname, in bytes (RFC 1035). */
export { MAX_DOMAIN_BYTES };

/**
 * The problem with a hostname pattern, or undefined when it is valid: the
 * model's `parseDomain` rule, the one the Proxyfile applies to site names.
 * Valid: labels of 1–63 characters from `[a-z0-9_-]` that neither start nor
 * end with `-`, joined by `.`, at most 253 characters, optionally prefixed by
 * `*.` (a wildcard matching one label). Case-insensitive.
 */
export function domainProblem(domain: string): string | undefined {
  if (domain.length === 0) return 'domain is empty';
  const parsed = parseDomain(domain);
  return parsed.ok ? undefined : `${quote(domain)} ${parsed.problem}`;
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
