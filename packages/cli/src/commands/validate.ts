import { readFileSync } from 'node:fs';
import type { Command } from 'commander';

/**
 * `proxyd validate --config <path>` (or `PROXY_CONFIG`): parses and compiles
 * a Proxyfile without starting anything. Prints one line —
 * `Valid configuration: 3 sites, 5 upstreams` (distinct upstream addresses) —
 * and exits 0; otherwise prints the positioned error to stderr and exits 1.
 * The Proxyfile package is imported only when the command runs.
 */
export function registerValidate(program: Command): void {
  program
    .command('validate')
    .description('check a Proxyfile: prints "Valid configuration: …" or the error with its file:line:column')
    .option('-c, --config <path>', 'Proxyfile path (env PROXY_CONFIG)')
    .action(async (opts: { config?: string }) => {
      const path = opts.config ?? process.env.PROXY_CONFIG;
      if (path === undefined) {
        process.stderr.write('proxyd: validate needs --config <path> (or PROXY_CONFIG)\n');
        process.exitCode = 1;
        return;
      }
      const { parse, summarize, ProxyfileError } = await import('@proxyd/proxyfile');
      let text: string;
      try {
        text = readFileSync(path, 'utf8');
      } catch (err) {
        process.stderr.write(`proxyd: cannot read ${path}: ${err instanceof Error ? err.message : String(err)}\n`);
        process.exitCode = 1;
        return;
      }
      try {
        const { sites, upstreams } = summarize(parse(text, { filename: path }));
        process.stdout.write(
          `Valid configuration: ${sites} site${sites === 1 ? '' : 's'}, ${upstreams} upstream${upstreams === 1 ? '' : 's'}\n`,
        );
      } catch (err) {
        if (!(err instanceof ProxyfileError)) throw err;
        process.stderr.write(`${err.message}\n`);
        process.exitCode = 1;
      }
    });
}
