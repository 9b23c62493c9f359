import { chmod, chown, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ensureStateDir, type StateDirLog } from './state-dir.js';

let base = '';
beforeEach(async () => {
  base = await mkdtemp(path.join(tmpdir(), 'proxyd-state-dir-'));
});
afterEach(() => rm(base, { recursive: true, force: true }));

/** A logger that keeps every warning. */
function recorder(): StateDirLog & { lines: { fields: Record<string, unknown>; message: string }[] } {
  const lines: { fields: Record<string, unknown>; message: string }[] = [];
  return { lines, warn: (fields, message) => lines.push({ fields, message }) };
}

const modeOf = async (dir: string) => (await stat(dir)).mode & 0o777;
const isRoot = process.getuid?.() === 0;

describe('ensureStateDir', () => {
  it('creates a missing directory (and its parents) with mode 0700, without a warning', async () => {
    const dir = path.join(base, 'a', 'state');
    const log = recorder();
    expect(await ensureStateDir(dir, log)).toEqual({ mode: 0o700, tightened: false, warning: null });
    expect(await modeOf(dir)).toBe(0o700);
    expect(log.lines).toEqual([]);
  });

  it('fails with the path when the state dir is a file', async () => {
    const file = path.join(base, 'file');
    await writeFile(file, '');
    await expect(ensureStateDir(file)).rejects.toThrow(file);
  });

  // Issue 20: "a pre-existing 0777 state dir stays 0777 without a warning".
  it.each(['0777', '0755', '0750', '0701'])(
    'sets an existing directory of ours with mode %s to 0700 and says so',
    async (text) => {
      const mode = Number.parseInt(text, 8);
      const dir = path.join(base, 'state');
      await ensureStateDir(dir);
      await writeFile(path.join(dir, 'routes.json'), '{}');
      await chmod(dir, mode);
      const log = recorder();
      expect(await ensureStateDir(dir, log)).toEqual({ mode, tightened: true, warning: null });
      expect(await modeOf(dir)).toBe(0o700);
      expect(log.lines).toHaveLength(1);
      expect(log.lines[0]?.message).toBe(
        `state directory ${dir} was mode ${text} (other users could read or write it): set to 0700`,
      );
      // The routes in it are untouched.
      expect((await stat(path.join(dir, 'routes.json'))).isFile()).toBe(true);
    },
  );

  it('without a logger, the warning goes to process.emitWarning', async () => {
    const dir = path.join(base, 'state');
    await ensureStateDir(dir);
    await chmod(dir, 0o777);
    const emitted = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    try {
      await ensureStateDir(dir);
      expect(emitted).toHaveBeenCalledWith(
        `state directory ${dir} was mode 0777 (other users could read or write it): set to 0700`,
        { code: 'PROXYD_STATE_DIR_MODE' },
      );
    } finally {
      emitted.mockRestore();
    }
    expect(await modeOf(dir)).toBe(0o700);
  });

  it('leaves a 0700 directory alone', async () => {
    const dir = path.join(base, 'state');
    await ensureStateDir(dir);
    const log = recorder();
    expect(await ensureStateDir(dir, log)).toEqual({ mode: 0o700, tightened: false, warning: null });
    expect(log.lines).toEqual([]);
  });

  it.skipIf(!isRoot)("warns, naming the fix, about an open directory that is another user's", async () => {
    const dir = path.join(base, 'state');
    await ensureStateDir(dir);
    await chown(dir, 65534, 65534);
    await chmod(dir, 0o777);
    const log = recorder();
    const check = await ensureStateDir(dir, log);
    expect(check.tightened).toBe(false);
    expect(check.warning).toBe(
      `state directory ${dir} is mode 0777: other users can read or write the API routes and the analytics key` +
        ` (owned by uid 65534, not this process (uid 0)); run: chmod 700 ${dir}`,
    );
    expect(log.lines).toEqual([{ fields: { dir, mode: '0777' }, message: check.warning }]);
    expect(await modeOf(dir)).toBe(0o777);
  });
});
