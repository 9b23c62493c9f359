import type { HeaderMatch, MatcherConditions, QueryMatch, RequestMatcher } from '@proxyd/model';
import { type Parsed, parseDomain, parseHost } from '@proxyd/model';
import type { BlockState } from './directives/directive.js';
import type { Dispenser } from './dispenser.js';
import { ProxyfileErrorCode } from './errors.js';
import { show, type Token } from './lexer.js';
import { checkPathPattern } from './path-pattern.js';
import { nearest } from './suggest.js';
import { checkHeaderName, isCidr, PRIVATE_RANGES } from './values.js';

/** The matcher types a named matcher may hold. */
const TYPES = [
  'path',
  'header',
  'method',
  'host',
  'query',
  'not',
  'path_regexp',
  'header_regexp',
  'client_ip',
  'remote_ip',
];
/** Caddy's other matchers: named in the message, not supported. */
const CADDY_TYPES = new Set(['expression', 'file', 'protocol', 'vars', 'vars_regexp']);
const NAME = /^@[^\s{}@]+$/;
const METHOD = /^[A-Za-z]+$/;
/** A regexp matcher's name: what `{re.<name>.1}` can spell. */
const REGEXP_NAME = /^[A-Za-z0-9_-]+$/;

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
 * @name host <host>...              # any of; *.example.com: one label
 * @name query <key>=<value>...      # every key, any of its values (* any)
 * @name path_regexp [<name>] <re>   # captures: {re.<name>.1}
 * @name header_regexp [<name>] <field> <re>
 * @name client_ip <range>...        # the client after trusted_proxies; private_ranges
 * @name remote_ip <range>...        # the connection's peer
 * @name not <condition>             # or `not { … }`: every line of it must not all hold
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
    if (lines.length === 0) throw d.missing('at least one condition (path, header, method, …) in the block');
    for (const sub of lines) readCondition(sub, sub.name, matcher);
  } else {
    const type = d.nextArg();
    if (type === null) throw d.missing('a condition (path, header, method, …) or "{" to open a matcher block');
    readCondition(d, type, matcher);
  }
  defs.set(name, { matcher, at: nameToken });
}

/** Reads `<type> <args…>` (the dispenser is just past `type`) into the matcher. */
function readCondition(d: Dispenser, type: Token, matcher: RequestMatcher): void {
  if (type.text === 'not') {
    const set: MatcherConditions = { path: null, method: null, header: [] };
    if (d.hasBlock()) {
      d.end();
      const lines = d.blockLines();
      if (lines.length === 0) throw d.missing('at least one condition in the not block');
      for (const sub of lines) readSetCondition(sub, sub.name, set, true);
    } else {
      const inner = d.nextArg();
      if (inner === null) throw d.missing('a condition to negate (not path /admin/*), or "{" to open a block');
      readSetCondition(d, inner, set, true);
    }
    matcher.not ??= [];
    matcher.not.push(set);
    return;
  }
  readSetCondition(d, type, matcher, false);
}

