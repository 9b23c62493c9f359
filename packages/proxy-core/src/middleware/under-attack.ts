import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { UNDER_ATTACK_MAX_DIFFICULTY } from '@proxyd/model/rules';
import { markRequest, type RequestContext, RequestEvent } from '../hooks.js';
import { challengePage } from './challenge-page.js';
import type { HeaderEdit } from './header-plan.js';

/** The reserved path the challenge page POSTs its solution to. */
export const CHALLENGE_PATH = '/_proxyd/challenge';
/** Name of the clearance cookie. */
export const CLEARANCE_COOKIE = '__proxyd_clearance';
/** Status of the challenge page (as Cloudflare's: the content is not served yet). */
export const CHALLENGE_STATUS = 503;

const COOKIE_PREFIX = `${CLEARANCE_COOKIE}=`;
const TEXT = 'text/plain; charset=utf-8';
const MAX_BODY = 1024;

/** Options of {@link UnderAttackGuard}. */
export interface UnderAttackOptions {
  /** HMAC-SHA256 key, per process, never sent to clients (≥ 32 bytes recommended). */
  secret: Buffer;
  /** Leading zero bits of SHA-256 the proof of work needs, 1 to {@link UNDER_ATTACK_MAX_DIFFICULTY} (the model's default is 16). */
  difficulty: number;
  /** The clock, ms since the epoch (default `Date.now`). */
  now?: () => number;
  /** Lifetime of a clearance cookie, s (default 3600). */
  clearanceTtlS?: number;
  /** Time a client has to solve a challenge, s (default 300). */
  challengeTtlS?: number;
}

/**
 * `under_attack`: a client without a valid clearance cookie gets a small
 * HTML+JS proof-of-work page (status 503, `Cache-Control: no-store`) instead
 * of the site; the upstream is never contacted for it.
 *
 * - Challenge token: `<nonce>.<expires s>.<difficulty>.<mac>`, the MAC being
 *   HMAC-SHA256(secret, `c1|domain|client ip|nonce|expires|difficulty`),
 *   base64url. Solving it: a decimal counter such that
 *   SHA-256(`<token>:<counter>`) begins with `difficulty` zero bits.
 * - `POST /_proxyd/challenge` with `token=…&counter=…` (form-encoded, ≤ 1 KiB):
 *   valid → 204 with the cookie; otherwise 403 (400 when malformed, 405 for
 *   other methods).
 * - Clearance cookie `__proxyd_clearance=<expires s>.<mac>`, MAC over
 *   `k1|domain|client ip|expires`: bound to the client IP and the route's
 *   domain, 1 hour, `HttpOnly; SameSite=Lax; Path=/`, plus `Secure` on HTTPS.
 */
export class UnderAttackGuard {
  readonly #secret: Buffer;
  readonly #difficulty: number;
  readonly #now: () => number;
  readonly #clearanceTtl: number;
  readonly #challengeTtl: number;

  constructor(options: UnderAttackOptions) {
    const d = options.difficulty;
    if (!Number.isInteger(d) || d < 1 || d > UNDER_ATTACK_MAX_DIFFICULTY) {
      throw new RangeError(
        `under_attack difficulty must be an integer from 1 to ${UNDER_ATTACK_MAX_DIFFICULTY}, got ${d}`,
      );
    }
    this.#secret = options.secret;
    this.#difficulty = d;
    this.#now = options.now ?? Date.now;
    this.#clearanceTtl = options.clearanceTtlS ?? 3600;
    this.#challengeTtl = options.challengeTtlS ?? 300;
  }

