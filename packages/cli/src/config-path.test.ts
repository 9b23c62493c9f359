import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readText, requireConfigPath, resolveConfigPath } from './config-path.js';
import { UsageError } from './errors.js';

describe('which Proxyfile a command reads', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'proxyd-config-path-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('--config, else PROXY_CONFIG, else ./Proxyfile when it exists, else none', () => {
    writeFileSync(path.join(dir, 'Proxyfile'), '');
    expect(resolveConfigPath('given', { PROXY_CONFIG: 'env' }, dir)).toEqual({ path: 'given', from: 'flag' });
    expect(resolveConfigPath(undefined, { PROXY_CONFIG: 'env' }, dir)).toEqual({ path: 'env', from: 'env' });
    expect(resolveConfigPath(undefined, { PROXY_CONFIG: '' }, dir)).toEqual({
      path: path.join(dir, 'Proxyfile'),
      from: 'default',
    });
    rmSync(path.join(dir, 'Proxyfile'));
    expect(resolveConfigPath(undefined, {}, dir)).toBeNull();
  });

  it('a directory named Proxyfile is not a Proxyfile', () => {
    mkdirSync(path.join(dir, 'Proxyfile'));
    expect(resolveConfigPath(undefined, {}, dir)).toBeNull();
  });

  it('requireConfigPath names the three ways to give one, as a usage error', () => {
    expect(() => requireConfigPath('validate', undefined, {}, dir)).toThrow(UsageError);
    expect(() => requireConfigPath('validate', undefined, {}, dir)).toThrow(
      'validate needs a Proxyfile: --config <path>, PROXY_CONFIG, or a file named Proxyfile in the current directory',
    );
    expect(requireConfigPath('validate', 'x', {}, dir)).toBe('x');
  });

  it('readText names the file and the reason', () => {
    expect(() => readText(path.join(dir, 'missing'))).toThrow(/^cannot read .*missing: ENOENT/);
  });
});
