import {
  type GlobalOptions,
  parseHostPort,
  type RedisStorageConfig,
  type RedisTlsOptions,
  redisStorageDefaults,
} from '@proxyd/model';
import type { Dispenser } from './dispenser.js';
import { ProxyfileErrorCode } from './errors.js';
import { blockValue, type Seen } from './global-lines.js';
import type { Token } from './lexer.js';
import { nearest } from './suggest.js';

const BACKENDS = ['redis'];
const REDIS_OPTIONS = [
  'sentinels',
  'master_name',
  'username',
  'password',
  'password_file',
  'sentinel_password',
  'sentinel_password_file',
  'tls',
  'key_prefix',
  'encryption_key_file',
  'rate_limit_scope',
];
const SCOPES = ['node', 'fleet'];
const TLS_OPTIONS = ['ca', 'cert', 'key', 'server_name'];
const URL_EXPECTED = 'a Redis URL, redis://<host>[:<port>][/<db>] or rediss:// for TLS (e.g. redis://127.0.0.1:6379)';
/** `{env.NAME}`: the only way a secret is written in the Proxyfile. */
const ENV_PLACEHOLDER = /^\{env\.[A-Za-z_][A-Za-z0-9_]*\}$/;
const KEY_PREFIX = /^[A-Za-z0-9_.-]+$/;
/** Redis's default number of databases (`databases 16`). */
const MAX_DB = 15;

/**
 * ```
 * storage redis [<url>] {                 # <url>: redis://host[:port][/db], rediss:// for TLS
 *     sentinels <host:port>...            # instead of a url: the Sentinel set
 *     master_name <name>                  # the primary's name at Sentinel (required with sentinels)
 *     username <name>                     # ACL user
 *     password {env.NAME} | password_file <path>
 *     sentinel_password {env.NAME} | sentinel_password_file <path>
 *     tls {                               # TLS options (rediss://, or Sentinel over TLS)
 *         ca <pem_file>
 *         cert <pem_file>                 # a client certificate: cert and key, or neither
 *         key <pem_file>
 *         server_name <name>
 *     }
 *     key_prefix <prefix>                 # default proxyd
 *     encryption_key_file <path>          # values sealed with AES-256-GCM (32 bytes: raw, hex or base64)
 *     rate_limit_scope node|fleet         # where rate_limit counts (default node: each node its own)
 * }
 * ```
 * The `storage` global option: certificates, keys, ACME accounts and
 * locks in Redis (default, without it: the file storage in the cert dir).
 * A secret is never written in the file: a password in the URL is refused.
 */
export function readStorage(d: Dispenser, g: GlobalOptions): void {
  const backend = d.nonEmptyArg('a storage backend: redis (the cert dir is the default: leave storage out)');
  if (!BACKENDS.includes(backend.text)) {
    const hint = ['file_system', 'file'].includes(backend.text)
      ? ' (the file storage in the cert dir is the default: leave storage out)'
      : nearest(backend.text, BACKENDS)
        ? ' (did you mean "redis"?)'
        : '';
    throw d.unexpected(backend, `a storage backend: redis${hint}`, ProxyfileErrorCode.INVALID_VALUE);
  }
  const storage: RedisStorageConfig = redisStorageDefaults();
  const urlToken = d.nextArg();
  let tlsScheme = false;
  if (urlToken !== null) {
    d.end();
    tlsScheme = readUrl(d, urlToken, storage);
  }
  const once: Seen = new Map();
  for (const sub of d.blockLines()) readOption(sub, once, storage);
  checkWhole(d, backend, once, storage, urlToken, tlsScheme);
  g.storage = storage;
}

