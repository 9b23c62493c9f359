import { chmod, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AnalyticsError } from './errors.js';
import { loadSecretFile, SECRET_BYTES, SECRET_FILE_NAME } from './secret-file.js';

describe('loadSecretFile', () => {
  let dir = '';
  let file = '';
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'proxyd-analytics-key-'));
    file = path.join(dir, SECRET_FILE_NAME);
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('creates a 32-byte key with mode 0600 on first start and reads the same key afterwards', async () => {
    const first = await loadSecretFile(file);
    expect(first.origin).toBe('created');
    expect(first.secret).toHaveLength(SECRET_BYTES);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect((await readFile(file)).equals(first.secret)).toBe(true);
    const again = await loadSecretFile(file);
    expect(again.origin).toBe('loaded');
    expect(again.secret.equals(first.secret)).toBe(true);
  });

  it('narrows a key readable by others to 0600', async () => {
    await writeFile(file, Buffer.alloc(SECRET_BYTES, 1));
    await chmod(file, 0o644);
    const loaded = await loadSecretFile(file);
    expect(loaded.origin).toBe('loaded');
    expect(loaded.secret.equals(Buffer.alloc(SECRET_BYTES, 1))).toBe(true);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
  });

  it('replaces a file that is not a key (wrong size) with a new one', async () => {
    await writeFile(file, 'not a key\n');
    const loaded = await loadSecretFile(file);
    expect(loaded.origin).toBe('replaced');
    expect(loaded.secret).toHaveLength(SECRET_BYTES);
    expect((await readFile(file)).equals(loaded.secret)).toBe(true);
  });

  it('fails with ANALYTICS_KEY_FILE when the path cannot be read (a directory) or written (no parent)', async () => {
    await mkdir(file);
    await expect(loadSecretFile(file)).rejects.toMatchObject({ code: 'ANALYTICS_KEY_FILE' });
    await expect(loadSecretFile(path.join(dir, 'missing', SECRET_FILE_NAME))).rejects.toBeInstanceOf(AnalyticsError);
  });
});
