import { parseHostPort } from '@proxyd/model';
import { hasNonAscii } from './domain.js';
import { AdminError, quote } from './errors.js';

/**
 * The problem with an upstream socket address, or undefined when it is
 * valid: the model's `parseHostPort` rule, the one the Proxyfile applies to
 * `reverse_proxy` addresses. Valid: `host:port` where host is a hostname
 * (labels of `[A-Za-z0-9_-]`) or an IPv4 address, or `[ipv6]:port` without a
 * zone; port is a decimal 1–65535 without leading zeros. ASCII only,
 * checked before the rule lowercases the host.
 */
export function upstreamProblem(value: string): string | undefined {
  if (value.length === 0) return 'upstream is empty';
  if (hasNonAscii(value)) return `${quote(value)} has a character outside ASCII`;
  const parsed = parseHostPort(value);
  return parsed.ok ? undefined : `${quote(value)} ${parsed.problem}`;
}

/** Validates an upstream address; throws `ADMIN_INVALID_UPSTREAM` with the reason. */
export function checkUpstream(value: string): string {
  const problem = upstreamProblem(value);
  if (problem !== undefined) throw new AdminError('ADMIN_INVALID_UPSTREAM', problem);
  return value;
}
