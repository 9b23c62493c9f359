import { describe, expect, it } from 'vitest';
import { ProxyfileError, ProxyfileErrorCode } from './errors.js';
import { isClose, isOpen, tokenize } from './lexer.js';
import { editDistance, nearest } from './suggest.js';

describe('lexer', () => {
  it('gives every token its line and column (a tab is one column)', () => {
    const { tokens } = tokenize('a.test {\n\treverse_proxy  "x y"\n}\n', 'F');
    expect(tokens.map((t) => [t.text, t.line, t.column, t.quoted])).toEqual([
      ['a.test', 1, 1, false],
      ['{', 1, 8, false],
      ['reverse_proxy', 2, 2, false],
      ['x y', 2, 17, true],
      ['}', 3, 1, false],
    ]);
  });

  it('keeps # inside a token, ends a token at a comment, unescapes \\" and \\\\ only', () => {
    const { tokens, comments } = tokenize('a#b "q\\"\\\\\\n" # c', 'F');
    expect(tokens.map((t) => t.text)).toEqual(['a#b', 'q"\\\\n']);
    expect(comments.map((c) => c.text)).toEqual(['# c']);
  });

  it('counts columns in code points: a character outside the BMP is one column', () => {
    const { tokens } = tokenize('"😀é" x 😀😀 y', 'F');
    expect(tokens.map((t) => [t.text, t.column])).toEqual([
      ['😀é', 1],
      ['x', 6],
      ['😀😀', 8],
      ['y', 11],
    ]);
  });

  it('makes braces only of what is written: quoted or placeholder braces are text', () => {
    const { tokens } = tokenize('{ "{" } `}`', 'F');
    expect(tokens.map((t) => [isOpen(t), isClose(t)])).toEqual([
      [true, false],
      [false, false],
      [false, true],
      [false, false],
    ]);
    const [fromEnv] = tokenize('{$B}', 'F').tokens;
    if (fromEnv === undefined) throw new Error('no token');
    fromEnv.text = '{';
    expect(isOpen(fromEnv)).toBe(false);
  });

  it('ignores a byte order mark', () => {
    const { tokens } = tokenize('\uFEFFa.test {', 'F');
    expect(tokens.map((t) => [t.text, t.column])).toEqual([
      ['a.test', 1],
      ['{', 8],
    ]);
  });

  it('tracks the end line of a multi-line quoted token', () => {
    const { tokens } = tokenize('"a\nb" c', 'F');
    expect(tokens.map((t) => [t.line, t.endLine])).toEqual([
      [1, 2],
      [2, 2],
    ]);
  });

  it('rejects an unterminated quote at its opening', () => {
    try {
      tokenize('x\n  "abc', 'F');
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(ProxyfileError);
      expect((err as ProxyfileError).code).toBe(ProxyfileErrorCode.UNTERMINATED_QUOTE);
      expect((err as ProxyfileError).message).toMatch(/^F:2:3: /);
    }
  });
});

describe('suggestions', () => {
  it('counts edits, swaps included, and suggests only close names', () => {
    expect(editDistance('reverse_proxy', 'reverse_prxoy')).toBe(1);
    expect(nearest('hadle', ['handle', 'header'])).toBe('handle');
    expect(nearest('completely_else', ['handle', 'header'])).toBeNull();
  });
});
