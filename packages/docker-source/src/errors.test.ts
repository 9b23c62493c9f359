import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DockerErrorCode } from './errors.js';

/** The codes of the README's error table: the one table whose first column is `code`. */
function readmeCodes(): string[] {
  const lines = readFileSync(new URL('../README.md', import.meta.url), 'utf8').split('\n');
  const headers = lines.flatMap((line, i) => (/^\|\s*code\s*\|/i.test(line) ? [i] : []));
  expect(headers, 'one error-code table in the README').toHaveLength(1);
  const rows: string[] = [];
  for (const line of lines.slice((headers[0] as number) + 2)) {
    if (!line.startsWith('|')) break;
    rows.push(line.split('|')[1]?.trim() ?? '');
  }
  return rows.map((cell) => /^`([A-Z0-9_]+)`$/.exec(cell)?.[1] ?? cell);
}

describe('error registry', () => {
  it('every code is unique, has a row in the README table, and every row is a code', () => {
    const codes = Object.values(DockerErrorCode);
    expect(new Set(codes).size).toBe(codes.length);
    const rows = readmeCodes();
    expect(new Set(rows).size, 'a code twice in the README table').toBe(rows.length);
    expect([...rows].sort()).toEqual([...codes].sort());
  });
});
