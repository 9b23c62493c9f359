import { Command } from 'commander';

/** Options of `proxyd run`. */
export interface RunOptions {
  /** Proxyfile path (flag `--config`, else env `PROXY_CONFIG`). */
  config?: string;
  /** Admin listener `host:port` (flag `--admin`). */
  admin?: string;
}

/** The daemon side of the CLI, implemented by the composition root. */
export interface DaemonCommands {
  run(options: RunOptions): Promise<void>;
  demo(): Promise<void>;
}

/** Builds the `proxyd` command-line program. */
export function buildProgram(version: string, daemon: DaemonCommands): Command {
  const program = new Command('proxyd')
    .description('A reverse proxy with automatic HTTPS, first-party analytics and a JSON admin API.')
    .version(version, '-v, --version', 'print the version')
    .showHelpAfterError();

  program
    .command('run')
    .description('run the proxy with a Proxyfile')
    .option('-c, --config <path>', 'Proxyfile path (env PROXY_CONFIG)')
    .option('--admin <host:port>', 'admin API listener (default 127.0.0.1:6190)')
    .action(async (opts: RunOptions) => {
      const config = opts.config ?? process.env.PROXY_CONFIG;
      await daemon.run({ ...opts, ...(config === undefined ? {} : { config }) });
    });

  program
    .command('demo')
    .description('run a demo: proxyd on unprivileged ports in front of a small demo page')
    .action(() => daemon.demo());

  return program;
}
