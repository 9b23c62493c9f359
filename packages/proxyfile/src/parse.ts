import type { Config } from '@proxyd/model';
import { compile } from './compile.js';
import { parseDocument, type SourceOptions } from './parser.js';

/** Options of {@link parse}. */
export interface ParseOptions extends SourceOptions {}

/**
 * Parses Proxyfile text into the config model, or throws `ProxyfileError`
 * (message `file:line:column: …`). Synchronous: imports are read with
 * `fs.readFileSync` relative to `filename` unless `readFile` is given;
 * `{$VAR}` placeholders read `env` (default `process.env`).
 */
export function parse(text: string, options: ParseOptions = {}): Config {
  return compile(parseDocument(text, options));
}
