import { isIP } from 'node:net';
import {
  CATCH_ALL_HOST,
  parseBindAddress,
  parseDomain,
  parseHeaderName,
  parseHost,
  parsePort,
  type SiteAddress,
  type UpstreamAddress,
} from '@proxyd/model';
import type { Dispenser } from './dispenser.js';
import { ProxyfileErrorCode } from './errors.js';
import { quoteText, show, type Token, width } from './lexer.js';

// Structure only (brackets, optional port); the host and the port go through the model's rules.
const HOST_PORT = /^(\[[^\]]*\]|[^:/[\]]+)(?::(\d{1,5}))?$/;

/** Reads a `port` argument (1–65535). */
export function readPort(d: Dispenser, what: string): number {
  const t = d.arg(`${what} (1-65535)`);
  const port = parsePort(t.text);
  if (!port.ok) throw d.unexpected(t, `${what} (1-65535)`, ProxyfileErrorCode.INVALID_VALUE);
  return port.value;
}

/**
 * Reads the rest of the line as local addresses to bind (`bind`,
 * `default_bind`): one or more IP literals, canonical, without repeats.
 */
export function readBindAddresses(d: Dispenser): string[] {
  const args = d.remainingArgs();
  d.noBlock();
  if (args.length === 0) throw d.missing('one or more IP addresses (e.g. 127.0.0.1 or ::1)');
  const addresses = new Set<string>();
  for (const t of args) {
    const parsed = parseBindAddress(t.text);
    if (!parsed.ok) throw d.error(t, ProxyfileErrorCode.INVALID_VALUE, `${show(t)} ${parsed.problem}`);
    addresses.add(parsed.value);
  }
  return [...addresses];
}

/**
 * Splits one address token (`a.com,b.com` may share a token) into site
 * addresses: `[http://|https://]host[:port]`, host a domain, `*.domain` or an IP.
 */
export function parseSiteAddresses(d: Dispenser, t: Token): { address: SiteAddress; token: Token }[] {
  if (t.text === '') {
    throw d.error(t, ProxyfileErrorCode.INVALID_SITE_ADDRESS, `unexpected empty value ${show(t)}, ${ADDRESS_FORMS}`);
  }
  const out: { address: SiteAddress; token: Token }[] = [];
  // Columns of the parts are exact only where the text is what was written.
  const exact = !t.quoted && t.source === undefined;
  let offset = 0;
  for (const part of t.text.split(',')) {
    const token = exact ? { ...t, text: part, raw: part, column: t.column + offset } : { ...t, text: part };
    offset += width(part) + 1;
    if (part === '') continue;
    out.push({ address: parseSiteAddress(d, token), token });
  }
  return out;
}

const ADDRESS_FORMS =
  'expected a site address: [http://|https://]host[:port] with a domain, *.domain, localhost or an IP, or a catch-all such as ":8080" or "http://"';

