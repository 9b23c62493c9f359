import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm, unlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/** The directory of the node's shared response cache: its body files, created and removed by the primary. */
export interface CacheDir {
  readonly path: string;
  /** Removes one body file (an entry that left the index); a file already gone is no error. */
  removeFile(file: string): void;
  /** Removes the directory and every file in it (the daemon stops). */
  remove(): Promise<void>;
}

const PREFIX = 'proxyd-cache-';

/**
 * Creates the directory of the shared cache's bodies (issue 32): under
 * `/dev/shm` where it is there (a tmpfs: a hit reads memory, never a
 * disk), else `os.tmpdir()`, named `proxyd-cache-<pid>-…`. The directories
 * of daemons no longer running (a crash leaves its own) are removed first.
 */
export async function createCacheDir(): Promise<CacheDir> {
  const base = existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir();
  await removeOrphans(base);
  let dir: string;
  try {
    dir = await mkdtemp(path.join(base, `${PREFIX}${process.pid}-`));
  } catch {
    dir = await mkdtemp(path.join(os.tmpdir(), `${PREFIX}${process.pid}-`));
  }
  return {
    path: dir,
    removeFile: (file) => {
      unlink(file).catch(() => {});
    },
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}

async function removeOrphans(base: string): Promise<void> {
  const names = await readdir(base).catch(() => [] as string[]);
  for (const name of names) {
    if (!name.startsWith(PREFIX)) continue;
    const pid = Number.parseInt(name.slice(PREFIX.length), 10);
    if (!Number.isInteger(pid) || pid <= 0 || alive(pid)) continue;
    await rm(path.join(base, name), { recursive: true, force: true }).catch(() => {});
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: a process of another user has it.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
