import { createHash, timingSafeEqual } from 'node:crypto';
import type { BasicAuth } from '@proxyd/model';
import bcrypt from 'bcryptjs';
import { VerificationGate } from './verification-gate.js';

/** Checks a password against a bcrypt hash (injectable for tests). */
export type PasswordVerifier = (password: string, hash: string) => Promise<boolean>;

/** Options of {@link BasicAuthenticator}. */
export interface BasicAuthOptions {
  /** Default: bcryptjs `compare` (asynchronous, yields to the event loop). */
  verify?: PasswordVerifier;
  /** The clock, ms since the epoch (default `Date.now`). */
  now?: () => number;
  /** How long a successful verification is remembered, ms (default 300,000). */
  cacheTtlMs?: number;
  /** How many successful verifications are remembered (default 1,024). */
  cacheSize?: number;
  /** Bounds the verifications running and waiting (default: one gate shared by the whole process). */
  gate?: VerificationGate;
}

/**
 * The process-wide gate of every {@link BasicAuthenticator} built without
 * its own: bcrypt shares one event loop, whichever site asks.
 */
export const SHARED_VERIFICATION_GATE = new VerificationGate();

/** Outcome of {@link BasicAuthenticator.check} when known at once. */
export const AUTH_OK = 0;
/** Outcome: no, or malformed, credentials — answer 401 without any bcrypt. */
export const AUTH_DENIED = 1;
/**
 * Outcome: too many verifications running and waiting (see
 * {@link VerificationGate}); no bcrypt ran. Compare by identity and answer
 * 503 with `Retry-After`; it is an already-resolved `false`, so a caller that
 * only awaits verdicts reads it as a refusal, never as a success.
 */
export const AUTH_BUSY: Promise<boolean> = Promise.resolve(false);

interface User {
  /** SHA-256 of the user name (fixed length, for a constant-time compare). */
  readonly nameDigest: Buffer;
  readonly hash: string;
}

/**
 * `basic_auth "<realm>" { <user> <bcrypt_hash> }`.
 *
 * Constant-time user lookup: the SHA-256 of the given name is compared with
 * every user's (no early exit), and exactly one bcrypt runs whether the user
 * exists or not (an unknown name is checked against the first user's hash
 * and refused whatever the result), so timing does not reveal user names.
 *
 * A successful verification is remembered, keyed by the SHA-256 of the
 * whole `Authorization` value (the credentials themselves are not kept),
 * for `cacheTtlMs`, at most `cacheSize` entries (oldest dropped first), so a
 * correct password costs one bcrypt per TTL, not one per request; parallel
 * requests with the same header while it is being verified share that one
 * bcrypt (a page and its assets on first load). Failures are not remembered.
 *
 * Every bcrypt goes through a {@link VerificationGate} (by default one for
 * the process: 2 running, 16 waiting); when it is full, {@link AUTH_BUSY}.
 */
export class BasicAuthenticator {
  /** The `WWW-Authenticate` value: `Basic realm="…"` with `"` and `\` escaped. */
  readonly challenge: string;
  readonly #users: readonly User[];
  readonly #verify: PasswordVerifier;
  readonly #now: () => number;
  readonly #ttl: number;
  readonly #size: number;
  /** Authorization digest (base64) → expiry, ms. Insertion order = age. */
  readonly #cache = new Map<string, number>();
  /** Verifications in flight by Authorization digest: parallel requests share one bcrypt. */
  readonly #pending = new Map<string, Promise<boolean>>();
  readonly #gate: VerificationGate;

  constructor(config: BasicAuth, options: BasicAuthOptions = {}) {
    this.challenge = `Basic realm="${config.realm.replace(/["\\]/g, '\\$&')}"`;
    this.#users = config.users.map((u) => ({ nameDigest: sha256(u.user), hash: u.hash }));
    this.#verify = options.verify ?? ((password, hash) => bcrypt.compare(password, hash));
    this.#now = options.now ?? Date.now;
    this.#ttl = options.cacheTtlMs ?? 300_000;
    this.#size = options.cacheSize ?? 1024;
    this.#gate = options.gate ?? SHARED_VERIFICATION_GATE;
  }

  /**
   * Checks an `Authorization` header: {@link AUTH_OK} (remembered success),
   * {@link AUTH_DENIED} (absent or malformed), {@link AUTH_BUSY} (the gate
   * is full), or a promise of the bcrypt verdict.
   */
  check(authorization: string | undefined): typeof AUTH_OK | typeof AUTH_DENIED | Promise<boolean> {
    if (authorization === undefined || authorization.length < 7) return AUTH_DENIED;
    if (authorization.slice(0, 6).toLowerCase() !== 'basic ') return AUTH_DENIED;
    const key = createHash('sha256').update(authorization).digest('base64');
    const expires = this.#cache.get(key);
    if (expires !== undefined) {
      if (expires > this.#now()) return AUTH_OK;
      this.#cache.delete(key);
    }
    const pending = this.#pending.get(key);
    if (pending !== undefined) return pending;
    const decoded = Buffer.from(authorization.slice(6).trim(), 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) return AUTH_DENIED;
    const nameDigest = sha256(decoded.slice(0, colon));
    const password = decoded.slice(colon + 1);
    let found: User | undefined;
    for (const user of this.#users) {
      if (timingSafeEqual(user.nameDigest, nameDigest) && found === undefined) found = user;
    }
    const hash = (found ?? (this.#users[0] as User)).hash;
    const verify = this.#verify;
    const running = this.#gate.run(() => verify(password, hash));
    if (running === null) return AUTH_BUSY;
    const verdict = running.then(
      (ok) => {
        this.#pending.delete(key);
        if (!ok || found === undefined) return false;
        this.#remember(key);
        return true;
      },
      () => {
        this.#pending.delete(key);
        return false;
      },
    );
    this.#pending.set(key, verdict);
    return verdict;
  }

  /**
   * Whether {@link check} would answer {@link AUTH_OK} now (a remembered
   * success), without its side effects: no verification starts, nothing
   * is dropped. The fast path serves such a request; any other goes to
   * node:http, whose `check` answers it.
   */
  remembered(authorization: string | undefined): boolean {
    if (authorization === undefined || authorization.length < 7) return false;
    if (authorization.slice(0, 6).toLowerCase() !== 'basic ') return false;
    const expires = this.#cache.get(createHash('sha256').update(authorization).digest('base64'));
    return expires !== undefined && expires > this.#now();
  }

  #remember(key: string): void {
    this.#cache.delete(key);
    while (this.#cache.size >= this.#size) {
      const oldest = this.#cache.keys().next();
      if (oldest.done === true) break;
      this.#cache.delete(oldest.value);
    }
    this.#cache.set(key, this.#now() + this.#ttl);
  }

  /** Remembered verifications (for tests). */
  get cached(): number {
    return this.#cache.size;
  }
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}
