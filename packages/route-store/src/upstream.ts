import { parseHostPort, type UpstreamAddress } from '@proxyd/model';
import { StoreError, StoreErrorCode } from './errors.js';

/**
 * Parses `host:port` (IPv6 in brackets) into an upstream address by the
 * model's rule (`parseHostPort`: port 1-65535 without a leading zero, a valid
 * host name, IPv4 or bracketed IPv6); the host is lowercased and stored
 * without brackets. Throws STORE_INVALID_UPSTREAM.
 */
export function parseUpstream(text: string): UpstreamAddress {
  const parsed = parseHostPort(text);
  if (!parsed.ok) {
    throw new StoreError(StoreErrorCode.INVALID_UPSTREAM, `invalid upstream address "${text}", expected host:port`);
  }
  return parsed.value;
}

/** The canonical `host:port` text of an upstream: lowercase host, IPv6 in brackets, decimal port. */
export function formatUpstream(address: UpstreamAddress): string {
  return address.host.includes(':') ? `[${address.host}]:${address.port}` : `${address.host}:${address.port}`;
}
