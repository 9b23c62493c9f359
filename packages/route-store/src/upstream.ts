import type { UpstreamAddress } from '@proxyd/proxy-core/model';
import { StoreError, StoreErrorCode } from './errors.js';

const HOST_PORT = /^(?:\[([0-9a-fA-F:.]+)\]|([A-Za-z0-9._-]+)):(\d{1,5})$/;

/**
 * Parses `host:port` (IPv6 in brackets) into an upstream address; the host
 * is lowercased and stored without brackets. Throws STORE_INVALID_UPSTREAM.
 */
export function parseUpstream(text: string): UpstreamAddress {
  const m = HOST_PORT.exec(text);
  const port = Number(m?.[3]);
  const host = (m?.[1] ?? m?.[2])?.toLowerCase();
  if (!m || !host || !Number.isInteger(port) || port < 1 || port > 65535) {
    throw new StoreError(StoreErrorCode.INVALID_UPSTREAM, `invalid upstream address "${text}", expected host:port`);
  }
  return { host, port };
}

/** The canonical `host:port` text of an upstream: lowercase host, IPv6 in brackets, decimal port. */
export function formatUpstream(address: UpstreamAddress): string {
  return address.host.includes(':') ? `[${address.host}]:${address.port}` : `${address.host}:${address.port}`;
}
