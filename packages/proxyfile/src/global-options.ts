import { type GlobalOptions, parseHostPort } from '@proxyd/proxy-core/model';
import { Dispenser } from './dispenser.js';
import { ProxyfileErrorCode } from './errors.js';
import { show, type Token } from './lexer.js';
import type { Block } from './parser.js';
import { nearest } from './suggest.js';
import { isCidr, isEmail, readPort } from './values.js';

/** Private and loopback ranges, what `trusted_proxies private_ranges` stands for (as in Caddy). */
const PRIVATE_RANGES = ['192.168.0.0/16', '172.16.0.0/12', '10.0.0.0/8', '127.0.0.1/8', 'fd00::/8', '::1'];

function single(d: Dispenser, expected: string): Token {
  const t = d.nonEmptyArg(expected);
  d.end();
  d.noBlock();
  return t;
}

/**
 * The options of the global block:
 * ```
 * {
 *     http_port <port>              # default 80
 *     https_port <port>             # default 443
 *     email <address>               # ACME account contact
 *     admin <host:port>             # admin API listener (default 127.0.0.1:6190)
 *     acme_ca <directory_url>       # ACME directory (default Let's Encrypt)
 *     state_dir <dir>               # where routes and secrets persist
 *     trusted_proxies [static] <cidr|private_ranges>...
 *     geoip_db <path>               # MaxMind-format country database
 * }
 * ```
 */
const OPTIONS: Record<string, (d: Dispenser, g: GlobalOptions) => void> = {
  http_port(d, g) {
    g.http_port = readPort(d, 'a port');
    d.end();
    d.noBlock();
  },
  https_port(d, g) {
    g.https_port = readPort(d, 'a port');
    d.end();
    d.noBlock();
  },
  email(d, g) {
    const t = single(d, 'an email address');
    if (!isEmail(t.text)) throw d.unexpected(t, 'an email address', ProxyfileErrorCode.INVALID_VALUE);
    g.email = t.text;
  },
  admin(d, g) {
    const t = single(d, 'an admin address (host:port)');
    if (!parseHostPort(t.text).ok) {
      throw d.unexpected(t, 'an admin address (host:port), e.g. 127.0.0.1:6190', ProxyfileErrorCode.INVALID_VALUE);
    }
    g.admin = t.text;
  },
  acme_ca(d, g) {
    const t = single(d, 'an ACME directory URL');
    if (!/^https?:\/\/[^\s/]+/.test(t.text)) {
      throw d.unexpected(t, 'an ACME directory URL (https://…)', ProxyfileErrorCode.INVALID_VALUE);
    }
    g.acme_ca = t.text;
  },
  state_dir(d, g) {
    g.state_dir = single(d, 'a directory').text;
  },
  trusted_proxies(d, g) {
    const args = d.remainingArgs();
    d.noBlock();
    if (args[0]?.text === 'static') args.shift();
    if (args.length === 0) throw d.missing('IP ranges (CIDR) or private_ranges');
    const ranges = new Set(g.trusted_proxies);
    for (const t of args) {
      if (t.text === 'private_ranges') for (const r of PRIVATE_RANGES) ranges.add(r);
      else if (isCidr(t.text)) ranges.add(t.text);
      else
        throw d.unexpected(
          t,
          'an IP range in CIDR form (e.g. 10.0.0.0/8) or private_ranges',
          ProxyfileErrorCode.INVALID_VALUE,
        );
    }
    g.trusted_proxies = [...ranges];
  },
  geoip_db(d, g) {
    g.geoip_db = single(d, 'a database path').text;
  },
};

/** The names of the global options. */
export const GLOBAL_OPTION_NAMES: readonly string[] = Object.keys(OPTIONS);

/** Reads the global block into `g`; unknown and repeated options are errors. */
export function compileGlobal(block: Block, g: GlobalOptions): void {
  const seen = new Map<string, Token>();
  for (const line of block.lines) {
    const d = new Dispenser(line);
    const name = d.name;
    const option = Object.hasOwn(OPTIONS, name.text) ? OPTIONS[name.text] : undefined;
    if (option === undefined) {
      const near = nearest(name.text, GLOBAL_OPTION_NAMES);
      throw d.error(
        name,
        ProxyfileErrorCode.UNKNOWN_GLOBAL_OPTION,
        `unknown global option ${show(name)}${near ? `, did you mean "${near}"?` : ''} (known: ${GLOBAL_OPTION_NAMES.join(', ')})`,
      );
    }
    const first = seen.get(name.text);
    if (first) {
      throw d.error(
        name,
        ProxyfileErrorCode.DUPLICATE_DIRECTIVE,
        `global option ${show(name)} is already set at ${first.file}:${first.line}:${first.column}`,
      );
    }
    seen.set(name.text, name);
    option(d, g);
  }
}
