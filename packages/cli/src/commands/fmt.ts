import { readFileSync, writeFileSync } from 'node:fs';
import type { Command } from 'commander';

/**
 * `proxyd fmt [--overwrite] [--check] <path>`: prints the canonical
 * formatting of a Proxyfile (tabs, single spaces, comments kept; idempotent).
 * `--overwrite` writes it back instead of printing; `--check` prints nothing
 * and exits 1 (naming the file on stderr) when the file is not formatted.
 * A file that cannot be tokenized (unterminated quote) prints the error and
 * exits 1.
 */
export function registerFmt(program: Command): void {
  program
    .command('fmt')
    .description('format a Proxyfile canonically (prints it, or --overwrite, or --check)')
    .argument('<path>', 'Proxyfile path')
    .option('--overwrite', 'write the formatted text back to the file')
    .option('--check', 'exit 1 when the file is not formatted (prints nothing to stdout)')
    .action(async (path: string, opts: { overwrite?: boolean; check?: boolean }) => {
      const { format, ProxyfileError } = await import('@proxyd/proxyfile');
      let text: string;
      try {
        text = readFileSync(path, 'utf8');
      } catch (err) {
        process.stderr.write(`proxyd: cannot read ${path}: ${err instanceof Error ? err.message : String(err)}\n`);
        process.exitCode = 1;
        return;
      }
      let formatted: string;
      try {
        formatted = format(text, { filename: path });
      } catch (err) {
        if (!(err instanceof ProxyfileError)) throw err;
        process.stderr.write(`${err.message}\n`);
        process.exitCode = 1;
        return;
      }
      if (opts.check) {
        if (formatted !== text) {
          process.stderr.write(`${path}: not formatted (run proxyd fmt --overwrite ${path})\n`);
          process.exitCode = 1;
        }
        return;
      }
      if (opts.overwrite) {
        if (formatted !== text) writeFileSync(path, formatted);
        return;
      }
      process.stdout.write(formatted);
    });
}
