import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { readText, requireConfigPath } from '../config-path.js';
import { applyEnvFile } from '../env-file.js';
import { checkLogFiles } from '../log-files.js';
import { checkTlsFiles } from '../tls-files.js';

/**
 * `proxyd validate [--config <path>] [--envfile <path>]`: parses and
 * compiles a Proxyfile without starting anything (`--config`, else
 * `PROXY_CONFIG`, else `./Proxyfile`), then checks the files of every
 * `tls <cert_file> <key_file>`: readable, PEM, and the key belongs to the
 * certificate, and that the daemon can open the file of every `log { output
 * file <path> }` (without creating it). Prints one line — `Valid configuration: 3 sites, 5 upstreams`
 * (distinct upstream addresses) — and exits 0; otherwise prints each
 * positioned error to stderr and exits 1. An expired certificate is a
 * warning on stderr, not an error. The Proxyfile package is imported only
 * when the command runs.
 */
export function registerValidate(program: Command): void {
  program
    .command('validate')
    .description(
      'check a Proxyfile and its tls files: prints "Valid configuration: …" or each error with file:line:column',
    )
    .option('-c, --config <path>', 'Proxyfile path (env PROXY_CONFIG, default ./Proxyfile)')
    .option('--envfile <path>', 'load KEY=VALUE lines into the environment first (for {$VAR} placeholders)')
    .action(async (opts: { config?: string; envfile?: string }) => {
      if (opts.envfile !== undefined) applyEnvFile(opts.envfile);
      const file = requireConfigPath('validate', opts.config);
      const { parse, summarize } = await import('@proxyd/proxyfile');
      const texts = new Map<string, string>();
      const text = readText(file);
      texts.set(file, text);
      const config = parse(text, {
        filename: file,
        readFile: (imported) => {
          const body = readFileSync(imported, 'utf8');
          texts.set(imported, body);
          return body;
        },
      });
      const problems = checkTlsFiles(config.sites, texts);
      for (const problem of problems) process.stderr.write(`${problem.message}\n`);
      const logProblems = checkLogFiles(config.sites, texts);
      for (const problem of logProblems) process.stderr.write(`${problem}\n`);
      if (problems.some((p) => p.fatal) || logProblems.length > 0) {
        process.exitCode = 1;
        return;
      }
      const { sites, upstreams } = summarize(config);
      process.stdout.write(
        `Valid configuration: ${sites} site${sites === 1 ? '' : 's'}, ${upstreams} upstream${upstreams === 1 ? '' : 's'}\n`,
      );
    });
}
