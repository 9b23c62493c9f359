import { describe, expect, it } from 'vitest';
import { BeaconTokens, TOKEN_WINDOW_MS } from './token.js';

describe('BeaconTokens', () => {
  const t0 = 1_800_000_000_000;

  it('a token verifies for its host in its hour and the next, not later, not for another host', () => {
    const tokens = new BeaconTokens();
    const token = tokens.issue('shop.example', t0);
    expect(token).toMatch(/^\d+\.[\w-]{22}$/);
    expect(tokens.verify('shop.example', token, t0)).toBe(true);
    expect(tokens.verify('shop.example', token, t0 + TOKEN_WINDOW_MS)).toBe(true);
    expect(tokens.verify('shop.example', token, t0 + 2 * TOKEN_WINDOW_MS)).toBe(false);
    expect(tokens.verify('evil.example', token, t0)).toBe(false);
    expect(tokens.verify('shop.example', tokens.issue('shop.example', t0 + TOKEN_WINDOW_MS), t0)).toBe(false);
  });

  it('a token of another process (another secret), a tampered MAC or garbage is refused', () => {
    const a = new BeaconTokens();
    const b = new BeaconTokens();
    const token = a.issue('shop.example', t0);
    expect(b.verify('shop.example', token, t0)).toBe(false);
    const tampered = `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`;
    expect(a.verify('shop.example', tampered, t0)).toBe(false);
    for (const bad of [undefined, 42, '', '.', 'x.y', `${'9'.repeat(70)}.a`]) {
      expect(a.verify('shop.example', bad, t0)).toBe(false);
    }
  });
});
