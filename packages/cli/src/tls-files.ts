import { createPrivateKey, type KeyObject, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';

/** The part of a compiled site that names certificate files (`tls <cert_file> <key_file>`). */
interface SiteTls {
  addresses?: readonly unknown[];
  tls: { mode: string; cert_file: string | null; key_file: string | null };
}

/** Where a `tls <cert> <key>` line is: the file, its line, and the column of each of the three tokens. */
export interface TlsLine {
  file: string;
  line: number;
  /** Columns (1-based, code points) of `tls`, the certificate token and the key token. */
  columns: readonly [number, number, number];
}

/** One problem with the files of a `tls <cert> <key>` line. */
export interface TlsFileProblem {
  /** `file:line:column: detail`, or `detail` alone when the line was not found. */
  message: string;
  /** False for an expired certificate: reported, but the configuration stays valid. */
  fatal: boolean;
}

/**
 * Splits one line into tokens with their 1-based columns, as the Proxyfile
 * lexer does for a line: whitespace separates, `"…"` (with `\"` and `\\`)
 * and `` `…` `` quote, `#` at a token's start ends the line.
 */
export function lineTokens(line: string): Array<{ text: string; column: number }> {
  const chars = [...line];
  const out: Array<{ text: string; column: number }> = [];
  let i = 0;
  while (i < chars.length) {
    const c = chars[i] as string;
    if (c === ' ' || c === '\t' || c === '\r') {
      i++;
      continue;
    }
    if (c === '#') break;
    const column = i + 1;
    let text = '';
    if (c === '"' || c === '`') {
      i++;
      while (i < chars.length && chars[i] !== c) {
        if (c === '"' && chars[i] === '\\' && (chars[i + 1] === '"' || chars[i + 1] === '\\')) i++;
        text += chars[i];
        i++;
      }
      i++;
    } else {
      while (i < chars.length && !/[ \t\r]/.test(chars[i] as string)) {
        text += chars[i];
        i++;
      }
    }
    out.push({ text, column });
  }
  return out;
}

/**
 * Finds the `tls <cert> <key>` line naming these two files in the texts read
 * (the Proxyfile and its imports, by the name their errors show). Null when
 * none matches token for token (the names came from `{$VAR}` placeholders,
 * or a quoted token spans lines).
 */
export function findTlsLine(texts: ReadonlyMap<string, string>, cert: string, key: string): TlsLine | null {
  for (const [file, text] of texts) {
    const lines = text.split('\n');
    for (let n = 0; n < lines.length; n++) {
      const tokens = lineTokens(lines[n] as string);
      const [t, c, k] = tokens;
      if (t?.text === 'tls' && c?.text === cert && k?.text === key) {
        return { file, line: n + 1, columns: [t.column, c.column, k.column] };
      }
    }
  }
  return null;
}

function reason(err: unknown): string {
  const message = (err instanceof Error ? err.message : String(err)).split('\n')[0] as string;
  // A system error: "ENOENT: no such file or directory", without the path repeated.
  return (err as NodeJS.ErrnoException)?.syscall ? (message.split(',')[0] as string) : message;
}

/**
 * Checks the files of every `tls <cert_file> <key_file>` in a compiled
 * config, as the daemon will load them (paths relative to `cwd`, default
 * the process's): both can be read, the certificate is PEM X.509, the key a
 * PEM private key, and the key belongs to the certificate. An expired
 * certificate is reported as not fatal. Each pair of files is checked once.
 */
export function checkTlsFiles(
  sites: readonly SiteTls[],
  texts: ReadonlyMap<string, string>,
  cwd: string = process.cwd(),
  now: Date = new Date(),
): TlsFileProblem[] {
  const problems: TlsFileProblem[] = [];
  const seen = new Set<string>();
  for (const site of sites) {
    const { mode, cert_file: certFile, key_file: keyFile } = site.tls;
    if (mode !== 'manual' || certFile === null || keyFile === null) continue;
    const pair = `${certFile}\n${keyFile}`;
    if (seen.has(pair)) continue;
    seen.add(pair);
    const where = findTlsLine(texts, certFile, keyFile);
    const at = (token: 0 | 1 | 2) => (where ? `${where.file}:${where.line}:${where.columns[token]}: ` : '');
    const fail = (token: 0 | 1 | 2, detail: string, fatal = true) =>
      problems.push({ message: `${at(token)}${detail}`, fatal });

    let cert: X509Certificate | null = null;
    try {
      const pem = readFileSync(path.resolve(cwd, certFile), 'utf8');
      try {
        cert = new X509Certificate(pem);
      } catch (err) {
        fail(1, `tls certificate file "${certFile}" is not a PEM certificate: ${reason(err)}`);
      }
    } catch (err) {
      fail(1, `tls certificate file "${certFile}" cannot be read: ${reason(err)}`);
    }
    let key: KeyObject | null = null;
    try {
      const pem = readFileSync(path.resolve(cwd, keyFile), 'utf8');
      try {
        key = createPrivateKey(pem);
      } catch (err) {
        fail(2, `tls key file "${keyFile}" is not a PEM private key (an unencrypted one): ${reason(err)}`);
      }
    } catch (err) {
      fail(2, `tls key file "${keyFile}" cannot be read: ${reason(err)}`);
    }
    if (cert && key && !cert.checkPrivateKey(key)) {
      fail(0, `tls key file "${keyFile}" does not belong to the certificate in "${certFile}"`);
    }
    if (cert && new Date(cert.validTo) < now) {
      fail(1, `warning: tls certificate file "${certFile}" expired on ${new Date(cert.validTo).toISOString()}`, false);
    }
  }
  return problems;
}
