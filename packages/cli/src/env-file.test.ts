import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { applyEnvFile } from './env-file.js';

describe('--envfile', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'proxyd-envfile-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('sets KEY=VALUE lines (comments, quotes, export) and leaves variables already set as they are', () => {
    const file = path.join(dir, 'proxyd.env');
    writeFileSync(
      file,
      '# the admin token\nPROXY_ADMIN_TOKEN=from-file\nexport PROXY_LOG=warn\nGREETING="hello world"\nSET=from-file\n',
    );
    const env: NodeJS.ProcessEnv = { SET: 'from-env' };
    expect(applyEnvFile(file, env).sort()).toEqual(['GREETING', 'PROXY_ADMIN_TOKEN', 'PROXY_LOG']);
    expect(env).toEqual({
      SET: 'from-env',
      PROXY_ADMIN_TOKEN: 'from-file',
      PROXY_LOG: 'warn',
      GREETING: 'hello world',
    });
  });

  it('a file that cannot be read is an error naming it', () => {
    expect(() => applyEnvFile(path.join(dir, 'nope.env'), {})).toThrow(/^cannot read env file .*nope\.env: ENOENT$/);
  });
});
