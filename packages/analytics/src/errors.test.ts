import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ANALYTICS_ERRORS, AnalyticsError } from './errors.js';
import { loadScriptAsset } from './script-asset.js';

describe('errors', () => {
  it('the README documents every code with its message', () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    const rows = readme.split('\n').map((line) => line.split('|').map((cell) => cell.trim()));
    for (const [code, message] of Object.entries(ANALYTICS_ERRORS)) {
      expect(
        rows.some((cells) => cells[1] === `\`${code}\`` && cells[2] === message),
        code,
      ).toBe(true);
    }
  });

  it('a missing script asset fails loudly with a stable code', () => {
    expect(() => loadScriptAsset(new URL('file:///nonexistent/a.js'))).toThrow(AnalyticsError);
    try {
      loadScriptAsset('/nonexistent/a.js');
    } catch (err) {
      expect((err as AnalyticsError).code).toBe('ANALYTICS_SCRIPT_MISSING');
    }
  });
});
