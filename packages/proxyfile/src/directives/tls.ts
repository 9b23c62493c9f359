import { type DnsChallengeConfig, parsePort } from '@proxyd/model';
import type { Dispenser } from '../dispenser.js';
import { readDnsProvider } from '../dns-provider.js';
import { ProxyfileErrorCode } from '../errors.js';
import type { Token } from '../lexer.js';
import { nearest } from '../suggest.js';
import { parseDuration } from '../values.js';
import type { BlockState, Directive } from './directive.js';

const SUBDIRECTIVES = ['on_demand', 'dns', 'propagation_timeout', 'resolvers', 'authoritative_port'];
/** The options that tune DNS-01 and so need a DNS provider (the site's `dns` or the global `acme_dns`). */
const DNS_TUNING = ['propagation_timeout', 'resolvers', 'authoritative_port'];

/**
 * ```
 * tls auto                      # default: certificates from the ACME CA
 * tls off                       # plain HTTP only
 * tls internal                  # certificate from proxyd's local CA
 * tls <cert_file> <key_file>    # certificate and key files (PEM)
 * tls [auto|internal] {         # Caddy's block form
 *     on_demand                 # obtain at the first handshake; needs on_demand_tls { ask <url> }
 *     dns <provider> [<value>] { … }   # DNS-01 through this provider (see dns-provider.ts); auto only
 *     propagation_timeout <duration>|-1 # wait for the zone's authoritative servers (default 2m; -1: do not check)
 *     resolvers <host[:port]>...       # for the zone, CNAME and NS lookups (default: the system's)
 *     authoritative_port <port>        # where the authoritative servers answer (default 53)
 * }
 * ```
 */
export const tls: Directive = {
  name: 'tls',
  scope: 'site',
  once: true,
  parse(d, state) {
    const expected = 'auto, off, internal, or <cert_file> <key_file>';
    const policy = state.site.tls;
    const first = d.hasBlock() ? d.nextArg() : d.arg(expected);
    if (first === null) {
      readBlock(d, state);
      return;
    }
    const second = d.nextArg();
    if (second !== null) {
      d.end();
      noBlock(d, 'tls <cert_file> <key_file> takes no block; on_demand needs tls auto or tls internal');
      d.nonEmpty(first, 'a certificate file (PEM)');
      d.nonEmpty(second, 'a key file (PEM)');
      policy.mode = 'manual';
      policy.cert_file = first.text;
      policy.key_file = second.text;
      return;
    }
    switch (first.text) {
      case 'auto':
      case 'internal':
        policy.mode = first.text;
        readBlock(d, state);
        return;
      case 'off':
        noBlock(d, 'tls off takes no block; on_demand needs tls auto or tls internal');
        policy.mode = first.text;
        return;
      default:
        d.noBlock();
        d.nonEmpty(first, expected);
        if (first.text.includes('@')) {
          throw d.unexpected(
            first,
            `${expected} (set the ACME email in the global block: email <address>)`,
            ProxyfileErrorCode.INVALID_VALUE,
          );
        }
        throw d.missing(
          `a key file after the certificate file (tls <cert_file> <key_file>), or one of auto, off, internal`,
        );
    }
  },
};

/** Throws at the `{` of a form that takes no block, saying which forms do. */
function noBlock(d: Dispenser, why: string): void {
  if (d.line.block) throw d.unexpected(d.line.block.open, `the end of the line (${why})`);
}

