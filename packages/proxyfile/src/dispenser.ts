import { ProxyfileError, ProxyfileErrorCode } from './errors.js';
import { positionAfter, positionOf, show, type Token } from './lexer.js';
import { type Line, vanishedError } from './parser.js';

/**
 * The cursor directive code reads one line (and its block) with, after
 * Caddy's dispenser. Only the dispenser builds errors, so every error names
 * `file:line:column`, the token found and what was expected.
 */
export class Dispenser {
  /** The line read: its tokens (name first) and block. */
  readonly line: Line;
  #i = 0;

  constructor(line: Line) {
    this.line = line;
  }

  /** The directive (or option) name token. */
  get name(): Token {
    return this.line.tokens[0];
  }

  /** The token the cursor is on (the name before the first `nextArg`). */
  get current(): Token {
    return this.line.tokens[this.#i] as Token;
  }

  /** The next argument on the line, or null at the end of the line. */
  nextArg(): Token | null {
    const t = this.line.tokens[this.#i + 1];
    if (t === undefined) return null;
    this.#i++;
    return t;
  }

  /** The next argument without moving the cursor. */
  peekArg(): Token | null {
    return this.line.tokens[this.#i + 1] ?? null;
  }

  /** The next argument; throws `unexpected end of line after "x", expected <expected>` when there is none. */
  arg(expected: string): Token {
    const t = this.nextArg();
    if (t === null) throw this.missing(expected);
    return t;
  }

  /** How many arguments are left on the line (the cursor does not move). */
  argsLeft(): number {
    return this.line.tokens.length - 1 - this.#i;
  }

  /** Every argument left on the line. */
  remainingArgs(): Token[] {
    const rest = this.line.tokens.slice(this.#i + 1);
    this.#i = this.line.tokens.length - 1;
    return rest;
  }

  /** Throws when arguments are left on the line. */
  end(): void {
    const t = this.peekArg();
    if (t !== null) throw this.unexpected(t, `the end of the line (${this.name.text} takes no more arguments here)`);
  }

  /** Whether the line opens a block. */
  hasBlock(): boolean {
    return this.line.block !== null;
  }

  /** Throws when the line opens a block. */
  noBlock(): void {
    if (this.line.block) {
      throw this.unexpected(this.line.block.open, `the end of the line (${this.name.text} takes no block)`);
    }
  }

  /** A dispenser for each line of the block (none without a block). */
  blockLines(): Dispenser[] {
    return this.line.block ? this.line.block.lines.map((l) => new Dispenser(l)) : [];
  }

  /**
   * `unexpected end of line after "<last>", expected <expected>`, just after
   * the line's last token; or, when a `{$VAR}` of the line came out empty and
   * was dropped, `{$VAR} is not set (empty), expected <expected>` at the placeholder.
   */
  missing(expected: string, code: ProxyfileErrorCode = ProxyfileErrorCode.UNEXPECTED_END): ProxyfileError {
    const empty = this.line.vanished ? vanishedError(this.line.vanished, expected, code) : null;
    if (empty) return empty;
    const last = this.line.tokens[this.line.tokens.length - 1] as Token;
    return new ProxyfileError(
      code,
      positionAfter(last),
      `unexpected end of line after ${show(last)}, expected ${expected}`,
    );
  }

  /** `unexpected "<token>", expected <expected>` at the token. */
  unexpected(
    t: Token,
    expected: string,
    code: ProxyfileErrorCode = ProxyfileErrorCode.UNEXPECTED_TOKEN,
  ): ProxyfileError {
    return new ProxyfileError(code, positionOf(t), `unexpected ${show(t)}, expected ${expected}`);
  }

  /** Any other error at a token. */
  error(t: Token, code: ProxyfileErrorCode, detail: string): ProxyfileError {
    return new ProxyfileError(code, positionOf(t), detail);
  }

  /** The next argument, which must not be empty (`""`, or a quoted placeholder that came out empty). */
  nonEmptyArg(expected: string): Token {
    const t = this.arg(expected);
    this.nonEmpty(t, expected);
    return t;
  }

  /** Throws `unexpected empty value "", expected <expected>` (INVALID_VALUE) when the token is empty. */
  nonEmpty(t: Token, expected: string): void {
    if (t.text === '') {
      throw new ProxyfileError(
        ProxyfileErrorCode.INVALID_VALUE,
        positionOf(t),
        `unexpected empty value ${show(t)}, expected ${expected}`,
      );
    }
  }
}
