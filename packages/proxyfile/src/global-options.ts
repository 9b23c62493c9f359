import { type BasicAuth, defaultHistoryOptions, type GlobalOptions, parseHostPort } from '@proxyd/model';
import { readBasicAuth, readBcryptHash } from './directives/basic-auth.js';
import { Dispenser } from './dispenser.js';
import { readDnsProvider } from './dns-provider.js';
import { ProxyfileErrorCode } from './errors.js';
import { blockValue, oneOf, type Seen, single } from './global-lines.js';
import { readServers } from './global-servers.js';
import { readStorage } from './global-storage.js';
import { show, type Token } from './lexer.js';
import type { Block } from './parser.js';
import { nearest } from './suggest.js';
import {
  isBase64Url,
  isCidr,
  isEmail,
  isLoopbackHost,
  PRIVATE_RANGES,
  parseDuration,
  parseHttpUrl,
  parseSize,
  readBindAddresses,
  readDuration,
  readPort,
} from './values.js';

const ACME_CA_EXPECTED =
  'an https:// ACME directory URL (http:// only for a loopback host: localhost, 127.0.0.1, [::1])';
const KEY_TYPES: readonly GlobalOptions['key_type'][] = ['p256', 'rsa2048'];
/** What `auto_https` accepts; `on`, the default, is written by leaving the option out (as in Caddy). */
const AUTO_HTTPS: readonly GlobalOptions['auto_https'][] = ['off', 'disable_redirects', 'disable_certs'];
const EAB_OPTIONS = ['key_id', 'mac_key'];
const ON_DEMAND_OPTIONS = ['ask'];
const DOCKER_OPTIONS = ['host', 'network'];
const DOCKER_EXPECTED = 'off, or a block with host and network (discovery is on by default: leave docker out)';
const DOCKER_HOST_EXPECTED = 'a runtime endpoint: unix://<absolute path> or tcp://<host>:<port>';
const DOCKER_NETWORK_EXPECTED = 'a network name (a letter or digit, then letters, digits, "_", "." or "-")';
/** Docker's (and Podman's) rule for network names. */
const DOCKER_NETWORK = /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/;
const HISTORY_OPTIONS = ['minute_retention', 'hour_retention', 'day_retention', 'max_size'];
const HISTORY_EXPECTED =
  'off, or a block with minute_retention, hour_retention, day_retention and max_size (history is on by default: leave it out)';
/** The shortest retention of each tier, ms, and what the error says. */
const HISTORY_MIN: Record<string, [number, string]> = {
  minute_retention: [3_600_000, '1h'],
  hour_retention: [86_400_000, '1d'],
  day_retention: [86_400_000, '1d'],
};
/** The smallest `max_size`, bytes. */
const HISTORY_MIN_SIZE = 1_000_000;

const DASHBOARD_OPTIONS = ['basic_auth'];
const DASHBOARD_EXPECTED =
  'a block with basic_auth <user> <bcrypt_hash> (the dashboard is never served without credentials)';
/** The realm of the dashboard's `WWW-Authenticate` when the file names none. */
const DASHBOARD_REALM = 'proxyd dashboard';

/** Longest Unix socket path, in bytes: `sun_path` is 108 bytes on Linux, its NUL included. */
const MAX_SOCKET_PATH_BYTES = 107;

/** Options that may stand on several lines; each other option is set once. */
const REPEATABLE = new Set(['acme_ca']);

function macKey(d: Dispenser, t: Token): string {
  if (!isBase64Url(t.text)) {
    throw d.unexpected(
      t,
      'the HMAC key as the CA gave it, base64url (A-Z a-z 0-9 - _, no padding)',
      ProxyfileErrorCode.INVALID_VALUE,
    );
  }
  return t.text;
}

