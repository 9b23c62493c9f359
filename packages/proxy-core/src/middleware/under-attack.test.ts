import { createHash, randomBytes } from 'node:crypto';
import { emptySite, UNDER_ATTACK_MAX_DIFFICULTY, UnderAttack } from '@proxyd/model';
import { Value } from 'typebox/value';
import { describe, expect, it } from 'vitest';
import type { RequestContext } from '../hooks.js';
import { challengePage, SHA256_FALLBACK_JS } from './challenge-page.js';
import { CLEARANCE_COOKIE, leadingZeroBits, UnderAttackGuard } from './under-attack.js';

const site = emptySite([{ scheme: 'http', host: 'a.test', port: null }]);

function ctx(over: Partial<RequestContext> = {}): RequestContext {
  return { domain: 'a.test', host: 'a.test', path: '/', clientIp: '192.0.2.1', secure: false, site, ...over };
}

/** Finds a counter the way the page does. */
function solve(token: string, difficulty: number): string {
  for (let n = 0; ; n++) {
    if (leadingZeroBits(createHash('sha256').update(`${token}:${n}`).digest()) >= difficulty) return String(n);
  }
}

function cookieOf(setCookie: string): string {
  return setCookie.slice(0, setCookie.indexOf(';'));
}

describe('under_attack tokens and cookies', () => {
  const clock = { t: 1_700_000_000_000 };
  const guard = new UnderAttackGuard({ secret: randomBytes(32), difficulty: 8, now: () => clock.t });

  it('accepts a solved challenge only for the client and domain it was issued to, before it expires', () => {
    const token = guard.issueToken(ctx());
    const counter = solve(token, 8);
    expect(guard.verifySolution(token, counter, ctx())).toBe(true);
    expect(guard.verifySolution(token, counter, ctx({ clientIp: '192.0.2.2' }))).toBe(false);
    expect(guard.verifySolution(token, counter, ctx({ domain: 'b.test' }))).toBe(false);
    // A wrong counter (not enough zero bits) fails.
    let wrong = 0;
    while (leadingZeroBits(createHash('sha256').update(`${token}:${wrong}`).digest()) >= 8) wrong++;
    expect(guard.verifySolution(token, String(wrong), ctx())).toBe(false);
    // A token whose difficulty was lowered by the client fails its MAC.
    const parts = token.split('.');
    parts[2] = '1';
    expect(guard.verifySolution(parts.join('.'), counter, ctx())).toBe(false);
    clock.t += 301_000;
    expect(guard.verifySolution(token, counter, ctx())).toBe(false);
  });

  it('issues a cookie bound to IP and domain, HttpOnly, SameSite=Lax, Secure on HTTPS, expiring in an hour', () => {
    const set = guard.clearanceCookie(ctx());
    expect(set).toMatch(
      new RegExp(`^${CLEARANCE_COOKIE}=\\d+\\.[A-Za-z0-9_-]+; Max-Age=3600; Path=/; HttpOnly; SameSite=Lax$`),
    );
    expect(guard.clearanceCookie(ctx({ secure: true }))).toMatch(/; Secure$/);
    const cookie = cookieOf(set);
    expect(guard.cleared(`other=1; ${cookie}; x=2`, ctx())).toBe(true);
    expect(guard.cleared(cookie, ctx({ clientIp: '192.0.2.9' }))).toBe(false);
    expect(guard.cleared(cookie, ctx({ domain: 'b.test' }))).toBe(false);
    expect(guard.cleared(`x${cookie}`, ctx())).toBe(false);
    expect(guard.cleared(`x${cookie};${cookie}`, ctx())).toBe(true);
    expect(
      guard.cleared(
        cookie.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A')),
        ctx(),
      ),
    ).toBe(false);
    const other = new UnderAttackGuard({ secret: randomBytes(32), difficulty: 8, now: () => clock.t });
    expect(other.cleared(cookie, ctx())).toBe(false);
    clock.t += 3_600_000;
    expect(guard.cleared(cookie, ctx())).toBe(false);
  });

  it('never puts the secret in the page', () => {
    const secret = randomBytes(32);
    const g = new UnderAttackGuard({ secret, difficulty: 16 });
    const page = challengePage(g.issueToken(ctx()), 16, '/_proxyd/challenge');
    expect(page).not.toContain(secret.toString('hex'));
    expect(page).not.toContain(secret.toString('base64'));
    expect(page).not.toContain(secret.toString('base64url'));
  });
});

describe('difficulty bound', () => {
  it('the model and the guard refuse more than 20 bits, or less than 1', () => {
    for (const difficulty of [1, 16, 20]) {
      expect(Value.Check(UnderAttack, { enabled: true, difficulty }), String(difficulty)).toBe(true);
      expect(() => new UnderAttackGuard({ secret: randomBytes(32), difficulty })).not.toThrow();
    }
    for (const difficulty of [0, 21, 24, 32, 16.5]) {
      expect(Value.Check(UnderAttack, { enabled: true, difficulty }), String(difficulty)).toBe(false);
      expect(() => new UnderAttackGuard({ secret: randomBytes(32), difficulty }), String(difficulty)).toThrow(
        /from 1 to 20/,
      );
    }
    expect(UNDER_ATTACK_MAX_DIFFICULTY).toBe(20);
  });
});

describe('the page fallback SHA-256', () => {
  const sha256js = new Function(`${SHA256_FALLBACK_JS}; return sha256js;`)() as (m: Uint8Array) => Uint8Array;

  it('equals Node’s SHA-256 for every length around the block boundaries', () => {
    for (const n of [0, 1, 3, 55, 56, 57, 63, 64, 65, 119, 120, 128, 1000]) {
      const data = randomBytes(n);
      expect(Buffer.from(sha256js(new Uint8Array(data))).toString('hex'), `length ${n}`).toBe(
        createHash('sha256').update(data).digest('hex'),
      );
    }
  });
});

describe('leadingZeroBits', () => {
  it('counts zero bits across bytes', () => {
    expect(leadingZeroBits(Uint8Array.from([0, 0, 0x10, 0xff]))).toBe(19);
    expect(leadingZeroBits(Uint8Array.from([0x80]))).toBe(0);
    expect(leadingZeroBits(Uint8Array.from([0, 0]))).toBe(16);
  });
});
