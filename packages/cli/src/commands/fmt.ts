import { writeFileSync } from 'node:fs';
import { type Command, Option } from 'commander';
import { readText, resolveConfigPath } from '../config-path.js';
import { UsageError } from '../errors.js';

/** The name stdin goes by in messages and diffs (`proxyd fmt -`). */
const STDIN_NAME = '<stdin>';

/**
 * A unified diff from `before` to `after` (3 lines of context), both named
 * `name`, as `diff -u` prints it: `patch -p0` applies it. Empty when equal.
 */
export async function unifiedDiff(name: string, before: string, after: string): Promise<string> {
  if (before === after) return '';
  const { createTwoFilesPatch } = await import('diff');
  const patch = createTwoFilesPatch(name, name, before, after, undefined, undefined, { context: 3 });
  // jsdiff opens with "Index:" and "====" lines that diff -u does not print.
  return patch.slice(patch.indexOf('--- '));
}

async function readStdin(): Promise<string> {
  let text = '';
  process.stdin.setEncoding('utf8');
  for await (const chunk of process.stdin) text += chunk as string;
  return text;
}

/**
 * `proxyd fmt [path] [--overwrite | --check | --diff]`: the canonical
 * formatting of a Proxyfile (tabs, single spaces, comments kept;
 * idempotent). The path defaults to `PROXY_CONFIG`, else `./Proxyfile`;
 * `-` reads stdin. Without a flag it prints the formatted text and exits 0.
 * `--overwrite` writes it back (not with `-`); `--check` prints nothing and
 * exits 1 (naming the file on stderr) when the file is not formatted;
 * `--diff` prints a unified diff (`patch -p0` applies it) and exits 1 when
 * the file would change, 0 with no output when it is formatted. A file that
 * cannot be tokenized (unterminated quote) prints the error and exits 1.
 */
export function registerFmt(program: Command): void {
  program
    .command('fmt')
    .description('format a Proxyfile canonically (prints it, or --overwrite, --check, --diff); - reads stdin')
    .argument('[path]', 'Proxyfile path, or - for stdin (default: PROXY_CONFIG, else ./Proxyfile)')
    .addOption(new Option('--overwrite', 'write the formatted text back to the file').conflicts(['check', 'diff']))
    .addOption(
      new Option('--check', 'exit 1 when the file is not formatted (prints nothing to stdout)').conflicts('diff'),
    )
    .option('--diff', 'print a unified diff of what formatting changes; exit 1 when there is one')
    .action(async (given: string | undefined, opts: { overwrite?: boolean; check?: boolean; diff?: boolean }) => {
      const file = given ?? resolveConfigPath(undefined)?.path;
      if (file === undefined) {
        throw new UsageError('fmt needs a file: fmt <path>, fmt - (stdin), PROXY_CONFIG, or ./Proxyfile');
      }
      const stdin = file === '-';
      if (stdin && opts.overwrite) throw new UsageError('fmt - (stdin) cannot --overwrite: the output goes to stdout');
      const name = stdin ? STDIN_NAME : file;
      const text = stdin ? await readStdin() : readText(file);
      const { format } = await import('@proxyd/proxyfile');
      const formatted = format(text, { filename: name });
      if (opts.check) {
        if (formatted !== text) {
          process.stderr.write(
            stdin ? `${name}: not formatted\n` : `${name}: not formatted (run proxyd fmt --overwrite ${name})\n`,
          );
          process.exitCode = 1;
        }
        return;
      }
      if (opts.diff) {
        const diff = await unifiedDiff(name, text, formatted);
        process.stdout.write(diff);
        if (diff !== '') process.exitCode = 1;
        return;
      }
      if (opts.overwrite) {
        if (formatted !== text) writeFileSync(file, formatted);
        return;
      }
      process.stdout.write(formatted);
    });
}
