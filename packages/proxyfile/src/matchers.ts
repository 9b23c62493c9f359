import type { HeaderMatch, RequestMatcher } from '@proxyd/model';
import type { Dispenser } from './dispenser.js';
import { ProxyfileErrorCode } from './errors.js';
import { show, type Token } from './lexer.js';
import { checkPathPattern } from './path-pattern.js';
import { nearest } from './suggest.js';
import { checkHeaderName } from './values.js';

/** The matcher types a named matcher may hold. */
const TYPES = ['path', 'header', 'method'];
/** Caddy's other matchers: named in the message, not supported. */
const CADDY_TYPES = new Set([
  'client_ip',
  'expression',
  'file',
  'header_regexp',
  'host',
  'not',
  'path_regexp',
  'protocol',
  'query',
  'remote_ip',
  'vars',
  'vars_regexp',
]);
const NAME = /^@[^\s{}@]+$/;
const METHOD = /^[A-Za-z]+$/;

/** A site's named matchers: name (without @) → its definition and where it was written. */
export type MatcherDefinitions = Map<string, { matcher: RequestMatcher; at: Token }>;

/** Whether a line is a matcher definition (`@name …`): an unquoted name starting with @. */
export function isMatcherLine(d: Dispenser): boolean {
  return !d.name.quoted && d.name.text.startsWith('@');
}

/**
 * ```
 * @name path <pattern>...           # any of /exact, /prefix/*, *.suffix, *
 * @name method <METHOD>...          # any of
 * @name header <field> <value>...   # any value: exact, prefix*, *suffix, *substring*, * (present)
 * @name header !<field>             # the header is absent
 * @name {                           # every line must hold (Caddy's rule)
 *     path /api/*
 *     method POST PUT
 * }
 * ```
 * Reads one definition into `defs`: a name defined twice is an error.
 */
export function defineMatcher(d: Dispenser, defs: MatcherDefinitions): void {
  const nameToken = d.name;
  if (!NAME.test(nameToken.text)) {
    throw d.unexpected(nameToken, 'a matcher name after "@" (no spaces or braces)', ProxyfileErrorCode.INVALID_VALUE);
  }
  const name = nameToken.text.slice(1);
  const first = defs.get(name);
  if (first) {
    throw d.error(
      nameToken,
      ProxyfileErrorCode.DUPLICATE_DIRECTIVE,
      `matcher "@${name}" is already defined at ${first.at.file}:${first.at.line}:${first.at.column} (write every condition in one "@${name} { … }" block)`,
    );
  }
  const matcher: RequestMatcher = { path: null, method: null, header: [] };
  if (d.hasBlock()) {
    d.end();
    const lines = d.blockLines();
    if (lines.length === 0) throw d.missing('at least one condition (path, header or method) in the block');
    for (const sub of lines) readCondition(sub, sub.name, matcher);
  } else {
    const type = d.nextArg();
    if (type === null) throw d.missing('a condition (path, header or method) or "{" to open a matcher block');
    readCondition(d, type, matcher);
  }
  defs.set(name, { matcher, at: nameToken });
}

/** Reads `<type> <args…>` (the dispenser is just past `type`) into the matcher. */
function readCondition(d: Dispenser, type: Token, matcher: RequestMatcher): void {
  d.noBlock();
  switch (type.text) {
    case 'path': {
      const args = d.remainingArgs();
      if (args.length === 0) throw d.missing('a path pattern such as /api/*');
      const paths = matcher.path ?? [];
      for (const t of args) {
        const p = checkPathPattern(d, t);
        if (!paths.includes(p)) paths.push(p);
      }
      matcher.path = paths;
      return;
    }
    case 'method': {
      const args = d.remainingArgs();
      if (args.length === 0) throw d.missing('a request method such as GET');
      const methods = matcher.method ?? [];
      for (const t of args) {
        if (!METHOD.test(t.text))
          throw d.unexpected(t, 'a request method such as GET', ProxyfileErrorCode.INVALID_VALUE);
        const m = t.text.toUpperCase();
        if (!methods.includes(m)) methods.push(m);
      }
      matcher.method = methods;
      return;
    }
    case 'header': {
      const field = d.arg('a header name, or !<name> for a header that must be absent');
      const rest = d.remainingArgs();
      const values = rest.map((t) => t.text);
      const absent = field.text.startsWith('!');
      const headerName = absent ? field.text.slice(1) : field.text;
      checkHeaderName(d, field, headerName);
      if (absent && rest[0] !== undefined) {
        throw d.unexpected(
          rest[0],
          `the end of the line (${field.text} matches a request without that header and takes no value)`,
        );
      }
      if (!absent && values.length === 0) {
        throw d.missing(`a value of ${headerName} to match (* for any value), or !${headerName} for an absent header`);
      }
      addHeader(matcher.header, { name: headerName, values: absent ? null : values });
      return;
    }
    default: {
      if (CADDY_TYPES.has(type.text)) {
        throw d.error(
          type,
          ProxyfileErrorCode.UNKNOWN_DIRECTIVE,
          `matcher ${show(type)} is not supported (Caddy has it; proxyd matches on ${TYPES.join(', ')})`,
        );
      }
      const near = nearest(type.text, TYPES);
      throw d.unexpected(
        type,
        `a matcher condition${near ? ` (did you mean "${near}"?)` : ''}: ${TYPES.join(', ')}`,
        ProxyfileErrorCode.UNKNOWN_DIRECTIVE,
      );
    }
  }
}

/** Adds a header condition; a field named twice with values takes the values of both (Caddy merges them). */
function addHeader(list: HeaderMatch[], match: HeaderMatch): void {
  const lower = match.name.toLowerCase();
  const same = list.find((h) => h.name.toLowerCase() === lower && h.values !== null);
  if (same !== undefined && match.values !== null && same.values !== null) {
    for (const v of match.values) if (!same.values.includes(v)) same.values.push(v);
    return;
  }
  list.push(match);
}

/**
 * Reads a `@name` matcher argument when the line's next argument is one
 * (Caddy's `<directive> @name …`); null when it is not. A name the site
 * does not define is `PROXYFILE_UNKNOWN_MATCHER`, with the nearest
 * defined name suggested.
 */
export function readMatcherRef(d: Dispenser, defined: ReadonlyMap<string, Token>): string | null {
  const t = d.peekArg();
  if (t === null || t.quoted || !t.text.startsWith('@')) return null;
  d.nextArg();
  const name = t.text.slice(1);
  if (!defined.has(name)) {
    const near = nearest(name, defined.keys());
    const names = [...defined.keys()].map((n) => `@${n}`);
    throw d.error(
      t,
      ProxyfileErrorCode.UNKNOWN_MATCHER,
      `unknown matcher ${show(t)}${near ? `, did you mean "@${near}"?` : ''} (${
        names.length === 0 ? 'this site defines no matcher' : `defined: ${names.join(', ')}`
      }; define it in the site block: @${name} path|header|method …)`,
    );
  }
  return name;
}
