import type { Command } from 'commander';
import { readText, requireConfigPath } from '../config-path.js';
import { applyEnvFile } from '../env-file.js';

/**
 * `proxyd adapt [--config <path>] [--pretty] [--envfile <path>]` (Caddy's
 * `caddy adapt`): prints the config model a Proxyfile compiles to — global
 * options with every default filled in, and the sites — as JSON on stdout,
 * one line, or indented with `--pretty`. The same model `run` starts from
 * and the admin API's schemas describe. A Proxyfile error goes to stderr
 * with its position; exit 1.
 */
export function registerAdapt(program: Command): void {
  program
    .command('adapt')
    .description('print the config model a Proxyfile compiles to, as JSON')
    .option('-c, --config <path>', 'Proxyfile path (env PROXY_CONFIG, default ./Proxyfile)')
    .option('--pretty', 'indent the JSON')
    .option('--envfile <path>', 'load KEY=VALUE lines into the environment first (for {$VAR} placeholders)')
    .action(async (opts: { config?: string; pretty?: boolean; envfile?: string }) => {
      if (opts.envfile !== undefined) applyEnvFile(opts.envfile);
      const file = requireConfigPath('adapt', opts.config);
      const { parse } = await import('@proxyd/proxyfile');
      const config = parse(readText(file), { filename: file });
      process.stdout.write(`${JSON.stringify(config, null, opts.pretty ? 2 : undefined)}\n`);
    });
}
