import { readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { type Position, ProxyfileError, ProxyfileErrorCode } from './errors.js';
import {
  isClose,
  isOpen,
  type Lexed,
  positionAfter,
  positionOf,
  sameLine,
  show,
  type Token,
  tokenize,
} from './lexer.js';
import { replaceEnv, withArgs } from './parse-time-placeholders.js';
import { nearest } from './suggest.js';

/** One directive line: its tokens (name first, without a trailing `{`) and its block, if any. */
export interface Line {
  tokens: [Token, ...Token[]];
  block: Block | null;
  /** Unquoted `{$VAR}` tokens of the line that came out empty and were dropped (to explain a missing argument). */
  vanished?: readonly Token[];
}

/** A `{ … }` block: the lines between the braces. */
export interface Block {
  open: Token;
  lines: Line[];
  close: Token;
}

/** A site block: its address tokens and its body. */
export interface SiteBlock {
  keys: Token[];
  block: Block;
  /**
   * Written without braces (Caddy allows it for a file's only site): the
   * body is every line after the addresses; `block.open` and `block.close`
   * are then the first address token.
   */
  braceless?: true;
}

/** A parsed Proxyfile (imports, snippets and env placeholders resolved). */
export interface Document {
  /** Name of the main file, as given. */
  file: string;
  /** The global options block, when the file starts with a bare `{`. */
  global: Block | null;
  sites: SiteBlock[];
}

/** How the parser reaches files and the environment. */
export interface SourceOptions {
  /** Name of the main file, shown in errors; imports resolve relative to its directory (default `Proxyfile`). */
  filename?: string;
  /** Reads an imported file (default: synchronous `fs.readFileSync(path, 'utf8')`). */
  readFile?: (path: string) => string;
  /** Lists the entries of a directory, for glob imports (default: synchronous `fs.readdirSync`). */
  readDir?: (path: string) => string[];
  /** Values of `{$VAR}` placeholders (default `process.env`). */
  env?: Readonly<Record<string, string | undefined>>;
}

/** Upper bound on tokens after every import is expanded. */
const MAX_TOKENS = 1_000_000;
/** Upper bound on block nesting (a real Proxyfile nests 3 or 4 deep). */
const MAX_DEPTH = 100;
const SNIPPET_NAME = /^\((.+)\)$/;
const SITE_LIKE = /^(?:https?:\/\/)?[\w*-]+(?:\.[\w-]+)+(?::\d+)?,?$/;
const CATCH_ALL_LIKE = /^(?:https?:\/\/(?::\d+)?|:\d+),?$/;
const GLOB_CHARS = /[*?[]/;

interface Frame {
  tokens: Token[];
  pos: number;
}

const NONE: readonly Token[] = [];

function unexpected(t: Token, expected: string, code: ProxyfileErrorCode = ProxyfileErrorCode.UNEXPECTED_TOKEN) {
  return new ProxyfileError(code, positionOf(t), `unexpected ${show(t)}, expected ${expected}`);
}

/** `{$X} is not set (empty), expected …` at the last placeholder that vanished from a line. */
export function vanishedError(
  vanished: readonly Token[],
  expected: string,
  code: ProxyfileErrorCode = ProxyfileErrorCode.UNEXPECTED_END,
): ProxyfileError | null {
  const t = vanished[vanished.length - 1];
  if (t === undefined) return null;
  return new ProxyfileError(code, positionOf(t), `${t.raw} ${t.vanished ?? 'is empty'}, expected ${expected}`);
}

/** Throws when an unquoted `{` is followed by more tokens on its line (Caddy's rule). */
function braceEndsLine(line: readonly Token[]): void {
  for (let i = 0; i < line.length - 1; i++) {
    const t = line[i] as Token;
    if (isOpen(t)) {
      throw new ProxyfileError(
        ProxyfileErrorCode.UNEXPECTED_TOKEN,
        positionOf(t),
        `unexpected ${show(line[i + 1] as Token)} after "{" on the same line: a "{" that opens a block must end its line`,
      );
    }
  }
}

function at(t: Token): string {
  return `${t.line}:${t.column}`;
}

function globToRegExp(glob: string): RegExp {
  let re = '';
  for (const ch of glob) {
    if (ch === '*') re += '[^/]*';
    else if (ch === '?') re += '[^/]';
    else re += ch.replace(/[\\^$.+()|{}[\]]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}

/**
 * Groups tokens into the global block, snippets and site blocks, expanding
 * `import` lines and `{$VAR}` placeholders on the way (Caddy's parser stage).
 * Every line that begins with `import` is replaced by the tokens of the
 * snippet or file(s) it names, wherever it stands.
 */
class Parser {
  readonly #frames: Frame[] = [];
  readonly #snippets = new Map<string, { tokens: Token[]; at: Token }>();
  readonly #options: Required<SourceOptions>;
  readonly #mainEnd: Position;
  #seg = 1;
  #suspect: Token | null = null;
  #total = 0;
  /** Placeholders that vanished from the line {@link #nextLine} returned last. */
  #vanished: readonly Token[] = NONE;

  constructor(main: Lexed, options: Required<SourceOptions>) {
    this.#options = options;
    this.#mainEnd = main.end;
    this.#total = main.tokens.length;
    this.#frames.push({ tokens: replaceEnv(main.tokens, options.env), pos: 0 });
  }

  parse(): Document {
    const doc: Document = { file: this.#mainEnd.file, global: null, sites: [] };
    let first = true;
    for (let line = this.#nextLine(); line !== null; line = this.#nextLine()) {
      const head = line[0] as Token;
      if (isOpen(head) && line.length === 1) {
        const empty = vanishedError(
          this.#vanished,
          'a site address before "{"',
          ProxyfileErrorCode.INVALID_SITE_ADDRESS,
        );
        if (empty) throw empty;
        if (!first) {
          throw unexpected(head, 'a site address (the global options block "{" must come first in the file)');
        }
        doc.global = this.#block(head);
        first = false;
        continue;
      }
      first = false;
      if (isClose(head)) throw unexpected(head, 'a site address or the end of the file (no block is open)');
      // A quoted name works too, as in Caddy: only braces depend on quoting.
      const snippet = SNIPPET_NAME.exec(head.text);
      if (snippet) {
        this.#defineSnippet(snippet[1] as string, line);
        continue;
      }
      doc.sites.push(this.#siteBlock(line, doc.sites.length === 0));
    }
    return doc;
  }

  #siteBlock(line: Token[], first: boolean): SiteBlock {
    const keys = [...line];
    braceEndsLine(line);
    for (;;) {
      const last = keys[keys.length - 1] as Token;
      if (isOpen(last)) break;
      if (last.text.endsWith(',') && !last.quoted) {
        const more = this.#nextLine();
        if (more !== null) {
          braceEndsLine(more);
          keys.push(...more);
          continue;
        }
      }
      if (last.source !== undefined && last.text.endsWith('{')) {
        throw unexpected(
          last,
          'a "{" written in the file to open the site block (a "{" that a placeholder produces is text, not a brace)',
        );
      }
      if (!last.quoted && last.raw.endsWith('{')) {
        throw unexpected(last, 'a space before "{" (write "<address> {")');
      }
      // Caddy's single site without braces: the rest of the file is its body.
      if (first) {
        for (const k of keys) if (isClose(k)) throw unexpected(k, 'a site address');
        const at = keys[0] as Token;
        return { keys, block: this.#block(at, 1, true), braceless: true };
      }
      throw new ProxyfileError(
        ProxyfileErrorCode.UNEXPECTED_END,
        positionAfter(last),
        `unexpected end of line after ${show(last)}, expected "{" to open the site block (only a file's single site may go without braces)`,
      );
    }
    const open = keys.pop() as Token;
    for (const k of keys) if (isClose(k)) throw unexpected(k, 'a site address');
    if (keys.length === 0) throw unexpected(open, 'a site address before "{"');
    return { keys, block: this.#block(open) };
  }

  /**
   * The lines of a block up to its `}`; `braceless`: up to the end of the
   * file, for a site without braces (`open` is its first address).
   */
  #block(open: Token, depth = 1, braceless = false): Block {
    if (depth > MAX_DEPTH) {
      throw new ProxyfileError(
        ProxyfileErrorCode.TOO_LARGE,
        positionOf(open),
        `blocks nest more than ${MAX_DEPTH} levels deep here: is a "}" missing?`,
      );
    }
    const lines: Line[] = [];
    for (;;) {
      const line = this.#nextLine();
      if (line === null && braceless) return { open, lines, close: open };
      if (line === null) {
        throw new ProxyfileError(
          ProxyfileErrorCode.UNEXPECTED_END,
          this.#mainEnd,
          `unexpected end of file, expected "}" to close the block opened at ${open.file}:${at(open)}${
            this.#suspect
              ? ` (is a "}" missing before ${show(this.#suspect)} at ${this.#suspect.file}:${at(this.#suspect)}?)`
              : ''
          }`,
        );
      }
      const head = line[0] as Token;
      if (braceless && isClose(head)) {
        throw unexpected(
          head,
          `a directive: the site at ${open.file}:${at(open)} has no braces, so no block is open (write "{" after its address)`,
        );
      }
      if (isClose(head)) {
        const extra = line[1];
        if (extra) throw unexpected(extra, 'a new line after "}"');
        return { open, lines, close: head };
      }
      const last = line[line.length - 1] as Token;
      const vanished = this.#vanished;
      braceEndsLine(line);
      for (let i = 0; i < line.length - 1; i++) {
        const t = line[i] as Token;
        if (isClose(t)) throw unexpected(t, 'the end of the line ("}" closes a block on a line of its own)');
      }
      if (isClose(last)) throw unexpected(last, 'the end of the line ("}" closes a block on a line of its own)');
      let entry: Line;
      if (isOpen(last)) {
        if (line.length === 1) {
          throw (
            vanishedError(vanished, 'a directive name before "{"') ?? unexpected(last, 'a directive name before "{"')
          );
        }
        if (braceless && depth === 1 && (SITE_LIKE.test(head.text) || CATCH_ALL_LIKE.test(head.text))) {
          throw unexpected(
            head,
            `a directive: the site at ${open.file}:${at(open)} has no braces, which only a file's single site may do (wrap each site's directives in "{ }")`,
          );
        }
        if (this.#suspect === null && SITE_LIKE.test(head.text)) this.#suspect = head;
        entry = { tokens: line.slice(0, -1) as [Token, ...Token[]], block: this.#block(last, depth + 1) };
      } else {
        entry = { tokens: line as [Token, ...Token[]], block: null };
      }
      if (vanished.length > 0) entry.vanished = vanished;
      lines.push(entry);
    }
  }

  #defineSnippet(name: string, line: Token[]): void {
    const head = line[0] as Token;
    const open = line[1];
    if (open === undefined || !isOpen(open) || line.length !== 2) {
      const bad = line[1];
      if (bad && !isOpen(bad)) throw unexpected(bad, `"{" to open the snippet (${name})`);
      braceEndsLine(line);
      throw new ProxyfileError(
        ProxyfileErrorCode.UNEXPECTED_END,
        positionAfter(head),
        `unexpected end of line after ${show(head)}, expected "{" to open the snippet`,
      );
    }
    const previous = this.#snippets.get(name);
    if (previous) {
      throw new ProxyfileError(
        ProxyfileErrorCode.DUPLICATE_SNIPPET,
        positionOf(head),
        `snippet (${name}) is already defined at ${previous.at.file}:${at(previous.at)}`,
      );
    }
    const body: Token[] = [];
    let depth = 1;
    for (;;) {
      const l = this.#rawLine(true);
      if (l === null) {
        throw new ProxyfileError(
          ProxyfileErrorCode.UNEXPECTED_END,
          this.#mainEnd,
          `unexpected end of file, expected "}" to close the snippet (${name}) opened at ${open.file}:${at(open)}`,
        );
      }
      const real = l.filter((t) => t.vanished === undefined);
      if (isClose(real[0]) && real.length === 1) {
        depth--;
        if (depth === 0) break;
      } else if (isOpen(real[real.length - 1])) depth++;
      body.push(...l);
    }
    this.#snippets.set(name, { tokens: body, at: head });
  }

  /**
   * The next non-empty line of tokens from the innermost import, without
   * expanding it. Vanished placeholders are left out (and kept in
   * {@link #vanished}) unless `keepVanished`, for snippet bodies that are read again on import.
   */
  #rawLine(keepVanished = false): Token[] | null {
    for (;;) {
      const frame = this.#frames[this.#frames.length - 1];
      if (frame === undefined) return null;
      const { tokens } = frame;
      let i = frame.pos;
      if (i >= tokens.length) {
        this.#frames.pop();
        continue;
      }
      const start = i;
      let vanished = (tokens[i] as Token).vanished !== undefined;
      i++;
      while (i < tokens.length && sameLine(tokens[i - 1] as Token, tokens[i] as Token)) {
        if ((tokens[i] as Token).vanished !== undefined) vanished = true;
        i++;
      }
      frame.pos = i;
      const line = tokens.slice(start, i);
      if (!vanished || keepVanished) {
        this.#vanished = NONE;
        return line;
      }
      const kept = line.filter((t) => t.vanished === undefined);
      if (kept.length === 0) continue;
      this.#vanished = line.filter((t) => t.vanished !== undefined);
      return kept;
    }
  }

  /** The next line, with `import` lines replaced by what they import. */
  #nextLine(): Token[] | null {
    for (;;) {
      const line = this.#rawLine();
      if (line === null) return null;
      const head = line[0] as Token;
      // A quoted "import" imports too, as in Caddy.
      if (head.text !== 'import') return line;
      this.#import(head, line);
    }
  }

  #import(head: Token, line: Token[]): void {
    const arg = line[1];
    if (arg === undefined || isOpen(arg)) {
      const expected = 'a file, a glob or a snippet name';
      throw (
        vanishedError(this.#vanished, expected) ??
        new ProxyfileError(
          ProxyfileErrorCode.UNEXPECTED_END,
          positionAfter(head),
          `unexpected end of line after "import", expected ${expected}`,
        )
      );
    }
    if (arg.text === '') {
      throw unexpected(arg, 'a file, a glob or a snippet name', ProxyfileErrorCode.INVALID_VALUE);
    }
    // Caddy's import arguments: `import name a b` fills {args[0]}, {args[1]}, {args[:]} … in what it imports.
    const args = line.slice(2);
    for (const t of args) if (isOpen(t)) throw unexpected(t, 'the end of the line (import takes no block)');
    const chain = head.via;
    const snippet = this.#snippets.get(arg.text);
    if (snippet) {
      const target = `(${arg.text})`;
      this.#checkCycle(arg, chain, target);
      const via = [...chain, target];
      const seg = this.#seg++;
      const copies = snippet.tokens.map((t) => ({ ...t, seg, via }));
      this.#push(arg, withArgs(copies, args, arg));
      return;
    }
    const base = isAbsolute(arg.text) ? arg.text : join(dirname(arg.file), arg.text);
    let paths: string[];
    if (GLOB_CHARS.test(arg.text)) {
      if (GLOB_CHARS.test(dirname(arg.text))) {
        throw new ProxyfileError(
          ProxyfileErrorCode.INVALID_VALUE,
          positionOf(arg),
          `import ${show(arg)}: wildcards are allowed in the file name only, not in directories`,
        );
      }
      const dir = dirname(base);
      const pattern = globToRegExp(basename(base));
      let entries: string[];
      try {
        entries = this.#options.readDir(dir);
      } catch (err) {
        throw new ProxyfileError(
          ProxyfileErrorCode.IMPORT_FAILED,
          positionOf(arg),
          `import ${show(arg)}: cannot list directory "${dir}" (${reason(err)})`,
          { cause: err },
        );
      }
      paths = entries
        .filter((e) => pattern.test(e) && !e.startsWith('.'))
        .sort()
        .map((e) => join(dir, e));
    } else paths = [base];
    for (const path of paths.reverse()) {
      this.#checkCycle(arg, chain, path);
      let text: string;
      try {
        text = this.#options.readFile(path);
      } catch (err) {
        const bareName = !GLOB_CHARS.test(arg.text) && !/[./]/.test(arg.text);
        const below = bareName ? this.#snippetBelow(arg.text) : null;
        if (below) {
          throw new ProxyfileError(
            ProxyfileErrorCode.IMPORT_FAILED,
            positionOf(arg),
            `import ${show(arg)}: snippet (${arg.text}) is defined below, at ${below.file}:${below.line}; define snippets before importing them`,
          );
        }
        const near = nearest(arg.text, this.#snippets.keys());
        const what = bareName
          ? `no snippet (${arg.text}) is defined above${near ? ` (did you mean (${near})?)` : ''}, and `
          : '';
        throw new ProxyfileError(
          ProxyfileErrorCode.IMPORT_FAILED,
          positionOf(arg),
          `import ${show(arg)}: ${what}cannot read file "${path}" (${reason(err)})`,
          { cause: err },
        );
      }
      const lexed = tokenize(text, path, this.#seg++, [...chain, path]);
      this.#push(arg, withArgs(replaceEnv(lexed.tokens, this.#options.env), args, arg));
    }
  }

  /** Where `(name) {` is defined further down in the text still to read, if it is. */
  #snippetBelow(name: string): Token | null {
    const key = `(${name})`;
    for (let f = this.#frames.length - 1; f >= 0; f--) {
      const { tokens, pos } = this.#frames[f] as Frame;
      for (let i = pos; i < tokens.length - 1; i++) {
        const t = tokens[i] as Token;
        if (t.text !== key) continue;
        const before = tokens[i - 1];
        const next = tokens[i + 1] as Token;
        if ((before === undefined || !sameLine(before, t)) && isOpen(next) && sameLine(t, next)) return t;
      }
    }
    return null;
  }

  /**
   * Throws when `target` is already in the chain of imports. Snippets
   * compare by name, files by absolute path (`x.pf` and `./x.pf` are one file).
   */
  #checkCycle(arg: Token, chain: readonly string[], target: string): void {
    const isSnippet = SNIPPET_NAME.test(target);
    const same = isSnippet
      ? (c: string) => c === target
      : (c: string) => !SNIPPET_NAME.test(c) && resolve(c) === resolve(target);
    if (chain.some(same)) {
      throw new ProxyfileError(
        ProxyfileErrorCode.IMPORT_CYCLE,
        positionOf(arg),
        `import cycle: ${[...chain, target].join(' -> ')}`,
      );
    }
  }

  #push(arg: Token, tokens: Token[]): void {
    this.#total += tokens.length;
    if (this.#total > MAX_TOKENS) {
      throw new ProxyfileError(
        ProxyfileErrorCode.TOO_LARGE,
        positionOf(arg),
        `import ${show(arg)}: the configuration expands to more than ${MAX_TOKENS} tokens`,
      );
    }
    if (tokens.length > 0) this.#frames.push({ tokens, pos: 0 });
  }
}

function reason(err: unknown): string {
  if (err && typeof err === 'object' && 'code' in err && typeof err.code === 'string') return err.code;
  return err instanceof Error ? err.message : String(err);
}

function defaultReadDir(path: string): string[] {
  return readdirSync(path);
}

function defaultReadFile(path: string): string {
  return readFileSync(path, 'utf8');
}

/** Lexes and parses Proxyfile text into a {@link Document}; throws {@link ProxyfileError}. */
export function parseDocument(text: string, options: SourceOptions = {}): Document {
  const filename = options.filename ?? 'Proxyfile';
  const resolved: Required<SourceOptions> = {
    filename,
    readFile: options.readFile ?? defaultReadFile,
    readDir: options.readDir ?? defaultReadDir,
    env: options.env ?? process.env,
  };
  return new Parser(tokenize(text, filename, 0, [filename]), resolved).parse();
}
