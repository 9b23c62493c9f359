import bcrypt from 'bcryptjs';
import { describe, expect, it } from 'vitest';
import { heldVerifier } from '../loopback.test-helpers.js';
import {
  AUTH_BUSY,
  AUTH_DENIED,
  AUTH_OK,
  BasicAuthenticator,
  type PasswordVerifier,
  SHARED_VERIFICATION_GATE,
} from './basic-auth.js';
import { VerificationGate } from './verification-gate.js';

const alice = bcrypt.hashSync('wonderland', 4);
const bob = bcrypt.hashSync('builder', 4);

function basic(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
}

function counting(): { verify: PasswordVerifier; calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    verify: (password, hash) => {
      calls.push(hash);
      return bcrypt.compare(password, hash);
    },
  };
}

describe('BasicAuthenticator', () => {
  it('escapes the realm in WWW-Authenticate', () => {
    const auth = new BasicAuthenticator({ realm: 'say "hi" \\ bye', users: [{ user: 'a', hash: alice }] });
    expect(auth.challenge).toBe('Basic realm="say \\"hi\\" \\\\ bye"');
  });

  it('denies at once, with no bcrypt, a missing or malformed header', () => {
    const v = counting();
    const auth = new BasicAuthenticator({ realm: 'r', users: [{ user: 'alice', hash: alice }] }, { verify: v.verify });
    expect(auth.check(undefined)).toBe(AUTH_DENIED);
    expect(auth.check('Bearer abc')).toBe(AUTH_DENIED);
    expect(auth.check(`Basic ${Buffer.from('no-colon').toString('base64')}`)).toBe(AUTH_DENIED);
    expect(v.calls).toEqual([]);
  });

  it('accepts each user with their own password only', async () => {
    const auth = new BasicAuthenticator({
      realm: 'r',
      users: [
        { user: 'alice', hash: alice },
        { user: 'bob', hash: bob },
      ],
    });
    expect(await auth.check(basic('alice', 'wonderland'))).toBe(true);
    expect(await auth.check(basic('bob', 'builder'))).toBe(true);
    expect(await auth.check(basic('bob', 'wonderland'))).toBe(false);
    expect(await auth.check(basic('alice', 'wrong'))).toBe(false);
  });

  it('runs exactly one bcrypt for an unknown user, and refuses it even with a real password', async () => {
    const v = counting();
    const auth = new BasicAuthenticator({ realm: 'r', users: [{ user: 'alice', hash: alice }] }, { verify: v.verify });
    expect(await auth.check(basic('mallory', 'wonderland'))).toBe(false);
    expect(v.calls).toEqual([alice]);
  });

  it('remembers a success: the second request with the right password runs no bcrypt', async () => {
    const v = counting();
    const clock = { t: 1_000 };
    const auth = new BasicAuthenticator(
      { realm: 'r', users: [{ user: 'alice', hash: alice }] },
      { verify: v.verify, now: () => clock.t, cacheTtlMs: 60_000 },
    );
    expect(await auth.check(basic('alice', 'wonderland'))).toBe(true);
    expect(v.calls).toHaveLength(1);
    expect(auth.check(basic('alice', 'wonderland'))).toBe(AUTH_OK);
    expect(auth.check(basic('alice', 'wonderland'))).toBe(AUTH_OK);
    expect(v.calls).toHaveLength(1);
    // A wrong password is never remembered, nor served from the cache.
    expect(await auth.check(basic('alice', 'nope'))).toBe(false);
    expect(await auth.check(basic('alice', 'nope'))).toBe(false);
    expect(v.calls).toHaveLength(3);
    // After the TTL the password is verified again.
    clock.t += 60_001;
    expect(await auth.check(basic('alice', 'wonderland'))).toBe(true);
    expect(v.calls).toHaveLength(4);
  });

  it('shares one bcrypt among parallel requests with the same header', async () => {
    const v = counting();
    const auth = new BasicAuthenticator({ realm: 'r', users: [{ user: 'alice', hash: alice }] }, { verify: v.verify });
    const verdicts = await Promise.all(Array.from({ length: 20 }, () => auth.check(basic('alice', 'wonderland'))));
    expect(verdicts.every((x) => x === true)).toBe(true);
    expect(v.calls).toHaveLength(1);
    const wrong = await Promise.all(Array.from({ length: 5 }, () => auth.check(basic('alice', 'x'))));
    expect(wrong).toEqual([false, false, false, false, false]);
    expect(v.calls).toHaveLength(2);
  });

  it('bounds the cache of verifications', async () => {
    const hashes = Array.from({ length: 5 }, (_, i) => ({ user: `u${i}`, hash: bcrypt.hashSync(`p${i}`, 4) }));
    const auth = new BasicAuthenticator({ realm: 'r', users: hashes }, { cacheSize: 3 });
    for (let i = 0; i < 5; i++) expect(await auth.check(basic(`u${i}`, `p${i}`))).toBe(true);
    expect(auth.cached).toBe(3);
    expect(auth.check(basic('u4', 'p4'))).toBe(AUTH_OK);
    expect(auth.check(basic('u0', 'p0'))).not.toBe(AUTH_OK);
  });

  it('bounds the bcrypt verifications of a flood of wrong passwords: 2 running, 16 waiting, the rest busy', async () => {
    const held = heldVerifier();
    const gate = new VerificationGate();
    const auth = new BasicAuthenticator(
      { realm: 'r', users: [{ user: 'alice', hash: alice }] },
      { verify: held.verify, gate },
    );
    const verdicts = Array.from({ length: 100 }, (_, i) => auth.check(basic('alice', `guess-${i}`)));
    expect(held.calls).toBe(2);
    expect(verdicts.filter((v) => v === AUTH_BUSY)).toHaveLength(100 - 2 - 16);
    // A busy verdict reads as a refusal to a caller that only awaits it.
    expect(await AUTH_BUSY).toBe(false);
    while (held.releaseOne()) await new Promise((r) => setImmediate(r));
    expect(held.calls).toBe(18);
    expect(held.peak).toBe(2);
    for (const v of verdicts) if (v !== AUTH_BUSY) expect(await v).toBe(false);
    // Once the flood is through, the right password is verified again.
    const ok = new BasicAuthenticator({ realm: 'r', users: [{ user: 'alice', hash: alice }] }, { gate });
    expect(await ok.check(basic('alice', 'wonderland'))).toBe(true);
  });

  it('shares one gate among authenticators by default', () => {
    expect(SHARED_VERIFICATION_GATE.maxInFlight).toBe(2);
    expect(SHARED_VERIFICATION_GATE.maxQueued).toBe(16);
  });
});
