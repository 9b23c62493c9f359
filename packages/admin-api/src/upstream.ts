import { isIPv6 } from 'node:net';
import { AdminError, quote } from './errors.js';

const HOST_LABEL = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;
const PORT = /^[1-9][0-9]{0,4}$/;

/**
 * The problem with an upstream socket address, or undefined when it is valid.
 * Valid: `host:port` where host is a hostname (labels of `[A-Za-z0-9-]`) or an
 * IPv4 address, or `[ipv6]:port`; port is a decimal 1–65535 without leading zeros.
 */
export function upstreamProblem(value: string): string | undefined {
  if (value.length === 0) return 'upstream is empty';
  if (value.length > 261) return `${quote(value)} is too long`;
  const colon = value.lastIndexOf(':');
  if (colon < 0) return `${quote(value)}: expected host:port`;
  const host = value.slice(0, colon);
  const port = value.slice(colon + 1);
  if (!PORT.test(port) || Number(port) > 65535) return `${quote(value)}: port must be an integer from 1 to 65535`;
  if (host.startsWith('[')) {
    if (!host.endsWith(']') || !isIPv6(host.slice(1, -1))) return `${quote(value)}: invalid IPv6 address`;
    return undefined;
  }
  if (host.length === 0) return `${quote(value)}: host is empty`;
  if (host.includes(':')) return `${quote(value)}: an IPv6 address must be in brackets, e.g. [::1]:8080`;
  if (host.length > 253) return `${quote(value)}: host is longer than 253 characters`;
  for (const label of host.split('.')) {
    if (!HOST_LABEL.test(label)) return `${quote(value)}: host must be a hostname or an IP address`;
  }
  return undefined;
}

/** Validates an upstream address; throws `ADMIN_INVALID_UPSTREAM` with the reason. */
export function checkUpstream(value: string): string {
  const problem = upstreamProblem(value);
  if (problem !== undefined) throw new AdminError('ADMIN_INVALID_UPSTREAM', problem);
  return value;
}
