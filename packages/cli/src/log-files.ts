import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';
import { lineTokens } from './tls-files.js';

/** The part of a compiled site that names a log file (`log { output file <path> }`). */
interface SiteLogFile {
  addresses: readonly { host: string }[];
  log: { output: { kind: string; path?: string } } | null;
}

/**
 * Why the daemon could not open `file` for appending (creating it and its
 * directories as it does), or null when it could: checked with `stat` and
 * `access`, without creating anything.
 */
export function logFileProblem(file: string): string | null {
  try {
    if (statSync(file).isDirectory()) return 'EISDIR: it is a directory';
    accessSync(file, constants.W_OK);
    return null;
  } catch (err) {
    if (!missing(err)) return reason(err);
  }
  // Missing: the nearest directory that exists must let it (and the directories between) be created.
  for (let dir = path.dirname(file); ; dir = path.dirname(dir)) {
    try {
      if (!statSync(dir).isDirectory()) return `ENOTDIR: "${dir}" is not a directory`;
      accessSync(dir, constants.W_OK | constants.X_OK);
      return null;
    } catch (err) {
      if (!missing(err) || dir === path.dirname(dir)) return reason(err);
    }
  }
}

/** ENOENT, or ENOTDIR (a file stands on the way; the walk up names it). */
function missing(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

function reason(err: unknown): string {
  const message = (err instanceof Error ? err.message : String(err)).split('\n')[0] as string;
  return (err as NodeJS.ErrnoException)?.syscall ? (message.split(',')[0] as string) : message;
}

/**
 * Checks that the daemon can open the file of every site's `log { output
 * file <path> }` (relative paths against `cwd`, default the process's):
 * one message per file, `Proxyfile:3:15: site "a.example.com": log file
 * "/var/log/a.log" cannot be opened: EACCES: permission denied` (the
 * position of the path on its `output file` line, when the texts read show
 * it token for token).
 */
export function checkLogFiles(
  sites: readonly SiteLogFile[],
  texts: ReadonlyMap<string, string>,
  cwd: string = process.cwd(),
): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const site of sites) {
    const output = site.log?.output;
    if (output?.kind !== 'file' || output.path === undefined) continue;
    const file = path.resolve(cwd, output.path);
    if (seen.has(file)) continue;
    seen.add(file);
    const problem = logFileProblem(file);
    if (problem === null) continue;
    const where = findOutputLine(texts, output.path);
    problems.push(
      `${where ?? ''}site ${JSON.stringify(site.addresses[0]?.host ?? '?')}: log file ${JSON.stringify(output.path)} cannot be opened: ${problem}`,
    );
  }
  return problems;
}

/** `file:line:column: ` of the path token of an `output file <path>` line, or null. */
function findOutputLine(texts: ReadonlyMap<string, string>, logPath: string): string | null {
  for (const [file, text] of texts) {
    const lines = text.split('\n');
    for (let n = 0; n < lines.length; n++) {
      const [o, f, p] = lineTokens(lines[n] as string);
      if (o?.text === 'output' && f?.text === 'file' && p?.text === logPath) return `${file}:${n + 1}:${p.column}: `;
    }
  }
  return null;
}