/** Reads `<url>` into `storage` (host, port, db, username); true for `rediss://`. */
function readUrl(d: Dispenser, t: Token, storage: RedisStorageConfig): boolean {
  let url: URL;
  try {
    url = new URL(t.text);
  } catch {
    throw d.unexpected(t, URL_EXPECTED, ProxyfileErrorCode.INVALID_VALUE);
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
    throw d.unexpected(t, URL_EXPECTED, ProxyfileErrorCode.INVALID_VALUE);
  }
  if (url.password !== '') {
    throw d.error(
      t,
      ProxyfileErrorCode.INVALID_VALUE,
      'the Redis password is a secret and is never written in the Proxyfile: drop it from the URL and use password {env.NAME} or password_file <path> in the storage block',
    );
  }
  if (url.hostname === '')
    throw d.unexpected(t, `${URL_EXPECTED} (it names no host)`, ProxyfileErrorCode.INVALID_VALUE);
  if (url.search !== '' || url.hash !== '') {
    throw d.unexpected(t, `${URL_EXPECTED} (no query or fragment)`, ProxyfileErrorCode.INVALID_VALUE);
  }
  const db = url.pathname === '' || url.pathname === '/' ? '0' : url.pathname.slice(1);
  if (!/^\d{1,2}$/.test(db) || Number(db) > MAX_DB) {
    throw d.unexpected(
      t,
      `${URL_EXPECTED} (the path is a database number, 0 to ${MAX_DB})`,
      ProxyfileErrorCode.INVALID_VALUE,
    );
  }
  storage.db = Number(db);
  if (url.username !== '') {
    try {
      storage.username = decodeURIComponent(url.username);
    } catch {
      throw d.unexpected(
        t,
        `${URL_EXPECTED} (the user name is not valid percent-encoding)`,
        ProxyfileErrorCode.INVALID_VALUE,
      );
    }
  }
  storage.url = `${url.protocol}//${url.host}`;
  return url.protocol === 'rediss:';
}

function readOption(sub: Dispenser, once: Seen, storage: RedisStorageConfig): void {
  const option = sub.name.text;
  if (option === 'sentinels') {
    claim(sub, once);
    const args = sub.remainingArgs();
    sub.noBlock();
    if (args.length === 0) throw sub.missing('Sentinel addresses, host:port (e.g. 127.0.0.1:26379)');
    for (const t of args) {
      const parsed = parseHostPort(t.text);
      if (!parsed.ok) {
        throw sub.unexpected(
          t,
          `a Sentinel address, host:port (it ${parsed.problem})`,
          ProxyfileErrorCode.INVALID_VALUE,
        );
      }
      storage.sentinels.push(t.text);
    }
    return;
  }
  if (option === 'tls') {
    claim(sub, once);
    sub.end();
    storage.tls = readTls(sub);
    return;
  }
  const expected = EXPECTED[option] ?? 'a value';
  const t = blockValue(sub, 'a storage redis', REDIS_OPTIONS, once, expected);
  if (option === 'password' || option === 'sentinel_password') {
    if (!ENV_PLACEHOLDER.test(t.text)) {
      throw sub.error(
        t,
        ProxyfileErrorCode.INVALID_VALUE,
        `${option} is a secret and is never written in the Proxyfile: use {env.NAME} (an environment variable) or ${option}_file <path>`,
      );
    }
    storage[option] = t.text;
  } else if (option === 'key_prefix') {
    if (!KEY_PREFIX.test(t.text)) throw sub.unexpected(t, expected, ProxyfileErrorCode.INVALID_VALUE);
    storage.key_prefix = t.text;
  } else if (option === 'rate_limit_scope') {
    if (!SCOPES.includes(t.text)) throw sub.unexpected(t, expected, ProxyfileErrorCode.INVALID_VALUE);
    storage.rate_limit_scope = t.text as RedisStorageConfig['rate_limit_scope'];
  } else if (option === 'master_name' || option === 'username') {
    if (/\s/.test(t.text)) throw sub.unexpected(t, expected, ProxyfileErrorCode.INVALID_VALUE);
    storage[option] = t.text;
  } else {
    storage[option as 'password_file' | 'sentinel_password_file' | 'encryption_key_file'] = t.text;
  }
}

const EXPECTED: Record<string, string> = {
  master_name: "the primary's name at Sentinel (sentinel monitor <name> …)",
  username: 'an ACL user name',
  password: 'the password as {env.NAME}',
  sentinel_password: "Sentinel's password as {env.NAME}",
  password_file: 'a file holding the password',
  sentinel_password_file: "a file holding Sentinel's password",
  key_prefix: 'a key prefix: letters, digits, "_", "." or "-" (default proxyd)',
  encryption_key_file: 'a file holding a 256-bit key (32 bytes: raw, 64 hex digits or base64)',
  rate_limit_scope: 'node (each node counts its own, the default) or fleet (every node, through Redis)',
};

