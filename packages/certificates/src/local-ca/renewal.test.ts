import { describe, expect, it } from 'vitest';
import { needsRenewal } from './renewal.js';

const DAY = 24 * 3600 * 1000;
const start = Date.UTC(2025, 0, 1);
const sevenDays = { notBefore: new Date(start), notAfter: new Date(start + 7 * DAY) };

describe('needsRenewal', () => {
  it('is false while more than 1/3 of the lifetime is left', () => {
    expect(needsRenewal(sevenDays, start)).toBe(false);
    expect(needsRenewal(sevenDays, start + (7 * DAY * 2) / 3 - 1)).toBe(false);
  });

  it('is true from the moment 1/3 of the lifetime is left, and after expiry', () => {
    expect(needsRenewal(sevenDays, start + (7 * DAY * 2) / 3)).toBe(true);
    expect(needsRenewal(sevenDays, start + 7 * DAY)).toBe(true);
    expect(needsRenewal(sevenDays, start + 30 * DAY)).toBe(true);
  });

  it('scales with the lifetime: a 12 h leaf is due with 4 h left', () => {
    const leaf = { notBefore: new Date(start), notAfter: new Date(start + 12 * 3600_000) };
    expect(needsRenewal(leaf, start + 8 * 3600_000 - 1)).toBe(false);
    expect(needsRenewal(leaf, start + 8 * 3600_000)).toBe(true);
  });
});
