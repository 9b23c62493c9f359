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
  /** IPv4 ranges as `[network, mask]` pairs: checked with integer math, no allocation. */
  readonly #v4: number[] = [];
  /** Verdicts for addresses that are not dotted IPv4 (IPv6), which go through the BlockList. */
  readonly #v6Verdicts = new Map<string, boolean>();

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
      if (family === 4) {
        const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
        this.#v4.push((ipv4ToInt(addr) & mask) >>> 0, mask);
      }
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
    // net.BlockList.check allocates a SocketAddress per call (5% of a
    // request's CPU with trusted_proxies set): dotted IPv4 is checked here.
    const v4 = ipv4ToInt(ip.startsWith('::ffff:') ? ip.slice(7) : ip);
    if (v4 >= 0) {
      const ranges = this.#v4;
      for (let i = 0; i < ranges.length; i += 2) {
        if ((v4 & (ranges[i + 1] as number)) >>> 0 === ranges[i]) return true;
      }
      return false;
    }
    let verdict = this.#v6Verdicts.get(ip);
    if (verdict === undefined) {
      verdict = net.isIPv6(ip) && list.check(ip, 'ipv6');
      if (this.#v6Verdicts.size >= 4096) this.#v6Verdicts.clear();
      this.#v6Verdicts.set(ip, verdict);
    }
    return verdict;
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

/** A dotted-quad IPv4 address as an unsigned 32-bit integer, or -1 when `ip` is not one. */
function ipv4ToInt(ip: string): number {
  let value = 0;
  let octet = -1;
  let dots = 0;
  for (let i = 0; i < ip.length; i++) {
    const c = ip.charCodeAt(i);
    if (c === 46 /* . */) {
      if (octet < 0 || ++dots > 3) return -1;
      value = value * 256 + octet;
      octet = -1;
    } else if (c >= 48 && c <= 57) {
      // No leading zeros (net.isIPv4 refuses them too).
      if (octet === 0) return -1;
      octet = octet < 0 ? c - 48 : octet * 10 + (c - 48);
      if (octet > 255) return -1;
    } else return -1;
  }
  if (dots !== 3 || octet < 0) return -1;
  return value * 256 + octet;
}

function unmap(ip: string): string {
  return ip.startsWith('::ffff:') && ip.indexOf('.') > 0 ? ip.slice(7) : ip;
}
