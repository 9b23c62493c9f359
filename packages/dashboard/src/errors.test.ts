import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DASHBOARD_ERRORS } from './errors.js';

describe('error registry', () => {
  it('documents every code in the README, with its status and message', () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    for (const [code, { status, message }] of Object.entries(DASHBOARD_ERRORS)) {
      expect(readme, code).toMatch(new RegExp(`^\\| \`${code}\` +\\| ${status} +\\| \`${message}\` +\\|`, 'm'));
    }
  });
});
