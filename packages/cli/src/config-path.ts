import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { UsageError } from './errors.js';

/** The file name looked for in the current directory when no Proxyfile is named (as Caddy's `./Caddyfile`). */
export const DEFAULT_PROXYFILE = 'Proxyfile';

/** Where the Proxyfile path came from. */
export type ConfigSource = 'flag' | 'env' | 'default';

/** A Proxyfile path and where it came from. */
export interface ConfigPath {
  path: string;
  from: ConfigSource;
}

/**
 * The Proxyfile a command reads: `--config`, else `PROXY_CONFIG` (non-empty),
 * else `./Proxyfile` when that file exists in `cwd` (default the process's),
 * else null. The default comes back as an absolute path.
 */
export function resolveConfigPath(
  flag: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
  cwd: string = process.cwd(),
): ConfigPath | null {
  if (flag !== undefined) return { path: flag, from: 'flag' };
  const fromEnv = env.PROXY_CONFIG;
  if (fromEnv) return { path: fromEnv, from: 'env' };
  const adjacent = path.join(cwd, DEFAULT_PROXYFILE);
  if (existsSync(adjacent) && statSync(adjacent).isFile()) return { path: adjacent, from: 'default' };
  return null;
}

/**
 * As {@link resolveConfigPath}, for commands that cannot do without a
 * Proxyfile: throws a {@link UsageError} naming the three ways to give one.
 */
export function requireConfigPath(
  command: string,
  flag: string | undefined,
  env?: NodeJS.ProcessEnv,
  cwd?: string,
): string {
  const found = resolveConfigPath(flag, env, cwd);
  if (found) return found.path;
  throw new UsageError(
    `${command} needs a Proxyfile: --config <path>, PROXY_CONFIG, or a file named ${DEFAULT_PROXYFILE} in the current directory`,
  );
}

/** Reads a Proxyfile (or any text the CLI was pointed at); the error names the path and the reason. */
export function readText(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`cannot read ${file}: ${err instanceof Error ? err.message : String(err)}`);
  }
}
