import type { Command } from 'commander';
import { AdminClient, type AdminClientOptions, errorMessage } from '../client.js';
import { readText, resolveConfigPath } from '../config-path.js';
import { applyEnvFile } from '../env-file.js';

/** The admin address when neither a flag nor a Proxyfile names one (the daemon's default). */
export const DEFAULT_ADMIN = '127.0.0.1:6190';

/** Where `proxyd reload` sends its request, and why there (for messages). */
export interface ReloadTarget {
  options: AdminClientOptions;
  /** E.g. `127.0.0.1:6190 (the admin option of ./Proxyfile)`. */
  describe: string;
}

/**
 * The address to reach for an `admin` value: a wildcard listen address
 * (`0.0.0.0`, `[::]`) is reached on the loopback of the same family.
 */
export function connectAddress(admin: string): string {
  if (admin.startsWith('0.0.0.0:')) return `127.0.0.1:${admin.slice('0.0.0.0:'.length)}`;
  if (admin.startsWith('[::]:')) return `[::1]:${admin.slice('[::]:'.length)}`;
  return admin;
}

/**
 * Chooses the admin listener: `--admin-socket`, else `--admin`, else the
 * global `admin` option of the Proxyfile (`--config`, `PROXY_CONFIG`,
 * `./Proxyfile`; the default address when it sets none), else
 * 127.0.0.1:6190. A Proxyfile that does not parse throws its positioned
 * error: nothing is sent.
 */
export async function reloadTarget(opts: {
  admin?: string;
  adminSocket?: string;
  config?: string;
  token?: string;
}): Promise<ReloadTarget> {
  const token = opts.token ?? process.env.PROXY_ADMIN_TOKEN;
  const auth = token === undefined || token === '' ? {} : { token };
  if (opts.adminSocket !== undefined) {
    return { options: { socketPath: opts.adminSocket }, describe: `the socket ${opts.adminSocket}` };
  }
  if (opts.admin !== undefined) return { options: { admin: opts.admin, ...auth }, describe: opts.admin };
  const config = resolveConfigPath(opts.config);
  if (config) {
    const { parse } = await import('@proxyd/proxyfile');
    const admin = parse(readText(config.path), { filename: config.path }).global.admin ?? DEFAULT_ADMIN;
    const address = connectAddress(admin);
    return { options: { admin: address, ...auth }, describe: `${address} (the admin option of ${config.path})` };
  }
  return { options: { admin: DEFAULT_ADMIN, ...auth }, describe: DEFAULT_ADMIN };
}

/**
 * The line for a refused reload: the server's message, the seconds to wait
 * during the cooldown, and for a 401 what to do about the token.
 */
export function reloadFailure(
  res: { status: number; headers: Record<string, string | string[] | undefined>; body: string },
  sentToken: boolean,
): string {
  const base = `reload failed (${res.status}): ${errorMessage(res)}`;
  if (res.status === 401) {
    return sentToken
      ? `${base}: the token was refused; pass the one proxyd was started with (--token or PROXY_ADMIN_TOKEN), or use --admin-socket`
      : `${base}: no token was sent; pass --token <token> or set PROXY_ADMIN_TOKEN to the one proxyd was started with, or use --admin-socket`;
  }
  const retry = res.headers['retry-after'];
  if (res.status === 429 && typeof retry === 'string') return `${base} (retry in ${retry} s)`;
  return base;
}

/**
 * `proxyd reload [--config <path>] [--admin <host:port>] [--admin-socket
 * <path>] [--token <token>] [--envfile <path>]`: asks a running proxyd to
 * re-read its Proxyfile (POST /reload), at the address {@link reloadTarget}
 * picks. The token comes from `--token`, else `PROXY_ADMIN_TOKEN` (TCP
 * only). Prints the server's message; on failure prints the server's error
 * (the full parse error for a bad Proxyfile, the seconds to wait during the
 * cooldown, what to do about a missing or refused token) to stderr and
 * exits 1.
 */
export function registerReload(program: Command): void {
  program
    .command('reload')
    .description(
      "ask a running proxyd to reload its Proxyfile (admin address from --admin, else the Proxyfile's admin option)",
    )
    .option('-c, --config <path>', 'read the admin address from this Proxyfile (env PROXY_CONFIG, default ./Proxyfile)')
    .option('--admin <host:port>', `TCP admin address (default: the Proxyfile's admin option, else ${DEFAULT_ADMIN})`)
    .option('--admin-socket <path>', 'use the Unix socket admin listener instead of TCP (no token needed)')
    .option('--token <token>', 'admin API token (env PROXY_ADMIN_TOKEN; visible in the process list, prefer the env)')
    .option('--envfile <path>', 'load KEY=VALUE lines into the environment first (PROXY_ADMIN_TOKEN, {$VAR})')
    .action(
      async (opts: { config?: string; admin?: string; adminSocket?: string; token?: string; envfile?: string }) => {
        if (opts.envfile !== undefined) applyEnvFile(opts.envfile);
        const target = await reloadTarget(opts);
        const client = new AdminClient(target.options);
        let res: Awaited<ReturnType<AdminClient['request']>>;
        try {
          res = await client.request('POST', '/reload');
        } catch (err) {
          const reason = err instanceof Error ? err.message : String(err);
          throw new Error(`cannot reach the admin API at ${target.describe}: ${reason} (is proxyd running?)`);
        }
        if (res.status !== 200) throw new Error(reloadFailure(res, target.options.token !== undefined));
        process.stdout.write(`${(JSON.parse(res.body) as { message: string }).message}\n`);
      },
    );
}
