import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { ADMIN_ERRORS } from './errors.js';

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

describe('README', () => {
  it('documents every error code with its status and message', async () => {
    const readme = await readFile(new URL('../README.md', import.meta.url), 'utf8');
    const rows = readme
      .split('\n')
      .filter((line) => line.startsWith('|'))
      .map((line) => line.split('|').map((cell) => cell.trim()));
    for (const [code, { status, message }] of Object.entries(ADMIN_ERRORS)) {
      const row = rows.find((cells) => cells[1] === `\`${code}\``);
      expect(row, `${code} is not in the README's error table`).toBeDefined();
      expect(row?.slice(2, 4), code).toEqual([String(status), `\`${message}\``]);
    }
  });

  it('has no row in the error table that is not a registry code, and no code twice', async () => {
    const rows = readmeCodes(await readFile(new URL('../README.md', import.meta.url), 'utf8'));
    expect(new Set(rows).size, 'a code twice in the README table').toBe(rows.length);
    expect([...rows].sort()).toEqual(Object.keys(ADMIN_ERRORS).sort());
  });
});
