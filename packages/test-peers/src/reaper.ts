import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { Socket } from 'node:net';

/** A cleanup script held by a detached shell; see {@link armReaper}. */
export interface Reaper {
  /** Runs the script now and resolves when it is done (once; later calls wait for the same run). */
  run(): Promise<void>;
}

/**
 * Arms `script` (POSIX sh) in a detached shell that runs it when asked, or by
 * itself when this process ends in any way (exit, signal, crash, SIGKILL):
 * the shell waits on a pipe whose only writer is this process, so the pipe's
 * end of file is this process's death. It does not keep Node alive.
 */
export function armReaper(script: string): Reaper {
  const child = spawn('sh', ['-c', `read line\n${script}`], {
    detached: true,
    stdio: ['pipe', 'ignore', 'ignore'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.on('error', () => {});
  child.unref();
  (child.stdin as unknown as Socket).unref();
  let ran: Promise<void> | undefined;
  return {
    run() {
      ran ??= (async () => {
        child.ref();
        (child.stdin as unknown as Socket).ref();
        child.stdin?.end('now\n');
        await exited;
      })();
      return ran;
    },
  };
}

/**
 * Shell functions for the scripts: `running PID` (false for a zombie: this
 * VM's init reaps orphans late, and `kill -0` succeeds on a zombie) and
 * `stop_pid PID` (SIGTERM, up to 20 s, then SIGKILL).
 */
export const PROCESS_FUNCTIONS = [
  `running() { [ -n "$1" ] && [ -e "/proc/$1" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null; }`,
  `stop_pid() { [ -n "$1" ] || return 0; kill "$1" 2>/dev/null; for _ in $(seq 200); do running "$1" || return 0; sleep 0.1; done; kill -9 "$1" 2>/dev/null; }`,
].join('\n');

/** True when process `pid` exists and is not a zombie. */
export function isRunning(pid: number): boolean {
  try {
    return !/^State:\s*Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return false;
  }
}

/** `value` quoted for sh. */
export const shellQuote = (value: string) => `'${value.replaceAll("'", `'\\''`)}'`;

/** Shell lines that lazily unmount whatever is still mounted under `dir`, then remove it (never crossing a mount). */
export function removeDirScript(dir: string): string {
  const d = shellQuote(dir);
  return [
    `awk -v d=${d}/ 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo | sort -r | while read -r m; do umount -l "$m" 2>/dev/null; done`,
    `rm -rf --one-file-system ${d} 2>/dev/null`,
  ].join('\n');
}
