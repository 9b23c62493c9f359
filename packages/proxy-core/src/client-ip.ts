import net from 'node:net';
import { DataPlaneError, DataPlaneErrorCode } from './errors.js';

/**
 * Resolves the real client IP of a connection. `X-Forwarded-For` is believed
 * only when the peer is inside one of the trusted CIDRs; then the list is
 * walked from the right and the first address that is not itself trusted is
 * the client (what nginx's `real_ip_recursive on` and Caddy's
 * `trusted_proxies` do). With no trusted proxies the header is ignored and no
 * work is done per request.
 */
export class ClientIpResolver {
  readonly #list: net.BlockList | null;

  /** @param trusted CIDRs or bare addresses (`10.0.0.0/8`, `::1`); throws `PROXY_INVALID_CIDR`. */
  constructor(trusted: readonly string[]) {
    if (trusted.length === 0) {
      this.#list = null;
      return;
    }
    const list = new net.BlockList();
    for (const entry of trusted) {
      const slash = entry.indexOf('/');
      const addr = slash < 0 ? entry : entry.slice(0, slash);
      const family = net.isIP(addr);
      const prefix = slash < 0 ? (family === 6 ? 128 : 32) : Number(entry.slice(slash + 1));
      const max = family === 6 ? 128 : 32;
      if (family === 0 || !Number.isInteger(prefix) || prefix < 0 || prefix > max) {
        throw new DataPlaneError(DataPlaneErrorCode.INVALID_CIDR, `invalid trusted_proxies entry: ${entry}`);
      }
      list.addSubnet(addr, prefix, family === 6 ? 'ipv6' : 'ipv4');
    }
    this.#list = list;
  }

  /** Whether any proxy is trusted. */
  get enabled(): boolean {
    return this.#list !== null;
  }

  /** Whether `ip` is inside a trusted CIDR (IPv4-mapped IPv6 peers match their IPv4 form). */
  isTrusted(ip: string): boolean {
    const list = this.#list;
    if (list === null || ip.length === 0) return false;
    const family = net.isIP(ip);
    if (family === 4) return list.check(ip, 'ipv4');
    if (family === 6) {
      if (ip.startsWith('::ffff:') && net.isIPv4(ip.slice(7))) return list.check(ip.slice(7), 'ipv4');
      return list.check(ip, 'ipv6');
    }
    return false;
  }

  /**
   * The client IP: the peer address, unless the peer is trusted and sent
   * `X-Forwarded-For`. IPv4-mapped peers (`::ffff:1.2.3.4`) are reported as IPv4.
   */
  resolve(peer: string | undefined, forwardedFor: string | string[] | undefined): string {
    const ip = peer === undefined ? '' : unmap(peer);
    if (this.#list === null || forwardedFor === undefined || !this.isTrusted(ip)) return ip;
    const header = typeof forwardedFor === 'string' ? forwardedFor : forwardedFor.join(',');
    let end = header.length;
    let candidate = ip;
    while (end > 0) {
      const comma = header.lastIndexOf(',', end - 1);
      const hop = header.slice(comma + 1, end).trim();
      end = Math.max(comma, 0);
      if (hop.length === 0) continue;
      if (net.isIP(hop) === 0) return candidate;
      candidate = unmap(hop);
      if (!this.isTrusted(candidate)) return candidate;
    }
    return candidate;
  }
}

function unmap(ip: string): string {
  return ip.startsWith('::ffff:') && ip.indexOf('.') > 0 ? ip.slice(7) : ip;
}
