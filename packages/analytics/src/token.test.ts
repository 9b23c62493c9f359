import { describe, expect, it } from 'vitest';
import { BeaconTokens, TOKEN_VALID_WINDOWS, TOKEN_WINDOW_MS } from './token.js';

describe('BeaconTokens', () => {
  const hour = Math.floor(1_800_000_000_000 / TOKEN_WINDOW_MS);
  const t0 = hour * TOKEN_WINDOW_MS + 1234;

  it('a token verifies for its host for 7 days from its hour, not after, not before, not for another host', () => {
    const tokens = new BeaconTokens();
    const token = tokens.issue('shop.example', t0);
    expect(token).toMatch(/^\d+\.[\w-]{22}$/);
    expect(TOKEN_VALID_WINDOWS * TOKEN_WINDOW_MS).toBe(7 * 24 * 3_600_000);
    expect(tokens.verify('shop.example', token, t0)).toBe(true);
    expect(tokens.verify('shop.example', token, t0 + TOKEN_WINDOW_MS)).toBe(true);
    // The last millisecond of its 168th hour, then the first of the 169th.
    const lastValid = (hour + TOKEN_VALID_WINDOWS) * TOKEN_WINDOW_MS - 1;
    expect(tokens.verify('shop.example', token, lastValid)).toBe(true);
    expect(tokens.verify('shop.example', token, lastValid + 1)).toBe(false);
    expect(tokens.verify('evil.example', token, t0)).toBe(false);
    // A token of a later hour is not valid before that hour.
    expect(tokens.verify('shop.example', tokens.issue('shop.example', t0 + TOKEN_WINDOW_MS), t0)).toBe(false);
  });

  it('a token verifies after a restart with the same secret', () => {
    const secret = Buffer.alloc(32, 7);
    const token = new BeaconTokens(secret).issue('shop.example', t0);
    expect(new BeaconTokens(Buffer.from(secret)).verify('shop.example', token, t0 + 3 * 24 * TOKEN_WINDOW_MS)).toBe(
      true,
    );
  });

  it('a token of another process (another secret), a tampered MAC or garbage is refused', () => {
    const a = new BeaconTokens();
    const b = new BeaconTokens();
    const token = a.issue('shop.example', t0);
    expect(b.verify('shop.example', token, t0)).toBe(false);
    const tampered = `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`;
    expect(a.verify('shop.example', tampered, t0)).toBe(false);
    for (const bad of [undefined, 42, '', '.', 'x.y', `${'9'.repeat(70)}.a`, `${hour}.`, `${hour - 0.5}.abc`]) {
      expect(a.verify('shop.example', bad, t0)).toBe(false);
    }
  });
});
