import { MAX_DOMAIN_BYTES, parseDomain } from '@proxyd/model';
import { AdminError, quote } from './errors.js';

/** Longest hostname, in bytes (RFC 1035). */
export { MAX_DOMAIN_BYTES };

// Any UTF-16 code unit outside ASCII (surrogates included).
const NON_ASCII = /[\u0080-\uffff]/;

/**
 * True when `text` has a character outside ASCII. Checked before any
 * lowercasing: `toLowerCase()` maps U+212A KELVIN SIGN to `k` (issue 20), so
 * a lowercased non-ASCII name could pass for, and act on, an ASCII one.
 */
export function hasNonAscii(text: string): boolean {
  return NON_ASCII.test(text);
}

/** The detail of `ADMIN_INVALID_DOMAIN` for a name with a non-ASCII character. */
export function nonAsciiProblem(text: string): string {
  return `${quote(text)} has a character outside ASCII (send an internationalized name as punycode, xn--…)`;
}

/**
 * The problem with a hostname pattern, or undefined when it is valid: ASCII
 * only (checked before anything lowercases it), then the model's
 * `parseDomain` rule, the one the Proxyfile applies to site names.
 * Valid: labels of 1–63 characters from `[a-z0-9_-]` that neither start nor
 * end with `-`, joined by `.`, at most 253 characters, optionally prefixed by
 * `*.` (a wildcard matching one label). Case-insensitive.
 */
export function domainProblem(domain: string): string | undefined {
  if (domain.length === 0) return 'domain is empty';
  if (hasNonAscii(domain)) return nonAsciiProblem(domain);
  const parsed = parseDomain(domain);
  return parsed.ok ? undefined : `${quote(domain)} ${parsed.problem}`;
}

/**
 * Validates a hostname pattern as sent (routes accept `*.` wildcards), then
 * lowercases it. Throws `ADMIN_INVALID_DOMAIN` with the reason.
 */
export function normalizeDomain(input: string): string {
  const problem = domainProblem(input);
  if (problem !== undefined) throw new AdminError('ADMIN_INVALID_DOMAIN', problem);
  return input.toLowerCase();
}