/** The block of `tls [auto|internal] { … }`: each option once. */
function readBlock(d: Dispenser, state: BlockState): void {
  let onDemandAt: Token | null = null;
  const seen = new Map<string, Token>();
  for (const sub of d.blockLines()) {
    const name = sub.name;
    if (!SUBDIRECTIVES.includes(name.text)) {
      const near = nearest(name.text, SUBDIRECTIVES);
      throw sub.unexpected(
        name,
        `a tls option${near ? ` (did you mean "${near}"?)` : ''}: ${SUBDIRECTIVES.join(', ')}`,
        ProxyfileErrorCode.UNKNOWN_DIRECTIVE,
      );
    }
    if (name.text !== 'on_demand') {
      readDnsOption(sub, state, seen);
      continue;
    }
    if (onDemandAt !== null) {
      throw sub.error(
        name,
        ProxyfileErrorCode.DUPLICATE_DIRECTIVE,
        `"on_demand" is already set at ${onDemandAt.file}:${onDemandAt.line}:${onDemandAt.column}`,
      );
    }
    onDemandAt = name;
    sub.end();
    sub.noBlock();
    // Fail closed: without an ask endpoint anyone could make proxyd order certificates for any name.
    if (state.global.on_demand_ask === null) {
      throw sub.error(
        name,
        ProxyfileErrorCode.DIRECTIVE_NOT_ALLOWED,
        '"on_demand" needs an ask endpoint: add "on_demand_tls { ask <url> }" to the global options (without one, anyone could make proxyd order certificates for any name)',
      );
    }
    state.site.tls.on_demand = true;
  }
  const dns = state.site.tls.dns;
  if (dns != null && dns.provider === null && !state.global.acme_dns) {
    const tuning = DNS_TUNING.map((option) => seen.get(option)).find((t) => t !== undefined) as Token;
    throw d.error(
      tuning,
      ProxyfileErrorCode.DIRECTIVE_NOT_ALLOWED,
      `"${tuning.text}" tunes DNS-01, which needs a DNS provider: add "dns <provider> …" to this tls block or "acme_dns <provider> …" to the global options`,
    );
  }
}

/** A DNS-01 line of the tls block: `dns`, `propagation_timeout`, `resolvers`, `authoritative_port`. */
function readDnsOption(sub: Dispenser, state: BlockState, seen: Map<string, Token>): void {
  const name = sub.name;
  const first = seen.get(name.text);
  if (first !== undefined) {
    throw sub.error(
      name,
      ProxyfileErrorCode.DUPLICATE_DIRECTIVE,
      `"${name.text}" is already set at ${first.file}:${first.line}:${first.column}`,
    );
  }
  seen.set(name.text, name);
  const policy = state.site.tls;
  if (policy.mode !== 'auto') {
    throw sub.error(
      name,
      ProxyfileErrorCode.DIRECTIVE_NOT_ALLOWED,
      `"${name.text}" tunes the ACME DNS-01 challenge: it needs tls auto (the local CA validates nothing)`,
    );
  }
  const dns: DnsChallengeConfig = policy.dns ?? {
    provider: null,
    propagation_timeout_ms: null,
    resolvers: [],
    authoritative_port: null,
  };
  policy.dns = dns;
  switch (name.text) {
    case 'dns':
      dns.provider = readDnsProvider(sub, 'dns');
      return;
    case 'propagation_timeout': {
      const expected = 'a duration such as 2m, or -1 to skip the propagation check';
      const t = sub.nonEmptyArg(expected);
      sub.end();
      sub.noBlock();
      const ms = t.text === '-1' ? -1 : parseDuration(t.text);
      if (ms === null || ms === 0) throw sub.unexpected(t, expected, ProxyfileErrorCode.INVALID_VALUE);
      dns.propagation_timeout_ms = ms;
      break;
    }
    case 'resolvers': {
      const args = sub.remainingArgs();
      sub.noBlock();
      if (args.length === 0) throw sub.missing('one or more resolvers (host or host:port)');
      for (const t of args) {
        if (!isDnsServer(t.text)) {
          throw sub.unexpected(t, 'a resolver: host, host:port or [ipv6]:port', ProxyfileErrorCode.INVALID_VALUE);
        }
      }
      dns.resolvers = args.map((t) => t.text);
      break;
    }
    default: {
      const t = sub.nonEmptyArg('a port (1-65535)');
      sub.end();
      sub.noBlock();
      const port = parsePort(t.text);
      if (!port.ok) throw sub.unexpected(t, 'a port (1-65535)', ProxyfileErrorCode.INVALID_VALUE);
      dns.authoritative_port = port.value;
    }
  }
}

/** `host`, `host:port`, `[v6]`, `[v6]:port` or a bare IPv6 address, port 1-65535. */
function isDnsServer(text: string): boolean {
  const bracket = /^\[([0-9a-fA-F:.]+)\](?::(\d{1,5}))?$/.exec(text);
  const plain = /^([A-Za-z0-9.-]+)(?::(\d{1,5}))?$/.exec(text);
  if (bracket === null && plain === null && !/^[0-9a-fA-F:]+$/.test(text)) return false;
  const port = (bracket ?? plain)?.[2];
  return port === undefined || (Number(port) >= 1 && Number(port) <= 65535);
}
