import type { BasicAuth } from '@proxyd/model';
import type { Dispenser } from '../dispenser.js';
import { ProxyfileErrorCode } from '../errors.js';
import { show, type Token } from '../lexer.js';
import type { Directive } from './directive.js';

const BCRYPT = /^\$2[aby]\$(\d{2})\$([./A-Za-z0-9]*)$/;
const DEFAULT_REALM = 'restricted';

/**
 * Checks a bcrypt hash: `$2a$`, `$2b$` or `$2y$`, a two-digit cost 04–31,
 * `$`, then 53 characters of bcrypt's base64 (22 of salt, 31 of hash). A hash
 * wrapped in base64 (as Caddy 2.0–2.7 printed them) is unwrapped.
 */
export function readBcryptHash(d: Dispenser, t: Token): string {
  let hash = t.text;
  if (!hash.startsWith('$') && /^[A-Za-z0-9+/]+=*$/.test(hash)) {
    try {
      const decoded = atob(hash);
      if (decoded.startsWith('$2')) hash = decoded;
    } catch {
      // Not base64: reported below as a malformed hash.
    }
  }
  const bad = (why: string) =>
    d.error(t, ProxyfileErrorCode.INVALID_BCRYPT_HASH, `malformed bcrypt hash ${show(t)}: ${why}`);
  const m = BCRYPT.exec(hash);
  if (!m) {
    throw bad(
      'expected $2a$, $2b$ or $2y$, a two-digit cost and 53 characters (create one with `htpasswd -nbB user password` or `proxyd hash-password`)',
    );
  }
  const cost = Number(m[1]);
  if (cost < 4 || cost > 31) throw bad(`cost ${m[1]} is outside 04-31`);
  const body = m[2] as string;
  if (body.length !== 53) throw bad(`expected 53 characters after the cost, found ${body.length}`);
  return hash;
}

/**
 * Reads `basic_auth [bcrypt] ["<realm>"] { <user> <bcrypt_hash> ... }` at the
 * dispenser: the directive's form, also the `dashboard` global option's.
 */
export function readBasicAuth(d: Dispenser, defaultRealm = DEFAULT_REALM): BasicAuth {
  let realm = defaultRealm;
  const args = d.remainingArgs();
  if (args.length === 2 && args[0]?.text === 'bcrypt') args.shift();
  if (args.length > 1) {
    throw d.unexpected(args[1] as Token, 'the end of the line (basic_auth ["<realm>"] { <user> <bcrypt_hash> })');
  }
  if (args[0]) realm = args[0].text;
  if (!d.hasBlock()) throw d.missing('"{" and lines of <user> <bcrypt_hash>');
  const auth: BasicAuth = { realm, users: [] };
  const users = new Map<string, Token>();
  for (const sub of d.blockLines()) {
    const user = sub.name;
    sub.nonEmpty(user, 'a user name');
    const first = users.get(user.text);
    if (first) {
      throw sub.error(
        user,
        ProxyfileErrorCode.DUPLICATE_DIRECTIVE,
        `user ${show(user)} is already listed at ${first.file}:${first.line}:${first.column}`,
      );
    }
    users.set(user.text, user);
    const hash = readBcryptHash(sub, sub.arg(`the bcrypt hash of ${show(user)}'s password`));
    sub.end();
    sub.noBlock();
    auth.users.push({ user: user.text, hash });
  }
  if (auth.users.length === 0) {
    const close = (d.line.block as { close: Token }).close;
    throw d.unexpected(close, 'at least one line of <user> <bcrypt_hash>');
  }
  return auth;
}

/**
 * ```
 * basic_auth [bcrypt] ["<realm>"] {
 *     <user> <bcrypt_hash>
 *     ...
 * }
 * ```
 * HTTP Basic authentication in front of everything else in the block. The
 * realm defaults to "restricted"; hashes are bcrypt (`$2a$`, `$2b$`, `$2y$`).
 * `basicauth` is accepted as Caddy's older spelling.
 */
export const basicAuth: Directive = {
  name: 'basic_auth',
  scope: 'any',
  once: true,
  parse(d, state) {
    state.target.basic_auth = readBasicAuth(d);
  },
};
