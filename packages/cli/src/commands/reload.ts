import type { Command } from 'commander';
import { AdminClient } from '../client.js';

/**
 * `proxyd reload [--admin <host:port>] [--admin-socket <path>]`: asks a
 * running proxyd to re-read its Proxyfile (POST /reload). The token comes
 * from PROXY_ADMIN_TOKEN (TCP only). Prints the server's message; on failure
 * prints the server's error (the full parse error for a bad Proxyfile) to
 * stderr and exits 1.
 */
export function registerReload(program: Command): void {
  program
    .command('reload')
    .description('ask a running proxyd to reload its Proxyfile (token from PROXY_ADMIN_TOKEN)')
    .option('--admin <host:port>', 'TCP admin address', '127.0.0.1:6190')
    .option('--admin-socket <path>', 'use the Unix socket admin listener instead of TCP')
    .action(async (opts: { admin: string; adminSocket?: string }) => {
      const token = process.env.PROXY_ADMIN_TOKEN;
      const client = new AdminClient({
        admin: opts.admin,
        ...(opts.adminSocket === undefined ? {} : { socketPath: opts.adminSocket }),
        ...(token === undefined ? {} : { token }),
      });
      try {
        process.stdout.write(`${await client.reload()}\n`);
      } catch (err) {
        process.stderr.write(`proxyd: ${err instanceof Error ? err.message : String(err)}\n`);
        process.exitCode = 1;
      }
    });
}