/** Why `text` is not a `docker { host }` endpoint (`unix://<absolute path>` or `tcp://host:port`), or null when it is one. */
function dockerHostProblem(text: string): string | null {
  if (text.startsWith('unix://')) {
    const path = text.slice('unix://'.length);
    if (!path.startsWith('/')) return `the socket path must be absolute: did you mean "unix:///${path}"?`;
    if (path === '/' || path.endsWith('/')) return 'the socket path names a directory';
    if (path.includes('\0')) return 'the socket path holds a NUL character';
    if (Buffer.byteLength(path) > MAX_SOCKET_PATH_BYTES) {
      return `the socket path is longer than ${MAX_SOCKET_PATH_BYTES} bytes, the limit of a Unix socket address`;
    }
    return null;
  }
  if (text.startsWith('tcp://')) {
    const address = text.slice('tcp://'.length);
    const parsed = parseHostPort(address);
    return parsed.ok ? null : `${JSON.stringify(address)} ${parsed.problem}`;
  }
  if (text.startsWith('/')) return `did you mean "unix://${text}"?`;
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(text)?.[1];
  if (scheme === 'http') return `did you mean "tcp://${text.slice('http://'.length)}"?`;
  if (scheme !== undefined) return `${scheme}:// is not supported`;
  return 'it has no unix:// or tcp:// scheme';
}

/**
 * The options of the global block:
 * ```
 * {
 *     http_port <port>              # default 80
 *     https_port <port>             # default 443
 *     email <address>               # ACME account contact
 *     admin <host:port>             # admin API listener (default 127.0.0.1:6190)
 *     metrics [<host>]:<port>       # GET /metrics without the admin token (default: none; no host: 127.0.0.1)
 *     auto_https off|disable_redirects|disable_certs   # default: on (certificates and redirects)
 *     acme_ca <directory_url>       # ACME directory; repeat for a fallback list (default: Let's Encrypt, the daemon's choice)
 *     acme_ca_root <pem_file>       # roots trusted for the CA's API endpoint
 *     acme_eab <key_id> <mac_key>   # external account binding; or Caddy's block:
 *     acme_eab {
 *         key_id <key_id>
 *         mac_key <mac_key>         # base64url
 *     }
 *     on_demand_tls {
 *         ask <url>                 # required by any `tls { on_demand }`
 *     }
 *     acme_dns <provider> [<value>] { … }   # DNS-01 for every ACME name without its own tls { dns } (see dns-provider.ts)
 *     key_type p256|rsa2048         # default p256
 *     state_dir <dir>               # where routes and secrets persist
 *     trusted_proxies [static] <cidr|private_ranges>...
 *     geoip_db <path>               # MaxMind-format country database
 *     default_bind <address>...    # local addresses the data-plane listeners bind (default 0.0.0.0)
 *     grace_period <duration>       # a stop waits this long for what is in flight (default 30s; 0: cut at once)
 *     history off                   # analytics history in <state_dir>/history.db, on by default; or:
 *     history {
 *         minute_retention <duration>   # per-minute rows (default 48h; at least 1h)
 *         hour_retention <duration>     # per-hour rows (default 90d; at least 1d)
 *         day_retention <duration>|forever  # per-day rows (default forever: until max_size trims the oldest)
 *         max_size <size>           # bound of the database file (default 256MB; at least 1MB)
 *     }
 *     docker off                    # container discovery (Docker/Podman labels), on by default; or:
 *     docker {
 *         host unix://<path>|tcp://<host>:<port>   # default: DOCKER_HOST, then the usual sockets
 *         network <name>            # for containers on several networks without proxy.network
 *     }
 *     servers {                     # limits of every data-plane listener (Caddy's servers option, for all of them)
 *         timeouts {
 *             read_header <duration>    # a request head must arrive within this (default 60s)
 *             read_body <duration>      # a request body may stall this long between reads (default 60s; 0: none)
 *             write <duration>          # a response must be written within this after its head arrived (default 0: none)
 *             idle <duration>           # an idle keep-alive connection or HTTP/2 session closes (default 75s; HTTP/2 120s)
 *         }
 *         max_header_size <size>    # largest request head, 1KiB to 16MiB (default 16KiB; over it 431)
 *         max_connections_per_ip <n>   # per client address on the node, trusted_proxies exempt (default 256; 0: no cap)
 *     }
 *     storage redis [<url>] { … }   # certificates and locks in Redis, shared by a fleet (see global-storage.ts; default: the cert dir)
 *     dashboard [<host>]:<port> {  # the analytics dashboard's listener (default: none; no host: 127.0.0.1)
 *         basic_auth <user> <bcrypt_hash>   # required, one line per user; or the directive's block:
 *         basic_auth ["<realm>"] {
 *             <user> <bcrypt_hash>
 *         }
 *     }
 * }
 * ```
 */
