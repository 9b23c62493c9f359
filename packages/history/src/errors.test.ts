import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { HISTORY_ERRORS, HistoryError } from './errors.js';

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
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

  it('the README documents every code with its message, once', () => {
    const rows = readme.split('\n').map((line) => line.split('|').map((cell) => cell.trim()));
    for (const [code, message] of Object.entries(HISTORY_ERRORS)) {
      expect(
        rows.some((cells) => cells[1] === `\`${code}\`` && cells[2] === message),
        code,
      ).toBe(true);
    }
    const codes = readmeCodes(readme);
    expect(new Set(codes).size).toBe(codes.length);
    expect([...codes].sort()).toEqual(Object.keys(HISTORY_ERRORS).sort());
  });

  it('an error carries its code and the detail after the message', () => {
    const err = new HistoryError('HISTORY_BAD_RANGE', 'from after to');
    expect(err.code).toBe('HISTORY_BAD_RANGE');
    expect(err.message).toBe('invalid range: from after to');
  });
});
