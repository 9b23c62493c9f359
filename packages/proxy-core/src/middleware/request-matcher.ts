import type { IncomingMessage } from 'node:http';
import type { HeaderMatch, MatcherConditions, QueryMatch, RequestMatcher } from '@proxyd/model';
import { ClientIpResolver } from '../client-ip.js';
import type { RequestContext } from '../hooks.js';
import { kCaptures } from '../slots.js';
import { matchablePath, PathPattern } from './path-pattern.js';

/** One accepted header value: exact, prefix (`x*`), suffix (`*x`), substring (`*x*`) or any (`*`). */
interface ValueTest {
  readonly kind: 0 | 1 | 2 | 3 | 4;
  readonly text: string;
}

/** One compiled header condition; `values: null` means the header must be absent. */
interface HeaderTest {
  readonly name: string;
  readonly values: readonly ValueTest[] | null;
}

/** One compiled regexp condition; `field` null: the path. */
interface RegexpTest {
  readonly name: string;
  readonly field: string | null;
  readonly re: RegExp;
}

/** What a request's regexp matchers captured: name → match (`''`: the last that matched). */
export type Captures = Map<string, RegExpExecArray>;

function valueTest(value: string): ValueTest {
  if (value === '*') return { kind: 4, text: '' };
  const head = value.startsWith('*');
  const tail = value.length > 1 && value.endsWith('*');
  if (head && tail) return { kind: 3, text: value.slice(1, -1) };
  if (head) return { kind: 2, text: value.slice(1) };
  if (tail) return { kind: 1, text: value.slice(0, -1) };
  return { kind: 0, text: value };
}

function valueMatches(test: ValueTest, value: string): boolean {
  switch (test.kind) {
    case 0:
      return value === test.text;
    case 1:
      return value.startsWith(test.text);
    case 2:
      return value.endsWith(test.text);
    case 3:
      return value.includes(test.text);
    default:
      return true;
  }
}

function headerTest(match: HeaderMatch): HeaderTest {
  return { name: match.name.toLowerCase(), values: match.values === null ? null : match.values.map(valueTest) };
}

function headerMatches(test: HeaderTest, req: IncomingMessage): boolean {
  const value = req.headers[test.name];
  if (test.values === null) return value === undefined;
  if (value === undefined) return false;
  if (typeof value === 'string') return anyValue(test.values, value);
  for (const line of value) if (anyValue(test.values, line)) return true;
  return false;
}

function anyValue(tests: readonly ValueTest[], value: string): boolean {
  for (const t of tests) if (valueMatches(t, value)) return true;
  return false;
}

/** `host`: exact, or `*.x` / `*` where `*` stands for exactly one label (Caddy's rule). */
function hostMatches(patterns: readonly string[], host: string): boolean {
  for (const p of patterns) {
    if (p === host) return true;
    if (p.charCodeAt(0) !== 42 /* * */) continue;
    const rest = p.slice(1);
    if (rest.length === 0) {
      if (host.length > 0 && host.indexOf('.') < 0) return true;
    } else if (host.endsWith(rest)) {
      const label = host.slice(0, host.length - rest.length);
      if (label.length > 0 && label.indexOf('.') < 0) return true;
    }
  }
  return false;
}

/** `query`: every key must have one of its values (`*`: present). Allocates only for sites that match on the query. */
function queryMatches(tests: readonly QueryMatch[], url: string): boolean {
  const q = url.indexOf('?');
  const params = new URLSearchParams(q < 0 ? '' : url.slice(q + 1));
  for (const t of tests) {
    const got = params.getAll(t.name);
    if (got.length === 0) return false;
    if (!t.values.some((v) => v === '*' || got.includes(v))) return false;
  }
  return true;
}

/** The path as decoded text for `path_regexp` (the client's bytes when they do not decode). */
function decodedPath(path: string): string {
  if (path.indexOf('%') < 0) return path;
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}

/** The connection peer's IP, an IPv4-mapped IPv6 address as IPv4. */
function peerIp(req: IncomingMessage): string {
  const ip = req.socket.remoteAddress ?? '';
  return ip.startsWith('::ffff:') && ip.indexOf('.') > 0 ? ip.slice(7) : ip;
}

/**
 * One matcher set, compiled: every condition it sets must hold. The
 * conditions a set does not use cost one null check each.
 */
class ConditionSet {
  readonly paths: readonly PathPattern[] | null;
  readonly #methods: ReadonlySet<string> | null;
  readonly #headers: readonly HeaderTest[];
  readonly #hosts: readonly string[] | null;
  readonly #query: readonly QueryMatch[] | null;
  readonly #clientIp: ClientIpResolver | null;
  readonly #remoteIp: ClientIpResolver | null;
  readonly #regexps: readonly RegexpTest[] | null;

  constructor(m: MatcherConditions, matcherName: string) {
    this.paths = m.path === null ? null : m.path.map((p) => new PathPattern(p));
    this.#methods = m.method === null ? null : new Set(m.method);
    this.#headers = m.header.map(headerTest);
    this.#hosts = m.host ?? null;
    this.#query = m.query ?? null;
    // A CIDR list is what trusted_proxies checks: one resolver's integer math, no allocation per request.
    this.#clientIp = m.client_ip === undefined ? null : new ClientIpResolver(m.client_ip);
    this.#remoteIp = m.remote_ip === undefined ? null : new ClientIpResolver(m.remote_ip);
    const regexps: RegexpTest[] = [];
    // Caddy 2.8: a regexp without a name takes its matcher's.
    const named = (n: string) => (n === '' && /^[A-Za-z0-9_-]+$/.test(matcherName) ? matcherName : n);
    if (m.path_regexp !== undefined) {
      regexps.push({ name: named(m.path_regexp.name), field: null, re: new RegExp(m.path_regexp.pattern) });
    }
    for (const h of m.header_regexp ?? []) {
      regexps.push({ name: named(h.name), field: h.field.toLowerCase(), re: new RegExp(h.pattern) });
    }
    this.#regexps = regexps.length === 0 ? null : regexps;
  }