  /**
   * Lets a cleared request through (returns false), or answers it: the
   * solution endpoint, or the challenge page (returns true).
   */
  intercept(req: IncomingMessage, res: ServerResponse, ctx: RequestContext, edit: HeaderEdit): boolean {
    if (ctx.path === CHALLENGE_PATH) {
      this.#solve(req, res, ctx, edit);
      return true;
    }
    if (this.cleared(req.headers.cookie, ctx)) return false;
    const token = this.issueToken(ctx);
    const body = Buffer.from(challengePage(token, this.#difficulty, CHALLENGE_PATH));
    const headers: OutgoingHttpHeaders = {
      'content-type': 'text/html; charset=utf-8',
      'content-length': body.length,
      'cache-control': 'no-store',
    };
    edit(headers, CHALLENGE_STATUS);
    markRequest(res, RequestEvent.ChallengeIssued);
    res.writeHead(CHALLENGE_STATUS, headers).end(body);
    req.resume();
    return true;
  }

  /** Whether the `Cookie` header holds a valid clearance for this client and domain. */
  cleared(cookieHeader: string | undefined, ctx: RequestContext): boolean {
    if (cookieHeader === undefined) return false;
    let at = cookieHeader.indexOf(COOKIE_PREFIX);
    while (at > 0 && cookieHeader[at - 1] !== ' ' && cookieHeader[at - 1] !== ';') {
      at = cookieHeader.indexOf(COOKIE_PREFIX, at + 1);
    }
    if (at < 0) return false;
    const start = at + COOKIE_PREFIX.length;
    const semi = cookieHeader.indexOf(';', start);
    const value = cookieHeader.slice(start, semi < 0 ? undefined : semi).trim();
    const dot = value.indexOf('.');
    if (dot <= 0) return false;
    const expires = Number(value.slice(0, dot));
    if (!Number.isSafeInteger(expires) || expires * 1000 <= this.#now()) return false;
    return safeEqual(value.slice(dot + 1), this.#mac(`k1|${ctx.domain}|${ctx.clientIp}|${expires}`));
  }

  /** A fresh challenge token for this client and domain. */
  issueToken(ctx: RequestContext): string {
    const nonce = randomBytes(16).toString('base64url');
    const expires = Math.floor(this.#now() / 1000) + this.#challengeTtl;
    const d = this.#difficulty;
    return `${nonce}.${expires}.${d}.${this.#mac(`c1|${ctx.domain}|${ctx.clientIp}|${nonce}|${expires}|${d}`)}`;
  }

  /** The `Set-Cookie` value of a clearance for this client and domain. */
  clearanceCookie(ctx: RequestContext): string {
    const expires = Math.floor(this.#now() / 1000) + this.#clearanceTtl;
    const mac = this.#mac(`k1|${ctx.domain}|${ctx.clientIp}|${expires}`);
    return `${CLEARANCE_COOKIE}=${expires}.${mac}; Max-Age=${this.#clearanceTtl}; Path=/; HttpOnly; SameSite=Lax${
      ctx.secure ? '; Secure' : ''
    }`;
  }

  /** Whether `counter` solves `token` for this client and domain (signature, expiry, work). */
  verifySolution(token: string, counter: string, ctx: RequestContext): boolean {
    const parts = token.split('.');
    if (parts.length !== 4 || !/^\d{1,16}$/.test(counter)) return false;
    const [nonce, expiresText, dText, mac] = parts as [string, string, string, string];
    const expires = Number(expiresText);
    const d = Number(dText);
    if (!Number.isSafeInteger(expires) || !Number.isInteger(d) || d < this.#difficulty || d > 256) return false;
    if (expires * 1000 <= this.#now()) return false;
    if (!safeEqual(mac, this.#mac(`c1|${ctx.domain}|${ctx.clientIp}|${nonce}|${expiresText}|${dText}`))) return false;
    return leadingZeroBits(createHash('sha256').update(`${token}:${counter}`).digest()) >= d;
  }

  #solve(req: IncomingMessage, res: ServerResponse, ctx: RequestContext, edit: HeaderEdit): void {
    if (req.method !== 'POST') {
      reply(res, 405, 'method not allowed\n', edit, { allow: 'POST' });
      req.resume();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY && !done) {
        done = true;
        reply(res, 413, 'payload too large\n', edit, { connection: 'close' });
        req.resume();
        return;
      }
      if (!done) chunks.push(chunk);
    });
    req.on('error', () => res.destroy());
    req.on('end', () => {
      if (done) return;
      done = true;
      const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
      const token = form.get('token');
      const counter = form.get('counter');
      if (token === null || counter === null) {
        reply(res, 400, 'bad request\n', edit);
        return;
      }
      if (!this.verifySolution(token, counter, ctx)) {
        markRequest(res, RequestEvent.ChallengeFailed);
        reply(res, 403, 'challenge failed\n', edit);
        return;
      }
      const headers: OutgoingHttpHeaders = { 'set-cookie': this.clearanceCookie(ctx), 'cache-control': 'no-store' };
      edit(headers, 204);
      markRequest(res, RequestEvent.ChallengePassed);
      res.writeHead(204, headers).end();
    });
  }

  #mac(text: string): string {
    return createHmac('sha256', this.#secret).update(text).digest('base64url');
  }
}

/** Number of leading zero bits of `digest`. */
export function leadingZeroBits(digest: Uint8Array): number {
  let bits = 0;
  for (const byte of digest) {
    if (byte === 0) {
      bits += 8;
      continue;
    }
    return bits + Math.clz32(byte) - 24;
  }
  return bits;
}

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function reply(res: ServerResponse, status: number, body: string, edit: HeaderEdit, extra?: OutgoingHttpHeaders): void {
  const headers: OutgoingHttpHeaders = { 'content-type': TEXT, 'content-length': Buffer.byteLength(body), ...extra };
  edit(headers, status);
  res.writeHead(status, headers).end(body);
}
