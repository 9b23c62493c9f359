import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ANALYTICS_ERRORS, AnalyticsError } from './errors.js';
import { loadScriptAsset } from './script-asset.js';

/** The codes of the README's error table: the one table whose first column is `code`. */
function readmeCodes(readme: string): string[] {
  const lines = readme.split('\n');
  const headers = lines.flatMap((line, i) => (/^\|\s*code\s*\|/i.test(line) ? [i] : []));
  expect(headers, 'one error-code table in the README').toHaveLength(1);
  const rows: string[] = [];
  for (const line of lines.slice((headers[0] as number) + 2)) {
    if (!line.startsWith('|')) break;
    rows.push(line.split('|')[1]?.trim() ?? '');
  }
  return rows.map((cell) => /^`([A-Z0-9_]+)`$/.exec(cell)?.[1] ?? cell);
}

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

  it('every row of the README error table is a registry code, once', () => {
    const rows = readmeCodes(readFileSync(new URL('../README.md', import.meta.url), 'utf8'));
    expect(new Set(rows).size, 'a code twice in the README table').toBe(rows.length);
    expect([...rows].sort()).toEqual(Object.keys(ANALYTICS_ERRORS).sort());
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
