import { chmod, mkdir, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import path from 'node:path';

/**
 * The state directory (persisted API routes, later secrets): `--state-dir`,
 * else the Proxyfile's `state_dir`, else `/var/lib/proxyd` when running as
 * root, else `$XDG_STATE_HOME/proxyd`, else `~/.local/state/proxyd`.
 */
export function resolveStateDir(flag: string | undefined, configured: string | null): string {
  if (flag) return path.resolve(flag);
  if (configured) return path.resolve(configured);
  if (process.getuid?.() === 0) return '/var/lib/proxyd';
  const xdg = process.env.XDG_STATE_HOME;
  const base = xdg && path.isAbsolute(xdg) ? xdg : path.join(homedir(), '.local', 'state');
  return path.join(base, 'proxyd');
}

/**
 * Where {@link ensureStateDir} reports what it found (a pino logger fits).
 * Without one, a warning goes to `process.emitWarning` (stderr).
 */
export interface StateDirLog {
  warn(fields: Record<string, unknown>, message: string): void;
}

/** What {@link ensureStateDir} found about an existing directory's mode. */
export interface StateDirCheck {
  /** The directory's permission bits before the check (e.g. `0o777`). */
  mode: number;
  /** Set to 0700 because other users could read or write it and it is ours. */
  tightened: boolean;
  /** Other users can read or write it and it stays so (not ours, or chmod failed): the warning logged. */
  warning: string | null;
}

const octal = (mode: number) => `0${mode.toString(8).padStart(3, '0')}`;

/**
 * Creates the state directory (mode 0700) if missing; errors name the
 * path. It holds the API routes and the analytics key, so no other user
 * may read or write it: an existing directory that grants its group or
 * others any access (mode & 077, e.g. 0777 or 0755) is set to 0700 when
 * the process owns it (a warning says so: something made it open), and
 * otherwise left as it is with a warning that says what to run (it is not
 * ours to change; ssh's StrictModes refuses such a directory, we start).
 * Issue 20.
 */
export async function ensureStateDir(dir: string, log?: StateDirLog): Promise<StateDirCheck> {
  try {
    await mkdir(dir, { recursive: true, mode: 0o700 });
  } catch (err) {
    throw new Error(`cannot create state directory ${dir}: ${(err as Error).message}`);
  }
  const info = await stat(dir);
  if (!info.isDirectory()) throw new Error(`state directory ${dir} is not a directory`);
  const mode = info.mode & 0o777;
  const uid = process.getuid?.();
  if ((mode & 0o077) === 0 || uid === undefined) return { mode, tightened: false, warning: null };
  if (info.uid === uid) {
    try {
      await chmod(dir, 0o700);
      report(
        log,
        { dir, mode: octal(mode), now: '0700' },
        `state directory ${dir} was mode ${octal(mode)} (other users could read or write it): set to 0700`,
      );
      return { mode, tightened: true, warning: null };
    } catch (err) {
      return warn(log, dir, mode, `chmod failed: ${(err as Error).message}`);
    }
  }
  return warn(log, dir, mode, `owned by uid ${info.uid}, not this process (uid ${uid})`);
}

function warn(log: StateDirLog | undefined, dir: string, mode: number, why: string): StateDirCheck {
  const warning =
    `state directory ${dir} is mode ${octal(mode)}: other users can read or write the API routes and the analytics key` +
    ` (${why}); run: chmod 700 ${dir}`;
  report(log, { dir, mode: octal(mode) }, warning);
  return { mode, tightened: false, warning };
}

function report(log: StateDirLog | undefined, fields: Record<string, unknown>, message: string): void {
  if (log !== undefined) log.warn(fields, message);
  else process.emitWarning(message, { code: 'PROXYD_STATE_DIR_MODE' });
}