/** Reads one condition into a matcher set; `negated`: inside `not` (which does not nest). */
function readSetCondition(d: Dispenser, type: Token, set: MatcherConditions, negated: boolean): void {
  d.noBlock();
  switch (type.text) {
    case 'path': {
      const args = d.remainingArgs();
      if (args.length === 0) throw d.missing('a path pattern such as /api/*');
      const paths = set.path ?? [];
      for (const t of args) {
        const p = checkPathPattern(d, t);
        if (!paths.includes(p)) paths.push(p);
      }
      set.path = paths;
      return;
    }
    case 'method': {
      const args = d.remainingArgs();
      if (args.length === 0) throw d.missing('a request method such as GET');
      const methods = set.method ?? [];
      for (const t of args) {
        if (!METHOD.test(t.text))
          throw d.unexpected(t, 'a request method such as GET', ProxyfileErrorCode.INVALID_VALUE);
        const m = t.text.toUpperCase();
        if (!methods.includes(m)) methods.push(m);
      }
      set.method = methods;
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
      addHeader(set.header, { name: headerName, values: absent ? null : values });
      return;
    }
    case 'host': {
      const args = d.remainingArgs();
      if (args.length === 0) throw d.missing('a host such as example.com or *.example.com');
      const hosts = set.host ?? [];
      for (const t of args) {
        const parsed: Parsed<string> = t.text === '*' ? { ok: true, value: '*' } : hostPattern(t.text);
        if (!parsed.ok) {
          throw d.unexpected(
            t,
            `a host name, *.name (one label) or an IP address (${t.text} ${parsed.problem})`,
            ProxyfileErrorCode.INVALID_VALUE,
          );
        }
        if (!hosts.includes(parsed.value)) hosts.push(parsed.value);
      }
      set.host = hosts;
      return;
    }
    case 'query': {
      const args = d.remainingArgs();
      if (args.length === 0) throw d.missing('a <key>=<value> pair (value * for any)');
      const query: QueryMatch[] = set.query ?? [];
      for (const t of args) {
        const eq = t.text.indexOf('=');
        if (eq <= 0) {
          throw d.unexpected(
            t,
            'a <key>=<value> pair (value * for any, empty for key=)',
            ProxyfileErrorCode.INVALID_VALUE,
          );
        }
        const key = t.text.slice(0, eq);
        const value = t.text.slice(eq + 1);
        const same = query.find((q) => q.name === key);
        if (same === undefined) query.push({ name: key, values: [value] });
        else if (!same.values.includes(value)) same.values.push(value);
      }
      set.query = query;
      return;
    }
    case 'path_regexp': {
      const args = d.remainingArgs();
      if (args.length === 0) throw d.missing('a regular expression (path_regexp [<name>] <regexp>)');
      if (args.length > 2) throw d.unexpected(args[2] as Token, 'the end of the line (path_regexp [<name>] <regexp>)');
      if (set.path_regexp !== undefined) {
        throw d.error(
          type,
          ProxyfileErrorCode.DUPLICATE_DIRECTIVE,
          "a matcher holds one path_regexp (Caddy's rule): join the expressions with | or define another matcher",
        );
      }
      const re = args[args.length - 1] as Token;
      set.path_regexp = { name: args.length === 2 ? regexpName(d, args[0] as Token) : '', pattern: checkRegexp(d, re) };
      return;
    }
    case 'header_regexp': {
      const args = d.remainingArgs();
      if (args.length < 2)
        throw d.missing('a header name and a regular expression (header_regexp [<name>] <field> <regexp>)');
      if (args.length > 3) {
        throw d.unexpected(args[3] as Token, 'the end of the line (header_regexp [<name>] <field> <regexp>)');
      }
      const field = args[args.length - 2] as Token;
      checkHeaderName(d, field, field.text);
      const list = set.header_regexp ?? [];
      if (list.some((h) => h.field.toLowerCase() === field.text.toLowerCase())) {
        throw d.error(
          field,
          ProxyfileErrorCode.DUPLICATE_DIRECTIVE,
          `a matcher holds one header_regexp per field (Caddy's rule): ${field.text} is already matched`,
        );
      }
      list.push({
        field: field.text,
        name: args.length === 3 ? regexpName(d, args[0] as Token) : '',
        pattern: checkRegexp(d, args[args.length - 1] as Token),
      });
      set.header_regexp = list;
      return;
    }
    case 'client_ip':
    case 'remote_ip': {
      const args = d.remainingArgs();
      if (args.length === 0) throw d.missing('IP addresses or ranges (CIDR), or private_ranges');
      const ranges = set[type.text] ?? [];
      for (const t of args) {
        if (t.text === 'forwarded' && type.text === 'remote_ip') {
          throw d.unexpected(
            t,
            "an IP range: remote_ip is the connection's peer; for the X-Forwarded-For client, set trusted_proxies and use client_ip",
            ProxyfileErrorCode.INVALID_VALUE,
          );
        }
        const add = t.text === 'private_ranges' ? PRIVATE_RANGES : isCidr(t.text) ? [t.text] : null;
        if (add === null) {
          throw d.unexpected(
            t,
            'an IP address or a range in CIDR form (e.g. 10.0.0.0/8), or private_ranges',
            ProxyfileErrorCode.INVALID_VALUE,
          );
        }
        for (const r of add) if (!ranges.includes(r)) ranges.push(r);
      }
      set[type.text] = ranges;
      return;
    }
    default: {
      if (type.text === 'not' && negated) {
        throw d.error(
          type,
          ProxyfileErrorCode.UNEXPECTED_TOKEN,
          '"not" does not nest: write the condition itself (not not x is x)',
        );
      }
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

/** A `host` matcher entry: a domain (`*.x` allowed) or an IP, lowercase. */
function hostPattern(text: string): Parsed<string> {
  const lower = text.toLowerCase();
  return lower.startsWith('*.') ? parseDomain(lower) : parseHost(lower);
}

/** A regexp matcher's explicit name (letters, digits, _ and -: what a placeholder can spell). */
function regexpName(d: Dispenser, t: Token): string {
  if (!REGEXP_NAME.test(t.text)) {
    throw d.unexpected(
      t,
      'a name of letters, digits, _ or - (used as {re.<name>.1})',
      ProxyfileErrorCode.INVALID_VALUE,
    );
  }
  return t.text;
}

/** A regular expression that compiles (JavaScript's syntax, close to Go's RE2 for what matchers use). */
function checkRegexp(d: Dispenser, t: Token): string {
  d.nonEmpty(t, 'a regular expression');
  try {
    new RegExp(t.text);
  } catch (err) {
    throw d.unexpected(
      t,
      `a regular expression (${(err as Error).message.replace(/^Invalid regular expression: /, '')})`,
      ProxyfileErrorCode.INVALID_VALUE,
    );
  }
  return t.text;
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
      }; define it in the site block: @${name} path|header|host|… …)`,
    );
  }
  return name;
}

/**
 * Caddy's matcher token, for the directives that take one: `@name`, `*`
 * (every request: no matcher), or a path pattern (`/api/*`), which becomes
 * a site matcher named `~<pattern>` holding that path (one per pattern,
 * shared). Null when the line has none.
 */
export function readMatcherToken(d: Dispenser, state: BlockState): string | null {
  const named = readMatcherRef(d, state.matchers);
  if (named !== null) return named;
  const t = d.peekArg();
  if (t === null || t.quoted) return null;
  if (t.text === '*') {
    d.nextArg();
    return null;
  }
  if (!t.text.startsWith('/')) return null;
  d.nextArg();
  const path = checkPathPattern(d, t);
  if (/[\s{}@]/.test(path)) {
    throw d.unexpected(
      t,
      'a path pattern without braces or @ (define a named matcher for it)',
      ProxyfileErrorCode.INVALID_VALUE,
    );
  }
  const name = `~${path}`;
  state.site.matchers ??= {};
  state.site.matchers[name] ??= { path: [path], method: null, header: [] };
  return name;
}
