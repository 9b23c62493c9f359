import { mkdir } from 'node:fs/promises';
import { homedir } from 'node:os';
import path from 'node:path';

/** The certificate directory when neither `--cert-dir` nor `PROXY_CERT_DIR` is given (spec §1). */
export const DEFAULT_CERT_DIR = '/etc/proxy/certs';

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

/** Creates the state directory (mode 0700) if missing; errors name the path. */
export async function ensureStateDir(dir: string): Promise<void> {
  try {
    await mkdir(dir, { recursive: true, mode: 0o700 });
  } catch (err) {
    throw new Error(`cannot create state directory ${dir}: ${(err as Error).message}`);
  }
}
