import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ProxyfileErrorCode } from './errors.js';

describe('error registry', () => {
  it('every code is unique and documented in the README', () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    const codes = Object.values(ProxyfileErrorCode);
    expect(new Set(codes).size).toBe(codes.length);
    for (const code of codes) expect(readme, code).toMatch(new RegExp(`^\\| \`${code}\` +\\|`, 'm'));
  });
});
