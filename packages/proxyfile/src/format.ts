import { type Comment, isClose, isOpen, type Token, tokenize } from './lexer.js';

interface Item {
  raw: string;
  line: number;
  endLine: number;
  token: Token | null;
}

/** Options of {@link format}. */
export interface FormatOptions {
  /** Name shown in an error position (default `Proxyfile`). */
  filename?: string;
}

/**
 * Formats Proxyfile text canonically (like `caddy fmt`): one tab of indent
 * per open block, tokens separated by one space, comments kept, at most one
 * blank line in a row and none just inside braces, a final newline. Tokens
 * are written exactly as they were (quotes, escapes and `{$VAR}` untouched),
 * and stay on their lines, so the formatted file means the same thing.
 * Idempotent. Throws `ProxyfileError` only for an unterminated quote.
 */
export function format(text: string, options: FormatOptions = {}): string {
  const { tokens, comments } = tokenize(text, options.filename ?? 'Proxyfile');
  const items = merge(tokens, comments);
  const out: string[] = [];
  let depth = 0;
  let prevEnd = 0;
  let prevOpened = false;
  let i = 0;
  while (i < items.length) {
    const first = items[i] as Item;
    const start = i;
    let end = first.endLine;
    i++;
    while (i < items.length && (items[i] as Item).line === end) {
      end = (items[i] as Item).endLine;
      i++;
    }
    const line = items.slice(start, i);
    const closes = isClose(first.token ?? undefined);
    if (closes) depth = Math.max(0, depth - 1);
    if (out.length > 0 && first.line > prevEnd + 1 && !prevOpened && !closes) out.push('');
    out.push('\t'.repeat(depth) + line.map((it) => it.raw).join(' '));
    let lastToken: Token | null = null;
    for (const it of line) if (it.token) lastToken = it.token;
    prevOpened = isOpen(lastToken ?? undefined);
    if (prevOpened) depth++;
    prevEnd = end;
  }
  return out.length === 0 ? '' : `${out.join('\n')}\n`;
}

/** Whether `text` is already in canonical format. */
export function isFormatted(text: string): boolean {
  return format(text) === text;
}

function merge(tokens: Token[], comments: Comment[]): Item[] {
  const items: Item[] = [];
  let c = 0;
  for (const t of tokens) {
    while (c < comments.length && before(comments[c] as Comment, t)) items.push(commentItem(comments[c++] as Comment));
    items.push({ raw: t.raw, line: t.line, endLine: t.endLine, token: t });
  }
  while (c < comments.length) items.push(commentItem(comments[c++] as Comment));
  return items;
}

function before(c: Comment, t: Token): boolean {
  return c.line < t.line || (c.line === t.line && c.column < t.column);
}

function commentItem(c: Comment): Item {
  return { raw: c.text, line: c.line, endLine: c.line, token: null };
}