  /**
   * Whether the request matches; with `capture`, the regexps' matches are
   * kept on the request for `{re.*}` placeholders when the whole set matched.
   */
  matches(req: IncomingMessage, ctx: RequestContext, mp: string | undefined, capture: boolean): boolean {
    if (this.#methods !== null && !this.#methods.has(req.method ?? '')) return false;
    if (this.#hosts !== null && !hostMatches(this.#hosts, ctx.host)) return false;
    if (this.#clientIp !== null && !this.#clientIp.isTrusted(ctx.clientIp)) return false;
    if (this.#remoteIp !== null && !this.#remoteIp.isTrusted(peerIp(req))) return false;
    for (const test of this.#headers) if (!headerMatches(test, req)) return false;
    if (this.paths !== null) {
      const path = mp ?? matchablePath(ctx.path);
      let any = false;
      for (const pattern of this.paths) {
        if (pattern.matches(path)) {
          any = true;
          break;
        }
      }
      if (!any) return false;
    }
    if (this.#query !== null && !queryMatches(this.#query, req.url ?? '')) return false;
    if (this.#regexps === null) return true;
    return this.#regexpsMatch(req, ctx, capture);
  }

  #regexpsMatch(req: IncomingMessage, ctx: RequestContext, capture: boolean): boolean {
    const found: [string, RegExpExecArray][] = [];
    for (const test of this.#regexps as readonly RegexpTest[]) {
      let subject: string;
      if (test.field === null) subject = decodedPath(ctx.path);
      else {
        const value = req.headers[test.field];
        if (value === undefined) return false;
        subject = typeof value === 'string' ? value : value.join(', ');
      }
      const m = test.re.exec(subject);
      if (m === null) return false;
      found.push([test.name, m]);
    }
    if (capture) {
      const slot = req as IncomingMessage & { [kCaptures]?: Captures };
      const captures = slot[kCaptures] ?? new Map<string, RegExpExecArray>();
      for (const [name, m] of found) {
        if (name !== '') captures.set(name, m);
        captures.set('', m);
      }
      slot[kCaptures] = captures;
    }
    return true;
  }
}

/**
 * A named matcher (`@name …`), compiled once: every condition it sets must
 * hold, as in Caddy, and none of its `not` sets may match. `path`: any
 * pattern (as `handle` matches them, on the decoded, normalised, lowercase
 * path); `method`: any method, exactly; `header`: each field, any of its
 * values (a field Node received on several lines is matched as Node joins
 * it, `a, b`); `host`: any host (`*` one label); `query`: every key, any
 * of its values; `client_ip`: the client after `trusted_proxies` in any
 * range; `remote_ip`: the connection's peer in any range; `path_regexp` /
 * `header_regexp`: the regexp finds a match (its captures are kept for
 * `{re.*}` placeholders).
 */
export class RequestMatch {
  readonly #set: ConditionSet;
  readonly #not: readonly ConditionSet[] | null;
  /** The specificity of its first path pattern (handle order, as Caddy sorts), else 1: after every path pattern. */
  readonly specificity: number;

  constructor(matcher: RequestMatcher, name = '') {
    this.#set = new ConditionSet(matcher, name);
    this.#not = matcher.not === undefined ? null : matcher.not.map((n) => new ConditionSet(n, ''));
    this.specificity = this.#set.paths?.[0]?.specificity() || 1;
  }

  /** Whether the request matches; `mp` is its {@link matchablePath} when the caller has it. */
  matches(req: IncomingMessage, ctx: RequestContext, mp?: string): boolean {
    if (this.#not !== null) for (const n of this.#not) if (n.matches(req, ctx, mp, false)) return false;
    return this.#set.matches(req, ctx, mp, true);
  }
}

/** What the regexp matchers that matched `req` captured (undefined: none). */
export function capturesOf(req: IncomingMessage): Captures | undefined {
  return (req as IncomingMessage & { [kCaptures]?: Captures })[kCaptures];
}

/** Matches nothing: a reference to a matcher the site does not define (only a bad route source writes one). */
export const NO_MATCH = new RequestMatch({ path: null, method: [], header: [] });

/** The site's named matchers, compiled, by name. */
export function compileMatchers(
  matchers: Readonly<Record<string, RequestMatcher>> | undefined,
): ReadonlyMap<string, RequestMatch> {
  const out = new Map<string, RequestMatch>();
  if (matchers !== undefined)
    for (const [name, m] of Object.entries(matchers)) out.set(name, new RequestMatch(m, name));
  return out;
}

/** The compiled matcher `name` refers to (null: no matcher; unknown name: {@link NO_MATCH}). */
export function matcherOf(matchers: ReadonlyMap<string, RequestMatch>, name: string | undefined): RequestMatch | null {
  if (name === undefined) return null;
  return matchers.get(name) ?? NO_MATCH;
}