/** Marks a block option seen, or throws naming where it was first set. */
function claim(sub: Dispenser, once: Seen): void {
  const first = once.get(sub.name.text);
  if (first) {
    throw sub.error(
      sub.name,
      ProxyfileErrorCode.DUPLICATE_DIRECTIVE,
      `"${sub.name.text}" is already set at ${first.file}:${first.line}:${first.column}`,
    );
  }
  once.set(sub.name.text, sub.name);
}

function readTls(d: Dispenser): RedisTlsOptions {
  const tls: RedisTlsOptions = { ca: null, cert: null, key: null, server_name: null };
  const once: Seen = new Map();
  for (const sub of d.blockLines()) {
    const option = sub.name.text as keyof RedisTlsOptions;
    const expected = option === 'server_name' ? 'a server name' : 'a PEM file';
    tls[option] = blockValue(sub, 'a storage tls', TLS_OPTIONS, once, expected).text;
  }
  if ((tls.cert === null) !== (tls.key === null)) {
    throw d.error(
      d.name,
      ProxyfileErrorCode.UNEXPECTED_END,
      'tls needs both "cert" and "key" for a client certificate, or neither',
    );
  }
  return tls;
}

/** The rules across options: a url or sentinels, master_name with sentinels, one source per secret, TLS. */
function checkWhole(
  d: Dispenser,
  backend: Token,
  once: Seen,
  storage: RedisStorageConfig,
  urlToken: Token | null,
  tlsScheme: boolean,
): void {
  const at = (name: string) => once.get(name) as Token;
  if (urlToken !== null && storage.sentinels.length > 0) {
    throw d.error(
      at('sentinels'),
      ProxyfileErrorCode.INVALID_VALUE,
      'storage redis takes a URL or sentinels, not both: Sentinel names the primary',
    );
  }
  if (urlToken === null && storage.sentinels.length === 0) {
    throw d.error(
      backend,
      ProxyfileErrorCode.UNEXPECTED_END,
      'storage redis needs a URL (storage redis redis://host:port) or "sentinels host:port…" and "master_name" in its block',
    );
  }
  if (storage.sentinels.length > 0 && storage.master_name === null) {
    throw d.error(at('sentinels'), ProxyfileErrorCode.UNEXPECTED_END, 'sentinels needs "master_name <name>" beside it');
  }
  if (storage.sentinels.length === 0 && storage.master_name !== null) {
    throw d.error(at('master_name'), ProxyfileErrorCode.INVALID_VALUE, 'master_name applies only with sentinels');
  }
  for (const secret of ['password', 'sentinel_password']) {
    if (once.has(secret) && once.has(`${secret}_file`)) {
      const second = [at(secret), at(`${secret}_file`)].sort(
        (a, b) => a.line - b.line || a.column - b.column,
      )[1] as Token;
      throw d.error(
        second,
        ProxyfileErrorCode.DUPLICATE_DIRECTIVE,
        `${secret} and ${secret}_file are one credential: set one of them`,
      );
    }
  }
  if (storage.sentinels.length === 0 && (once.has('sentinel_password') || once.has('sentinel_password_file'))) {
    const t = once.get('sentinel_password') ?? at('sentinel_password_file');
    throw d.error(t, ProxyfileErrorCode.INVALID_VALUE, `${t.text} applies only with sentinels`);
  }
  if (urlToken !== null && storage.tls !== null && !tlsScheme) {
    throw d.error(
      at('tls'),
      ProxyfileErrorCode.INVALID_VALUE,
      `tls applies to a rediss:// URL: write ${urlToken.text.replace(/^redis:/, 'rediss:')} to connect over TLS`,
    );
  }
  // A rediss:// URL without a tls block: TLS with Node's roots.
  if (tlsScheme && storage.tls === null) storage.tls = { ca: null, cert: null, key: null, server_name: null };
}
