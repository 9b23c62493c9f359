import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** Width of one token window, ms: a new token is issued per host every hour. */
export const TOKEN_WINDOW_MS = 3_600_000;
/** Windows a token stays valid: its own hour and the 167 after it (7 days). */
export const TOKEN_VALID_WINDOWS = 168;

/**
 * HMAC beacon tokens: `<window>.<mac>` where `window` is the hour of issue
 * (ms since the epoch / 3,600,000) and `mac` is HMAC-SHA256(secret,
 * `<host>|<window>`) cut to 16 bytes (base64url). A token is valid for the host
 * it was issued for, for 7 days ({@link TOKEN_VALID_WINDOWS} hours), so a cached
 * page or a tab left open still reports. The secret is random unless given:
 * the daemon keeps it in its state dir so tokens survive a restart.
 */
export class BeaconTokens {
  readonly #secret: Buffer;
  readonly #cache = new Map<string, string>();
  #cacheWindow = -1;

  /** @param secret HMAC key (default: 32 random bytes) */
  constructor(secret: Buffer = randomBytes(32)) {
    this.#secret = secret;
  }

  #mac(host: string, window: number): string {
    return createHmac('sha256', this.#secret)
      .update(`${host}|${window}`)
      .digest()
      .subarray(0, 16)
      .toString('base64url');
  }

  /** The token for `host` at `nowMs` (cached per host within a window). */
  issue(host: string, nowMs: number): string {
    const window = Math.floor(nowMs / TOKEN_WINDOW_MS);
    if (window !== this.#cacheWindow) {
      this.#cache.clear();
      this.#cacheWindow = window;
    }
    let token = this.#cache.get(host);
    if (token === undefined) {
      token = `${window}.${this.#mac(host, window)}`;
      if (this.#cache.size < 10_000) this.#cache.set(host, token);
    }
    return token;
  }

  /** True when `token` was issued for `host` by this secret in the last {@link TOKEN_VALID_WINDOWS} hours (this one included). */
  verify(host: string, token: unknown, nowMs: number): boolean {
    if (typeof token !== 'string' || token.length > 64) return false;
    const dot = token.indexOf('.');
    if (dot <= 0) return false;
    const window = Number(token.slice(0, dot));
    const current = Math.floor(nowMs / TOKEN_WINDOW_MS);
    if (!Number.isInteger(window) || window > current || window <= current - TOKEN_VALID_WINDOWS) return false;
    const given = Buffer.from(token.slice(dot + 1));
    const want = Buffer.from(this.#mac(host, window));
    return given.length === want.length && timingSafeEqual(given, want);
  }
}
