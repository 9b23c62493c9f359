import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createCacheDir } from './cache-dir.js';

// Issue 32: the directory of the node's shared cache bodies lives as long as the daemon.
describe('createCacheDir', () => {
  it("is in a tmpfs where there is one, removed at stop; a dead daemon's directory is removed at the next start", async () => {
    const base = existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir();
    // A pid no process has now: one that exited.
    const dead = spawnSync(process.execPath, ['-e', '0']).pid as number;
    const orphan = path.join(base, `proxyd-cache-${dead}-test`);
    await mkdir(orphan, { recursive: true });
    await writeFile(path.join(orphan, '0-1-1'), 'left by a crash');
    // A live daemon's directory (this process's pid) stays.
    const live = path.join(base, `proxyd-cache-${process.pid}-other`);
    await mkdir(live, { recursive: true });

    const dir = await createCacheDir();
    expect(path.dirname(dir.path)).toBe(base);
    expect(existsSync(orphan)).toBe(false);
    expect(existsSync(live)).toBe(true);
    await writeFile(path.join(dir.path, 'body'), 'x');
    dir.removeFile(path.join(dir.path, 'body'));
    dir.removeFile(path.join(dir.path, 'gone-already'));
    await dir.remove();
    expect(existsSync(dir.path)).toBe(false);
    await rm(live, { recursive: true });
  });
});
