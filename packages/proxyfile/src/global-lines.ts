import type { Dispenser } from './dispenser.js';
import { ProxyfileErrorCode } from './errors.js';
import type { Token } from './lexer.js';
import { nearest } from './suggest.js';

/** An option's one value on its own line: no more arguments, no block. */
export function single(d: Dispenser, expected: string): Token {
  const t = d.nonEmptyArg(expected);
  d.end();
  d.noBlock();
  return t;
}

/** Where each value of a repeatable option was first set, keyed `<option> <value>`. */
export type Seen = Map<string, Token>;

/** One sub-option line of a block: its name once, known, then its one value. */
export function blockValue(
  sub: Dispenser,
  option: string,
  known: readonly string[],
  once: Seen,
  expected: string,
): Token {
  const name = sub.name;
  if (!known.includes(name.text)) {
    const near = nearest(name.text, known);
    throw sub.unexpected(
      name,
      `${option} option${near ? ` (did you mean "${near}"?)` : ''}: ${known.join(', ')}`,
      ProxyfileErrorCode.UNKNOWN_DIRECTIVE,
    );
  }
  const first = once.get(name.text);
  if (first) {
    throw sub.error(
      name,
      ProxyfileErrorCode.DUPLICATE_DIRECTIVE,
      `"${name.text}" is already set at ${first.file}:${first.line}:${first.column}`,
    );
  }
  once.set(name.text, name);
  return single(sub, expected);
}

/** The option's one value, which must be one of `values`; otherwise an error naming them and the nearest. */
export function oneOf<T extends string>(d: Dispenser, what: string, values: readonly T[], hint = ''): T {
  const list = values.join(', ');
  const t = single(d, `${what}: ${list}`);
  const value = values.find((v) => v === t.text);
  if (value !== undefined) return value;
  const near = hint === '' ? nearest(t.text, values) : null;
  throw d.unexpected(
    t,
    `${what}${near ? ` (did you mean "${near}"?)` : ''}: ${list}${hint}`,
    ProxyfileErrorCode.INVALID_VALUE,
  );
}