function parseSiteAddress(d: Dispenser, t: Token): SiteAddress {
  const bad = (why: string) =>
    d.error(t, ProxyfileErrorCode.INVALID_SITE_ADDRESS, `invalid site address ${show(t)}: ${why}`);
  let rest = t.text;
  let scheme: SiteAddress['scheme'] = null;
  const schemeMatch = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(rest);
  if (schemeMatch) {
    const s = (schemeMatch[1] as string).toLowerCase();
    if (s !== 'http' && s !== 'https') throw bad(`unsupported scheme ${quoteText(s)} (use http:// or https://)`);
    scheme = s;
    rest = rest.slice(schemeMatch[0].length);
  }
  const slash = rest.indexOf('/');
  if (slash !== -1) throw bad('a site address has no path (route paths with handle <path> inside the block)');
  // A catch-all (Caddy's ":8080", "http://"): any host on the port, plain HTTP (no name, no certificate).
  if (rest === '' || rest.startsWith(':')) {
    if (scheme === 'https') {
      throw bad(
        'a catch-all site has no host name to obtain a certificate for: write http:// or :<port> for plain HTTP, or name the host',
      );
    }
    if (rest === '') {
      if (scheme === null) throw bad('expected [http://|https://]host[:port]');
      return { scheme: 'http', host: CATCH_ALL_HOST, port: null };
    }
    const parsed = /^:\d{1,5}$/.test(rest) ? parsePort(rest.slice(1)) : null;
    if (parsed === null) throw bad('expected a catch-all ":<port>" (1-65535)');
    if (!parsed.ok) throw bad(`port "${rest.slice(1)}" ${parsed.problem}`);
    return { scheme: 'http', host: CATCH_ALL_HOST, port: parsed.value };
  }
  const m = HOST_PORT.exec(rest);
  if (!m) throw bad('expected [http://|https://]host[:port]');
  let host = (m[1] as string).toLowerCase();
  if (host === '*') {
    throw bad(
      'the host "*" is not a catch-all ("*." matches one label, as in *.example.com): write ":<port>" or "http://" for a site that answers any host',
    );
  }
  if (host.startsWith('[')) {
    const ip = parseHost(host);
    if (!ip.ok) throw bad(`${quoteText(host.slice(1, -1))} is not an IPv6 address`);
    host = ip.value;
  } else {
    const domain = parseDomain(host);
    if (!domain.ok) {
      throw bad(
        `${quoteText(host)} is not a valid domain (labels of letters, digits, "-" or "_", at most 63 characters each; "*." only as the first label)`,
      );
    }
    host = domain.value;
  }
  let port: number | null = null;
  if (m[2] !== undefined) {
    const parsed = parsePort(m[2]);
    if (!parsed.ok) throw bad(`port "${m[2]}" ${parsed.problem}`);
    port = parsed.value;
  }
  return { scheme, host, port };
}

/** An upstream as written: the address and whether its scheme asked for TLS. */
export interface ParsedUpstream {
  address: UpstreamAddress;
  /** `https://` → true, `http://` → false, no scheme → null. */
  tls: boolean | null;
}

const UPSTREAM_EXPECTED = 'an upstream address (host:port)';

/**
 * Parses `host:port`, `[v6]:port`, or `http(s)://host[:port]` (default port
 * 80 / 443); as in Caddy, `:port` is `localhost:port` and a bare
 * `localhost` is `localhost:80`.
 */
export function parseUpstream(d: Dispenser, t: Token): ParsedUpstream {
  const fail = () => d.unexpected(t, UPSTREAM_EXPECTED, ProxyfileErrorCode.INVALID_UPSTREAM);
  let rest = t.text;
  let tls: boolean | null = null;
  const lower = rest.toLowerCase();
  if (lower.startsWith('https://')) {
    tls = true;
    rest = rest.slice(8);
  } else if (lower.startsWith('http://')) {
    tls = false;
    rest = rest.slice(7);
  }
  if (rest.endsWith('/')) rest = rest.slice(0, -1);
  // Caddy's ":9000": a port on this machine.
  if (rest.startsWith(':')) rest = `localhost${rest}`;
  const m = HOST_PORT.exec(rest);
  if (!m) throw fail();
  const host = parseHost(m[1] as string);
  if (!host.ok) throw fail();
  let port: number;
  if (m[2] === undefined) {
    // Caddy's default port; only for localhost, where no other port is likely meant.
    if (tls === null && host.value !== 'localhost') throw fail();
    port = tls === true ? 443 : 80;
  } else {
    const parsed = parsePort(m[2]);
    if (!parsed.ok) {
      throw d.error(
        t,
        ProxyfileErrorCode.INVALID_UPSTREAM,
        `invalid upstream ${show(t)}: port "${m[2]}" ${parsed.problem}, expected ${UPSTREAM_EXPECTED}`,
      );
    }
    port = parsed.value;
  }
  return { address: { host: host.value, port }, tls };
}

const DURATION_UNITS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};
const DURATION_PART = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h|d)/y;

/** Parses a Go/Caddy duration (`500ms`, `10s`, `1m30s`, `1.5h`, `2d`; bare `0`) into whole milliseconds. */
export function parseDuration(text: string): number | null {
  if (text === '0') return 0;
  if (text === '') return null;
  let total = 0;
  DURATION_PART.lastIndex = 0;
  let pos = 0;
  while (pos < text.length) {
    DURATION_PART.lastIndex = pos;
    const m = DURATION_PART.exec(text);
    if (!m) return null;
    total += Number(m[1]) * (DURATION_UNITS[m[2] as string] as number);
    pos = DURATION_PART.lastIndex;
  }
  const ms = Math.round(total);
  return Number.isSafeInteger(ms) ? ms : null;
}

