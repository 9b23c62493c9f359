import type { Command } from 'commander';
import { UsageError } from '../errors.js';

/** bcrypt cost when `--cost` is absent: 2^12 rounds, about 0.3-0.6 s with bcryptjs on one core. */
export const DEFAULT_BCRYPT_COST = 12;

/** Parses `--cost`: a whole number from 4 to 31 (bcrypt's range, as the Proxyfile accepts). */
export function parseCost(value: string): number {
  if (!/^\d{1,2}$/.test(value) || Number(value) < 4 || Number(value) > 31) {
    throw new UsageError(`invalid --cost "${value}": a whole number from 4 to 31`);
  }
  return Number(value);
}

/** The password in piped input: its first line, without the line break. */
export function firstLine(text: string): string {
  const end = text.search(/\r?\n/);
  return end < 0 ? text : text.slice(0, end);
}

/** Reads all of a non-terminal stdin. */
async function readAll(stream: NodeJS.ReadStream): Promise<string> {
  let text = '';
  stream.setEncoding('utf8');
  for await (const chunk of stream) text += chunk as string;
  return text;
}

/**
 * Prompts on stderr and reads one line from a terminal without echoing it
 * (raw mode): Enter ends, Backspace erases, Ctrl-C or Ctrl-D on an empty
 * line aborts.
 */
function promptHidden(prompt: string, input: NodeJS.ReadStream, output: NodeJS.WriteStream): Promise<string> {
  return new Promise((resolve, reject) => {
    let value = '';
    // Raw (no echo) before the prompt shows: what is typed after it is never echoed.
    input.setRawMode(true);
    output.write(prompt);
    input.setEncoding('utf8');
    input.resume();
    const done = (err: Error | null) => {
      input.off('data', onData);
      input.setRawMode(false);
      input.pause();
      output.write('\n');
      if (err) reject(err);
      else resolve(value);
    };
    const onData = (chunk: string) => {
      for (const ch of chunk) {
        if (ch === '\r' || ch === '\n') return done(null);
        if (ch === '\u0003' || (ch === '\u0004' && value === '')) return done(new Error('aborted'));
        if (ch === '\u007f' || ch === '\b') value = [...value].slice(0, -1).join('');
        else if (ch >= ' ') value += ch;
      }
    };
    input.on('data', onData);
  });
}

/**
 * `proxyd hash-password [--plaintext <password>] [--cost <n>]`: prints a
 * bcrypt hash (`$2b$`, cost 12 by default) to put after the user name in a
 * `basic_auth` block. Without `--plaintext` the password comes from a prompt
 * on the terminal (typed twice, not echoed), or from the first line of
 * piped stdin. An empty password, or two typings that differ, exit 1.
 * bcrypt reads only a password's first 72 bytes: a longer one gets a note.
 */
export function registerHashPassword(program: Command): void {
  program
    .command('hash-password')
    .description('print a bcrypt hash of a password for basic_auth (prompts without echo, or reads stdin)')
    .option('--plaintext <password>', 'the password (visible in the process list and shell history: prefer the prompt)')
    .option('--cost <n>', `bcrypt cost, 4-31 (default ${DEFAULT_BCRYPT_COST})`)
    .action(async (opts: { plaintext?: string; cost?: string }) => {
      const cost = opts.cost === undefined ? DEFAULT_BCRYPT_COST : parseCost(opts.cost);
      let password: string;
      if (opts.plaintext !== undefined) {
        password = opts.plaintext;
      } else if (process.stdin.isTTY) {
        password = await promptHidden('Enter password: ', process.stdin, process.stderr);
        if (password !== '') {
          const again = await promptHidden('Confirm password: ', process.stdin, process.stderr);
          if (again !== password) throw new Error('passwords do not match');
        }
      } else {
        password = firstLine(await readAll(process.stdin));
      }
      if (password === '') throw new Error('empty password: nothing to hash');
      if (Buffer.byteLength(password) > 72) {
        process.stderr.write('proxyd: note: bcrypt uses only the first 72 bytes of a password\n');
      }
      const { default: bcrypt } = await import('bcryptjs');
      process.stdout.write(`${await bcrypt.hash(password, cost)}\n`);
    });
}