const OPTIONS: Record<string, (d: Dispenser, g: GlobalOptions, seen: Seen) => void> = {
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
  metrics(d, g) {
    const expected = 'a metrics listener address ([host]:port), e.g. 127.0.0.1:9180 or :9180';
    const t = single(d, expected);
    // Caddy's `:port` form: no host is loopback here, so a scraper elsewhere needs it written out.
    const parsed = parseHostPort(t.text.startsWith(':') ? `127.0.0.1${t.text}` : t.text);
    if (!parsed.ok) throw d.unexpected(t, `${expected} (it ${parsed.problem})`, ProxyfileErrorCode.INVALID_VALUE);
    const { host, port } = parsed.value;
    g.metrics = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  },
  auto_https(d, g) {
    const hint = d.peekArg()?.text === 'on' ? ' (on is the default: leave auto_https out)' : '';
    g.auto_https = oneOf(d, 'an auto_https mode', AUTO_HTTPS, hint);
  },
  acme_ca(d, g, seen) {
    const t = single(d, ACME_CA_EXPECTED);
    const url = parseHttpUrl(t.text);
    if (url === null || (url.protocol === 'http:' && !isLoopbackHost(url.hostname))) {
      throw d.unexpected(t, ACME_CA_EXPECTED, ProxyfileErrorCode.INVALID_VALUE);
    }
    const key = `acme_ca ${url.href}`;
    const first = seen.get(key);
    if (first) {
      throw d.error(
        t,
        ProxyfileErrorCode.DUPLICATE_DIRECTIVE,
        `acme_ca ${show(t)} is already listed at ${first.file}:${first.line}:${first.column}`,
      );
    }
    seen.set(key, t);
    g.acme_ca.push(t.text);
  },
  acme_ca_root(d, g) {
    g.acme_ca_root = single(d, 'a PEM file of CA roots').text;
  },
  acme_eab(d, g) {
    const expected = '<key_id> <mac_key>, or a block with key_id and mac_key';
    const keyId = d.nextArg();
    if (keyId !== null) {
      d.nonEmpty(keyId, 'a key identifier');
      const mac = d.nonEmptyArg('the HMAC key (acme_eab <key_id> <mac_key>)');
      d.end();
      d.noBlock();
      g.acme_eab = { key_id: keyId.text, mac_key: macKey(d, mac) };
      return;
    }
    if (!d.hasBlock()) throw d.missing(expected);
    const once: Seen = new Map();
    const eab = { key_id: '', mac_key: '' };
    for (const sub of d.blockLines()) {
      const t = blockValue(
        sub,
        'an acme_eab',
        EAB_OPTIONS,
        once,
        sub.name.text === 'key_id' ? 'a key identifier' : 'the HMAC key',
      );
      if (sub.name.text === 'key_id') eab.key_id = t.text;
      else eab.mac_key = macKey(sub, t);
    }
    for (const name of EAB_OPTIONS) {
      if (!once.has(name)) {
        throw d.error(
          d.name,
          ProxyfileErrorCode.UNEXPECTED_END,
          `acme_eab needs "${name}" in its block (key_id and mac_key)`,
        );
      }
    }
    g.acme_eab = eab;
  },
  acme_dns(d, g) {
    g.acme_dns = readDnsProvider(d, 'acme_dns');
  },
  on_demand_tls(d, g) {
    d.end();
    if (!d.hasBlock()) throw d.missing('a block with "ask <url>" (on_demand_tls {)');
    const once: Seen = new Map();
    for (const sub of d.blockLines()) {
      const t = blockValue(sub, 'an on_demand_tls', ON_DEMAND_OPTIONS, once, 'an http:// or https:// URL');
      if (parseHttpUrl(t.text) === null) {
        throw sub.unexpected(t, 'an http:// or https:// URL', ProxyfileErrorCode.INVALID_VALUE);
      }
      g.on_demand_ask = t.text;
    }
    if (g.on_demand_ask === null) {
      throw d.error(
        d.name,
        ProxyfileErrorCode.UNEXPECTED_END,
        'on_demand_tls needs "ask <url>" in its block: the endpoint that allows each name',
      );
    }
  },
  key_type(d, g) {
    g.key_type = oneOf(d, 'a key type', KEY_TYPES);
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
  default_bind(d, g) {
    g.default_bind = readBindAddresses(d);
  },
  grace_period(d, g) {
    g.grace_period_ms = readDuration(d, 0);
    d.end();
    d.noBlock();
  },
  docker(d, g) {
    const arg = d.nextArg();
    if (arg !== null) {
      if (arg.text !== 'off') {
        const hint = arg.text === 'on' ? ' (on is the default: leave docker out)' : '';
        const near = hint === '' ? nearest(arg.text, ['off']) : null;
        throw d.unexpected(
          arg,
          `off${near ? ' (did you mean "off"?)' : ''}, or a block with host and network${hint}`,
          ProxyfileErrorCode.INVALID_VALUE,
        );
      }
      d.end();
      if (d.line.block) {
        throw d.unexpected(
          d.line.block.open,
          'the end of the line (docker off takes no block: host and network apply only when discovery is on)',
        );
      }
      g.docker = { enabled: false, host: null, network: null };
      return;
    }
    if (!d.hasBlock()) throw d.missing(DOCKER_EXPECTED);
    const once: Seen = new Map();
    const docker: GlobalOptions['docker'] = { enabled: true, host: null, network: null };
    for (const sub of d.blockLines()) {
      const isHost = sub.name.text === 'host';
      const expected = isHost ? DOCKER_HOST_EXPECTED : DOCKER_NETWORK_EXPECTED;
      const t = blockValue(sub, 'a docker', DOCKER_OPTIONS, once, expected);
      if (isHost) {
        const problem = dockerHostProblem(t.text);
        if (problem !== null) {
          throw sub.unexpected(t, `${expected} (${problem})`, ProxyfileErrorCode.INVALID_VALUE);
        }
        docker.host = t.text;
      } else {
        if (!DOCKER_NETWORK.test(t.text)) throw sub.unexpected(t, expected, ProxyfileErrorCode.INVALID_VALUE);
        docker.network = t.text;
      }
    }
    g.docker = docker;
  },
  history(d, g) {
    const arg = d.nextArg();
    if (arg !== null) {
      if (arg.text !== 'off') {
        const hint = arg.text === 'on' ? ' (on is the default: leave history out)' : '';
        const near = hint === '' ? nearest(arg.text, ['off']) : null;
        throw d.unexpected(
          arg,
          `off${near ? ' (did you mean "off"?)' : ''}, or a block with the retentions and max_size${hint}`,
          ProxyfileErrorCode.INVALID_VALUE,
        );
      }
      d.end();
      if (d.line.block) {
        throw d.unexpected(
          d.line.block.open,
          'the end of the line (history off takes no block: the retentions apply only when history is on)',
        );
      }
      g.history = { ...defaultHistoryOptions(), enabled: false };
      return;
    }
    if (!d.hasBlock()) throw d.missing(HISTORY_EXPECTED);
    const once: Seen = new Map();
    const history = defaultHistoryOptions();
    for (const sub of d.blockLines()) {
      const option = sub.name.text;
      if (option === 'max_size') {
        const expected = 'a size such as 64MB or 1GiB (at least 1MB)';
        const t = blockValue(sub, 'a history', HISTORY_OPTIONS, once, expected);
        const bytes = parseSize(t.text);
        if (bytes === null || bytes < HISTORY_MIN_SIZE) {
          throw sub.unexpected(t, expected, ProxyfileErrorCode.INVALID_VALUE);
        }
        history.max_size_bytes = bytes;
        continue;
      }
      const [min, shown] = HISTORY_MIN[option] ?? [0, ''];
      const forever = option === 'day_retention' ? ' or forever' : '';
      const expected = `a duration such as 48h or 90d${forever} (at least ${shown})`;
      const t = blockValue(sub, 'a history', HISTORY_OPTIONS, once, expected);
      if (forever !== '' && t.text === 'forever') {
        history.day_retention_ms = null;
        continue;
      }
      const ms = parseDuration(t.text);
      if (ms === null || ms < min) throw sub.unexpected(t, expected, ProxyfileErrorCode.INVALID_VALUE);
      if (option === 'minute_retention') history.minute_retention_ms = ms;
      else if (option === 'hour_retention') history.hour_retention_ms = ms;
      else history.day_retention_ms = ms;
    }
    g.history = history;
  },
  servers: readServers,
  storage: readStorage,
  dashboard(d, g) {
    const expected = 'a dashboard listener address ([host]:port), e.g. :9190 or 127.0.0.1:9190';
    const t = d.nonEmptyArg(expected);
    d.end();
    // Caddy's `:port` form: no host is loopback, so a dashboard reachable from elsewhere is written out.
    const parsed = parseHostPort(t.text.startsWith(':') ? `127.0.0.1${t.text}` : t.text);
    if (!parsed.ok) throw d.unexpected(t, `${expected} (it ${parsed.problem})`, ProxyfileErrorCode.INVALID_VALUE);
    const { host, port } = parsed.value;
    if (!d.hasBlock()) throw d.missing(DASHBOARD_EXPECTED);
    const auth: BasicAuth = { realm: DASHBOARD_REALM, users: [] };
    const users = new Map<string, Token>();
    let realmAt: Token | null = null;
    for (const sub of d.blockLines()) {
      const name = sub.name;
      if (name.text !== 'basic_auth') {
        const near = nearest(name.text, DASHBOARD_OPTIONS);
        throw sub.unexpected(
          name,
          `a dashboard option${near ? ` (did you mean "${near}"?)` : ''}: ${DASHBOARD_OPTIONS.join(', ')}`,
          ProxyfileErrorCode.UNKNOWN_DIRECTIVE,
        );
      }
      // Where each user was first listed: a line's user token, or the `basic_auth` of a block.
      const listed = (user: string, at: Token, hash: string) => {
        const first = users.get(user);
        if (first) {
          throw sub.error(
            at,
            ProxyfileErrorCode.DUPLICATE_DIRECTIVE,
            `user "${user}" is already listed at ${first.file}:${first.line}:${first.column}`,
          );
        }
        users.set(user, at);
        auth.users.push({ user, hash });
      };
      if (sub.hasBlock()) {
        // The directive's form, once: its realm and its lines of users.
        if (realmAt !== null) {
          throw sub.error(
            name,
            ProxyfileErrorCode.DUPLICATE_DIRECTIVE,
            `a basic_auth block is already set at ${realmAt.file}:${realmAt.line}:${realmAt.column} (one block, or lines of basic_auth <user> <bcrypt_hash>)`,
          );
        }
        realmAt = name;
        const read = readBasicAuth(sub, DASHBOARD_REALM);
        auth.realm = read.realm;
        for (const u of read.users) listed(u.user, name, u.hash);
      } else {
        const user = sub.nonEmptyArg('a user name and a bcrypt hash (basic_auth <user> <bcrypt_hash>)');
        const hash = readBcryptHash(sub, sub.arg(`the bcrypt hash of ${show(user)}'s password`));
        sub.end();
        listed(user.text, user, hash);
      }
    }
    if (auth.users.length === 0) {
      throw d.error(
        d.name,
        ProxyfileErrorCode.UNEXPECTED_END,
        'dashboard needs "basic_auth <user> <bcrypt_hash>" in its block: it is never served without credentials, not even on loopback',
      );
    }
    g.dashboard = { address: `${host.includes(':') ? `[${host}]` : host}:${port}`, basic_auth: auth };
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
    const first = REPEATABLE.has(name.text) ? undefined : seen.get(name.text);
    if (first) {
      throw d.error(
        name,
        ProxyfileErrorCode.DUPLICATE_DIRECTIVE,
        `global option ${show(name)} is already set at ${first.file}:${first.line}:${first.column}`,
      );
    }
    seen.set(name.text, name);
    option(d, g, seen);
  }
}
