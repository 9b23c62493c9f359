import type { HeaderOp } from '@proxyd/model';
import type { Dispenser } from '../dispenser.js';
import { ProxyfileErrorCode } from '../errors.js';
import { show, type Token } from '../lexer.js';
import { readMatcherRef } from '../matchers.js';
import { checkPlaceholders } from '../placeholders.js';
import { checkHeaderName } from '../values.js';
import type { Directive } from './directive.js';

/**
 * One header operation from a field token and its value token:
 * `Name value` sets, `+Name value` adds a value, `-Name` removes the header.
 */
function headerOp(d: Dispenser, field: Token, value: Token | null, matcher: string | null = null): HeaderOp {
  const op = headerOpOf(d, field, value);
  return matcher === null ? op : { ...op, matcher };
}

function headerOpOf(d: Dispenser, field: Token, value: Token | null): HeaderOp {
  const first = field.text[0];
  if (first === '-') {
    const name = field.text.slice(1);
    checkHeaderName(d, field, name);
    if (value !== null)
      throw d.unexpected(value, `the end of the line ("-${name}" removes the header and takes no value)`);
    return { op: 'delete', name };
  }
  const add = first === '+';
  const name = add ? field.text.slice(1) : field.text;
  checkHeaderName(d, field, name);
  if (value === null) {
    throw d.missing(`a value for ${name} (or write -${name} to remove the header)`);
  }
  checkPlaceholders(value, `the value of ${name}`);
  return { op: add ? 'add' : 'set', name, value: value.text };
}

/** Reads `[+|-]<name> [<value>]` from the arguments of the dispenser's line (used by header and header_up). */
export function readHeaderOp(d: Dispenser): HeaderOp[] {
  const field = d.arg('a header name ([+|-]<name> [<value>])');
  const value = d.nextArg();
  const extra = d.peekArg();
  if (extra) throw d.unexpected(extra, 'the end of the line (quote a header value that holds spaces)');
  d.noBlock();
  return [headerOp(d, field, value)];
}

/**
 * ```
 * header [@name] [+|-]<name> [<value>]
 * header [@name] {
 *     <name> <value>      # set (replaces a default security header too)
 *     +<name> <value>     # add a value
 *     -<name>             # remove (also a default security header)
 * }
 * ```
 * Response headers, applied after the default security headers
 * (Strict-Transport-Security, X-Content-Type-Options, X-Frame-Options).
 * Values may hold request placeholders (`{host}`, …); with `@name`, the
 * ops apply only to requests the matcher matches.
 */
export const header: Directive = {
  name: 'header',
  scope: 'any',
  once: false,
  parse(d, state) {
    const ops: HeaderOp[] = [];
    const matcher = readMatcherRef(d, state.matchers);
    if (d.peekArg() !== null) {
      const field = d.arg('a header name');
      const value = d.nextArg();
      const extra = d.peekArg();
      if (extra) throw d.unexpected(extra, 'the end of the line (quote a header value that holds spaces)');
      if (d.hasBlock()) {
        throw d.unexpected(
          (d.line.block as { open: Token }).open,
          'the end of the line (write either "header <name> <value>" or a header block)',
        );
      }
      ops.push(headerOp(d, field, value, matcher));
    } else if (!d.hasBlock()) {
      throw d.missing('a header name or "{" to open a header block');
    }
    for (const sub of d.blockLines()) {
      const value = sub.nextArg();
      const extra = sub.peekArg();
      if (extra) throw sub.unexpected(extra, 'the end of the line (quote a header value that holds spaces)');
      if (sub.hasBlock()) {
        throw sub.error(
          (sub.line.block as { open: Token }).open,
          ProxyfileErrorCode.UNEXPECTED_TOKEN,
          `unexpected "{", expected the end of the line (header ${show(sub.name)} takes no block)`,
        );
      }
      ops.push(headerOp(sub, sub.name, value, matcher));
    }
    state.target.header.push(...ops);
  },
};
