import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { ADMIN_ERRORS } from './errors.js';

describe('README', () => {
  it('documents every error code with its status and message', async () => {
    const readme = await readFile(new URL('../README.md', import.meta.url), 'utf8');
    for (const [code, { status, message }] of Object.entries(ADMIN_ERRORS)) {
      expect(readme, code).toContain(`| \`${code}\` | ${status} | \`${message}\` |`);
    }
  });
});
