import { describe, expect, it } from 'vitest';
import { parseRetryAfter } from './retry-after.js';

const NOW = Date.UTC(2025, 0, 1, 12, 0, 0);

describe('parseRetryAfter', () => {
  it.each([
    { value: '120', expected: NOW + 120_000 },
    { value: ' 0 ', expected: NOW },
    { value: 'Wed, 01 Jan 2025 14:00:00 GMT', expected: NOW + 2 * 3_600_000 },
    { value: 'Wed, 01 Jan 2025 11:00:00 GMT', expected: NOW - 3_600_000 },
    { value: undefined, expected: null },
    { value: null, expected: null },
    { value: '', expected: null },
    { value: '-5', expected: null },
    { value: '1.5', expected: null },
    { value: '2025', expected: NOW + 2025_000 },
    { value: '2025-01-01', expected: null },
    { value: '5 minutes', expected: null },
    { value: 'Wed, 32 Jan 2025 14:00:00 GMT', expected: null },
  ])('$value → $expected', ({ value, expected }) => {
    expect(parseRetryAfter(value, NOW)).toBe(expected);
  });
});
