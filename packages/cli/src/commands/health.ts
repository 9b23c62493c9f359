import type { Command } from 'commander';
import { AdminClient } from '../client.js';
import { applyEnvFile } from '../env-file.js';
import { reloadTarget } from './reload.js';

/** How long `proxyd health` waits for the answer, ms: under a container HEALTHCHECK's usual 5 s timeout. */
export const HEALTH_TIMEOUT_MS = 3_000;

/**
 * Asks a running proxyd for `GET /health` at the admin address `proxyd
 * reload` would use (`--admin-socket`, `--admin`, the Proxyfile's `admin`,
 * 127.0.0.1:6190; no token: the endpoint needs none). Resolves the body's
 * line (`ok, up 12 s`) on 200; throws a one-line reason otherwise.
 */
export async function checkHealth(opts: { config?: string; admin?: string; adminSocket?: string }): Promise<string> {
  const target = await reloadTarget({ ...opts, token: '' });
  const client = new AdminClient({ ...target.options, timeoutMs: HEALTH_TIMEOUT_MS });
  let res: Awaited<ReturnType<AdminClient['request']>>;
  try {
    res = await client.request('GET', '/health');
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw new Error(`unhealthy: cannot reach the admin API at ${target.describe}: ${reason}`);
  }
  if (res.status !== 200) throw new Error(`unhealthy: GET /health at ${target.describe} answered ${res.status}`);
  const body = JSON.parse(res.body) as { status: string; uptime_secs: number };
  return `${body.status}, up ${body.uptime_secs} s (${target.describe})`;
}

/**
 * `proxyd health [--config <path>] [--admin <host:port>] [--admin-socket
 * <path>] [--envfile <path>]`: the container image's HEALTHCHECK. Exits 0
 * and prints `ok, up N s (<address>)` when the admin API answers GET
 * /health with 200 within 3 s; otherwise prints why to stderr and exits 1.
 */
export function registerHealth(program: Command): void {
  program
    .command('health')
    .description(
      "check that a running proxyd answers GET /health (admin address from --admin, else the Proxyfile's admin option); exit 1 if not",
    )
    .option('-c, --config <path>', 'read the admin address from this Proxyfile (env PROXY_CONFIG, default ./Proxyfile)')
    .option('--admin <host:port>', "TCP admin address (default: the Proxyfile's admin option, else 127.0.0.1:6190)")
    .option('--admin-socket <path>', 'use the Unix socket admin listener instead of TCP')
    .option('--envfile <path>', 'load KEY=VALUE lines into the environment first ({$VAR} in the Proxyfile)')
    .action(async (opts: { config?: string; admin?: string; adminSocket?: string; envfile?: string }) => {
      if (opts.envfile !== undefined) applyEnvFile(opts.envfile);
      process.stdout.write(`${await checkHealth(opts)}\n`);
    });
}
