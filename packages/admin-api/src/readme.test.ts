import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { ADMIN_ERRORS } from './errors.js';

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
});