/** Reads a duration argument; `min` is the smallest allowed value in ms. */
export function readDuration(d: Dispenser, min: number): number {
  const expected = 'a duration such as 500ms, 10s or 1m';
  const t = d.arg(expected);
  const ms = parseDuration(t.text);
  if (ms === null) throw d.unexpected(t, expected, ProxyfileErrorCode.INVALID_VALUE);
  if (ms < min)
    throw d.error(t, ProxyfileErrorCode.INVALID_VALUE, `duration ${show(t)} is too short: at least ${min}ms`);
  return ms;
}

const SIZE_UNITS: Record<string, number> = {
  '': 1,
  b: 1,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  tb: 1e12,
  kib: 1024,
  mib: 1024 ** 2,
  gib: 1024 ** 3,
  tib: 1024 ** 4,
};

/** Parses a byte size: `1048576`, `512KB`, `10MB`, `1GB` (powers of 1000) or `10MiB`, `1GiB` (powers of 1024). */
export function parseSize(text: string): number | null {
  const m = /^(\d+(?:\.\d+)?)([a-z]*)$/i.exec(text);
  if (!m) return null;
  const unit = SIZE_UNITS[(m[2] as string).toLowerCase()];
  if (unit === undefined) return null;
  const bytes = Math.floor(Number(m[1]) * unit);
  return Number.isSafeInteger(bytes) ? bytes : null;
}

/** Checks a header field name (the model's `parseHeaderName`: an RFC 9110 token). */
export function checkHeaderName(d: Dispenser, t: Token, name: string): void {
  if (!parseHeaderName(name).ok) {
    throw d.unexpected(t, "a header name (letters, digits and !#$%&'*+-.^_`|~)", ProxyfileErrorCode.INVALID_VALUE);
  }
}

/**
 * Private and loopback ranges, what `private_ranges` stands for in
 * `trusted_proxies`, `client_ip` and `remote_ip` (as in Caddy).
 */
export const PRIVATE_RANGES = ['192.168.0.0/16', '172.16.0.0/12', '10.0.0.0/8', '127.0.0.1/8', 'fd00::/8', '::1'];

/** Whether `text` is an IP address or a CIDR range (`10.0.0.0/8`, `fd00::/8`). */
export function isCidr(text: string): boolean {
  const slash = text.indexOf('/');
  if (slash === -1) return isIP(text) !== 0;
  const ip = text.slice(0, slash);
  const bits = text.slice(slash + 1);
  const v = isIP(ip);
  if (v === 0 || !/^\d{1,3}$/.test(bits)) return false;
  return Number(bits) <= (v === 4 ? 32 : 128);
}

/** Whether a string is a plausible email address (`local@domain`). */
export function isEmail(text: string): boolean {
  return /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(text);
}

/** Whether `host` (a URL's hostname) is loopback: `localhost`, `*.localhost`, 127.0.0.0/8 or `[::1]`. */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase();
  if (h === 'localhost' || h.endsWith('.localhost') || h === '[::1]') return true;
  return isIP(h) === 4 && h.startsWith('127.');
}

/**
 * Parses an absolute `http://` or `https://` URL with a host, without
 * credentials or a fragment; null for anything else.
 */
export function parseHttpUrl(text: string): URL | null {
  if (!/^https?:\/\/[^\s/?#]+[^\s]*$/.test(text) || !URL.canParse(text)) return null;
  const url = new URL(text);
  if (url.hostname === '' || url.username !== '' || url.password !== '' || url.hash !== '') return null;
  return url;
}

/** Whether `text` is base64url (RFC 4648 §5) without padding, of a length some bytes encode to. */
export function isBase64Url(text: string): boolean {
  return /^[A-Za-z0-9_-]+$/.test(text) && text.length % 4 !== 1;
}
