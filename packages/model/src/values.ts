/**
 * The value rules every route source shares: `host:port`, domains and
 * wildcards, `<n>/s` rates and header field names. Pure functions that
 * return a value or a problem, never throw: each caller words the problem
 * for its own boundary (a Proxyfile error with its position, an admin API
 * `invalid domain: <detail>`), so one domain is valid everywhere or nowhere.
 *
 * A problem is a phrase that reads after the quoted value, e.g.
 * `"a..b" has an empty label` is `quote(text) + " " + problem`.
 */
import { isIPv4, isIPv6 } from './ip.js';

/** A parsed value, or the reason the text is not one. */
export type Parsed<T> = { ok: true; value: T } | { ok: false; problem: string };

/** A host and a port, as `parseHostPort` returns them. */
export interface HostPort {
  /** Lowercase host name, IPv4 address, or IPv6 address without brackets. */
  host: string;
  port: number;
}

/** Longest domain name, in bytes (RFC 1035; ASCII, so also in characters). */
export const MAX_DOMAIN_BYTES = 253;
/** Longest label of a domain name, in bytes (RFC 1035). */
export const MAX_LABEL_BYTES = 63;

const LABEL = /^[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?$/;
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const RATE = /^([1-9][0-9]{0,8})\/s$/;
/** A label an IPv4 parser reads as a number (WHATWG URL "ends in a number"), lowercase. */
const NUMERIC_LABEL = /^(?:[0-9]+|0x[0-9a-f]*)$/i;

const ok = <T>(value: T): Parsed<T> => ({ ok: true, value });
const fail = <T>(problem: string): Parsed<T> => ({ ok: false, problem });
/** Quotes a part of the value inside a problem, cut to 64 characters. */
const q = (text: string) => JSON.stringify(text.length > 64 ? `${text.slice(0, 64)}…` : text);

const NON_ASCII = /[\u0080-\uffff]/;

/**
 * A host name: labels of 1-63 letters, digits, `-` or `_`, neither starting
 * nor ending with `-`, joined by `.`; at most 253 characters; no trailing
 * dot. Case-insensitive; the value is lowercase. Underscores are accepted as
 * DNS and Caddy accept them (`_acme-challenge.a.test`, compose service names
 * such as `my_app`). All-digit labels are accepted, so a dotted-quad IPv4
 * address is a host name too, and so are other names ending in a number
 * (`127.1`): as a domain such a name is harmless (a route matches the Host
 * header literally). As the host of a socket address it is not: see
 * `parseHost`.
 */
export function parseHostName(text: string): Parsed<string> {
  if (text.length === 0) return fail('is empty');
  if (text.length > MAX_DOMAIN_BYTES) return fail(`is longer than ${MAX_DOMAIN_BYTES} characters`);
  // Before lowercasing: `toLowerCase` maps some non-ASCII letters to ASCII ones (U+212A KELVIN SIGN → "k").
  if (NON_ASCII.test(text))
    return fail('has a character outside ASCII (write an internationalized name in its xn-- form)');
  const name = text.toLowerCase();
  for (const label of name.split('.')) {
    if (label.length === 0) return fail('has an empty label');
    if (label.length > MAX_LABEL_BYTES) return fail(`has a label longer than ${MAX_LABEL_BYTES} characters`);
    if (!LABEL.test(label)) {
      return fail(
        label.includes('*')
          ? 'has a wildcard that is not a leading "*." label'
          : `has a label ${q(label)} that is not letters, digits, "-" or "_" (or starts or ends with "-")`,
      );
    }
  }
  return ok(name);
}

/**
 * A domain a route or a site serves: a host name (`parseHostName`), or
 * `*.<host name>`, a wildcard that matches exactly one more label. The
 * whole text, wildcard included, is at most 253 characters. The value is
 * lowercase.
 */
export function parseDomain(text: string): Parsed<string> {
  if (text.length === 0) return fail('is empty');
  if (text.length > MAX_DOMAIN_BYTES) return fail(`is longer than ${MAX_DOMAIN_BYTES} characters`);
  if (!text.startsWith('*.')) return parseHostName(text);
  const bare = text.slice(2);
  if (bare.length === 0) return fail('has nothing after the wildcard');
  const name = parseHostName(bare);
  return name.ok ? ok(`*.${name.value}`) : name;
}

/**
 * The host of a socket address: a host name (`parseHostName`), a
 * dotted-quad IPv4 address, or an IPv6 address in brackets (`[::1]`,
 * without a zone: `%eth0` names an interface of one machine only). The
 * value is lowercase, without brackets.
 *
 * A host whose last label is a number (digits, or `0x` and hex digits) must
 * be exactly a dotted-quad IPv4 address (four decimal parts 0-255 without
 * leading zeros). `2130706433`, `127.1`, `0x7f.1`, `0177.0.0.1` are what
 * `inet_aton` (and so the resolver an upstream connect goes through) reads
 * as 127.0.0.1, a spelling nobody means and address filters miss; no DNS
 * name ends in a number (RFC 3696 §2; a URL parser treats such a host as
 * IPv4, WHATWG "ends in a number"). Issue 20.
 */
export function parseHost(text: string): Parsed<string> {
  if (text.length === 0) return fail('is empty');
  if (text.startsWith('[')) {
    const inner = text.slice(1, -1);
    if (!text.endsWith(']') || inner.includes('%') || !isIPv6(inner)) return fail('is not an IPv6 address');
    return ok(inner.toLowerCase());
  }
  if (text.includes(':')) return fail('is an IPv6 address outside brackets (write e.g. [::1]:8080)');
  if (isIPv4(text)) return ok(text);
  if (NUMERIC_LABEL.test(text.slice(text.lastIndexOf('.') + 1))) {
    return fail('ends in a number but is not a dotted-quad IPv4 address (four parts 0-255, no leading zeros)');
  }
  return parseHostName(text);
}

/**
 * A TCP port in canonical decimal: digits without a leading zero (so the
 * text of an address is one spelling of it), 1-65535, or 0-65535 when
 * `allowZero` (a listen address, where 0 asks the OS for a free port).
 */
export function parsePort(text: string, allowZero = false): Parsed<number> {
  const range = allowZero ? '0-65535' : '1-65535';
  if (!/^[0-9]{1,5}$/.test(text)) return fail(`is not ${range}`);
  const port = Number(text);
  if (port > 65535 || (port === 0 && !allowZero)) return fail(`is not ${range}`);
  if (text.length > 1 && text.startsWith('0')) return fail('has a leading zero');
  return ok(port);
}

/**
 * A socket address `host:port`: the host as `parseHost` takes it (IPv6 in
 * brackets), then `:` and the port as `parsePort` takes it (1-65535, or
 * 0-65535 with `allowZero`). No scheme, path or default port.
 */
export function parseHostPort(text: string, allowZero = false): Parsed<HostPort> {
  if (text.length === 0) return fail('is empty');
  if (text.length > MAX_DOMAIN_BYTES + 8) return fail('is too long');
  if (text.includes('/')) return fail('is not host:port (no scheme or path)');
  const colon = text.lastIndexOf(':');
  if (colon < 0 || (text.startsWith('[') && !text.slice(0, colon).endsWith(']'))) {
    return fail(text.startsWith('[') && text.endsWith(']') ? 'has no port (expected host:port)' : 'is not host:port');
  }
  const portText = text.slice(colon + 1);
  const port = parsePort(portText, allowZero);
  if (!port.ok) return fail(`has a port ${q(portText)} that ${port.problem}`);
  const hostText = text.slice(0, colon);
  const host = parseHost(hostText);
  return host.ok ? ok({ host: host.value, port: port.value }) : fail(`has a host ${q(hostText)} that ${host.problem}`);
}

/**
 * A rate `<n>/s`: a positive decimal integer without a leading zero, below
 * 10^9, then `/s`. The value is n, in requests per second.
 */
export function parseRate(text: string): Parsed<number> {
  const m = RATE.exec(text);
  return m ? ok(Number(m[1])) : fail('is not <n>/s with n a whole number of at least 1');
}

/**
 * A header field name: an RFC 9110 token, one or more of letters, digits
 * and ``!#$%&'*+-.^_`|~``. The value is the name as written (case is kept:
 * HTTP/1.1 writes it that way).
 */
export function parseHeaderName(text: string): Parsed<string> {
  if (text.length === 0) return fail('is empty');
  return TOKEN.test(text) ? ok(text) : fail("is not a header name (letters, digits and !#$%&'*+-.^_`|~)");
}

/**
 * A local address a listener binds (`bind`, `default_bind`): an IP literal,
 * IPv6 with or without brackets, returned in the form a socket reports its
 * `localAddress` (IPv6 compressed and lowercase), so the two compare as text.
 * Host names are refused: a name can resolve to several addresses, or to
 * none this machine has.
 */
export function parseBindAddress(text: string): Parsed<string> {
  const bare = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  if (isIPv4(bare)) return ok(bare);
  if (isIPv6(bare) && !bare.includes('%')) return ok(new URL(`http://[${bare}]/`).hostname.slice(1, -1));
  return fail('is not an IP address (bind takes addresses such as 127.0.0.1, ::1 or 0.0.0.0, not names)');
}
