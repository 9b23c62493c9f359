import { describe, expect, it } from 'vitest';
import { UsageError } from '../errors.js';
import { firstLine, parseCost } from './hash-password.js';

describe('hash-password input', () => {
  it('--cost is a whole number from 4 to 31', () => {
    expect(parseCost('4')).toBe(4);
    expect(parseCost('31')).toBe(31);
    for (const bad of ['3', '32', '1e1', '', '12.5', '-5', '010']) {
      expect(() => parseCost(bad)).toThrow(UsageError);
    }
    expect(() => parseCost('3')).toThrow('invalid --cost "3": a whole number from 4 to 31');
  });

  it('piped input gives its first line, without the line break', () => {
    expect(firstLine('secret\n')).toBe('secret');
    expect(firstLine('secret\r\nignored\n')).toBe('secret');
    expect(firstLine('no newline')).toBe('no newline');
    expect(firstLine(' spaces kept \n')).toBe(' spaces kept ');
    expect(firstLine('')).toBe('');
  });
});
