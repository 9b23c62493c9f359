import { type Position, ProxyfileError, ProxyfileErrorCode } from './errors.js';

/**
 * One token of a Proxyfile. Tokens are separated by whitespace (space, tab,
 * CR, LF); `"…"` (with `\"` and `\\` escapes) and `` `…` `` (no escapes)
 * quote a token that holds whitespace, and may span lines; `#` at the start of
 * a token begins a comment that runs to the end of the line. `{` and `}` are
 * plain tokens: the parser gives them meaning when they stand alone, unquoted.
 */
export interface Token {
  /** The value: quotes removed, escapes applied, env placeholders replaced. */
  text: string;
  /** Exactly as written in the file (quotes and escapes included). */
  raw: string;
  /**
   * Set when `{$VAR}` placeholders changed the text: the token as written
   * (same as `raw`), so messages can say where a value came from.
   */
  source?: string;
  /**
   * Set when the token was unquoted and its placeholders left it empty: the
   * parser drops it from its line (as Caddy does) but keeps it to explain a
   * missing argument. The value says why, e.g. `is not set (empty)`.
   */
  vanished?: string;
  /** Whether the token was quoted (a quoted `{` is text, not a brace). */
  quoted: boolean;
  /** File name as shown in errors. */
  file: string;
  /** 1-based line of the first character. */
  line: number;
  /** 1-based column of the first character, counted in code points (a tab counts as one). */
  column: number;
  /** Line of the last character (differs from `line` for a quoted multi-line token). */
  endLine: number;
  /**
   * Which read of a text the token comes from: every file read and every
   * splice of an import gets its own number, so two tokens are on the same
   * line only when they share it.
   */
  seg: number;
  /** Chain of imports (files and snippets) that produced this token; empty when written in the main file. */
  via: readonly string[];
}

/** A comment (`# …` to the end of its line), kept for the formatter. */
export interface Comment {
  text: string;
  line: number;
  column: number;
}

/** What {@link tokenize} returns. */
export interface Lexed {
  tokens: Token[];
  comments: Comment[];
  /** Position just past the last character (for "unexpected end of file"). */
  end: Position;
}

const SPACE = 32;
const TAB = 9;
const CR = 13;
const LF = 10;
const HASH = 35;
const QUOTE = 34;
const BACKTICK = 96;
const BACKSLASH = 92;

/** Whether a UTF-16 unit is the second half of a surrogate pair (not a column of its own). */
function isTrail(unit: number): boolean {
  return (unit & 0xfc00) === 0xdc00;
}

/** Length of a string in code points (what a column counts). */
export function width(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) if (!isTrail(text.charCodeAt(i))) n++;
  return n;
}

/** Splits Proxyfile text into tokens (and comments); throws {@link ProxyfileError} on an unterminated quote. */
export function tokenize(text: string, file: string, seg = 0, via: readonly string[] = []): Lexed {
  const tokens: Token[] = [];
  const comments: Comment[] = [];
  const n = text.length;
  // A UTF-8 byte order mark is not part of the first token.
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  let line = 1;
  let col = 1;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === LF) {
      line++;
      col = 1;
      i++;
      continue;
    }
    if (c === SPACE || c === TAB || c === CR) {
      i++;
      col++;
      continue;
    }
    const start = i;
    const startLine = line;
    const startCol = col;
    if (c === HASH) {
      while (i < n && text.charCodeAt(i) !== LF) i++;
      col += width(text.slice(start, i));
      comments.push({ text: text.slice(start, i).replace(/\s+$/, ''), line: startLine, column: startCol });
      continue;
    }
    if (c === QUOTE || c === BACKTICK) {
      let value = '';
      let chunk = i + 1;
      i++;
      col++;
      for (;;) {
        if (i >= n) {
          throw new ProxyfileError(
            ProxyfileErrorCode.UNTERMINATED_QUOTE,
            { file, line: startLine, column: startCol },
            `unterminated quoted string: expected a closing ${c === QUOTE ? '"' : '`'} before the end of the file`,
          );
        }
        const ch = text.charCodeAt(i);
        if (ch === c) {
          value += text.slice(chunk, i);
          i++;
          col++;
          break;
        }
        if (c === QUOTE && ch === BACKSLASH && i + 1 < n) {
          const next = text.charCodeAt(i + 1);
          if (next === QUOTE || next === BACKSLASH) {
            value += text.slice(chunk, i);
            chunk = i + 1;
            i += 2;
            col += 2;
            continue;
          }
        }
        if (ch === LF) {
          line++;
          col = 1;
        } else if (!isTrail(ch)) col++;
        i++;
      }
      tokens.push({
        text: value,
        raw: text.slice(start, i),
        quoted: true,
        file,
        line: startLine,
        column: startCol,
        endLine: line,
        seg,
        via,
      });
      continue;
    }
    while (i < n) {
      const ch = text.charCodeAt(i);
      if (ch === SPACE || ch === TAB || ch === CR || ch === LF) break;
      if (!isTrail(ch)) col++;
      i++;
    }
    const word = text.slice(start, i);
    tokens.push({
      text: word,
      raw: word,
      quoted: false,
      file,
      line: startLine,
      column: startCol,
      endLine: startLine,
      seg,
      via,
    });
  }
  return { tokens, comments, end: { file, line, column: col } };
}

/** Whether `b` continues the line `a` is on. */
export function sameLine(a: Token, b: Token): boolean {
  return a.seg === b.seg && a.endLine === b.line;
}

/** Whether the token is a `{` written as such: quoted, or produced by a `{$VAR}`, it is text. */
export function isOpen(t: Token | undefined): boolean {
  return t !== undefined && t.raw === '{';
}

/** Whether the token is a `}` written as such: quoted, or produced by a `{$VAR}`, it is text. */
export function isClose(t: Token | undefined): boolean {
  return t !== undefined && t.raw === '}';
}

/** The position of a token. */
export function positionOf(t: Token): Position {
  return { file: t.file, line: t.line, column: t.column };
}

/** The position just past a token (where a missing argument would go). */
export function positionAfter(t: Token): Position {
  if (t.endLine !== t.line) return { file: t.file, line: t.line, column: t.column };
  return { file: t.file, line: t.line, column: t.column + width(t.raw) };
}

/** How a token is quoted in messages: `"text"`, plus `(from {$VAR})` when a placeholder produced it. */
export function show(t: Token): string {
  const text = quoteText(t.text);
  return t.source === undefined ? text : `${text} (from ${cut(t.source)})`;
}

/** Quotes text for a message, cut to 60 characters. */
export function quoteText(text: string): string {
  return JSON.stringify(cut(text));
}

function cut(text: string): string {
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}
