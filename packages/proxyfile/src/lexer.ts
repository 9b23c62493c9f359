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
  /** Whether the token was quoted (a quoted `{` is text, not a brace). */
  quoted: boolean;
  /** File name as shown in errors. */
  file: string;
  /** 1-based line of the first character. */
  line: number;
  /** 1-based column of the first character (a tab counts as one). */
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
      col += i - start;
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
        } else col++;
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
      i++;
    }
    col += i - start;
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

/** Whether the token is an unquoted `{`. */
export function isOpen(t: Token | undefined): boolean {
  return t !== undefined && !t.quoted && t.text === '{';
}

/** Whether the token is an unquoted `}`. */
export function isClose(t: Token | undefined): boolean {
  return t !== undefined && !t.quoted && t.text === '}';
}

/** The position of a token. */
export function positionOf(t: Token): Position {
  return { file: t.file, line: t.line, column: t.column };
}

/** The position just past a token (where a missing argument would go). */
export function positionAfter(t: Token): Position {
  if (t.endLine !== t.line) return { file: t.file, line: t.line, column: t.column };
  return { file: t.file, line: t.line, column: t.column + t.raw.length };
}

/** How a token is quoted in messages: `"text"`. */
export function show(t: Token): string {
  return quoteText(t.text);
}

/** Quotes text for a message, cut to 60 characters. */
export function quoteText(text: string): string {
  return JSON.stringify(text.length > 60 ? `${text.slice(0, 57)}...` : text);
}
