import type { IncomingMessage } from 'node:http';
import type { HeaderMatch, RequestMatcher } from '@proxyd/model';
import type { RequestContext } from '../hooks.js';
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

/**
 * A named matcher (`@name …`), compiled once: every condition it sets must
 * hold, as in Caddy. `path`: any pattern (as `handle` matches them, on the
 * decoded, normalised, lowercase path); `method`: any method, exactly;
 * `header`: each field, any of its values (a field Node received on
 * several lines is matched as Node joins it, `a, b`).
 */
export class RequestMatch {
  readonly #paths: readonly PathPattern[] | null;
  readonly #methods: ReadonlySet<string> | null;
  readonly #headers: readonly HeaderTest[];
  /** The specificity of its first path pattern (handle order, as Caddy sorts), else 1: after every path pattern. */
  readonly specificity: number;

  constructor(matcher: RequestMatcher) {
    this.#paths = matcher.path === null ? null : matcher.path.map((p) => new PathPattern(p));
    this.#methods = matcher.method === null ? null : new Set(matcher.method);
    this.#headers = matcher.header.map(headerTest);
    this.specificity = this.#paths?.[0]?.specificity() || 1;
  }

  /** Whether the request matches; `mp` is its {@link matchablePath} when the caller has it. */
  matches(req: IncomingMessage, ctx: RequestContext, mp?: string): boolean {
    if (this.#methods !== null && !this.#methods.has(req.method ?? '')) return false;
    for (const test of this.#headers) if (!headerMatches(test, req)) return false;
    if (this.#paths === null) return true;
    const path = mp ?? matchablePath(ctx.path);
    for (const pattern of this.#paths) if (pattern.matches(path)) return true;
    return false;
  }
}

/** Matches nothing: a reference to a matcher the site does not define (only a bad route source writes one). */
export const NO_MATCH = new RequestMatch({ path: null, method: [], header: [] });

/** The site's named matchers, compiled, by name. */
export function compileMatchers(
  matchers: Readonly<Record<string, RequestMatcher>> | undefined,
): ReadonlyMap<string, RequestMatch> {
  const out = new Map<string, RequestMatch>();
  if (matchers !== undefined) for (const [name, m] of Object.entries(matchers)) out.set(name, new RequestMatch(m));
  return out;
}

/** The compiled matcher `name` refers to (null: no matcher; unknown name: {@link NO_MATCH}). */
export function matcherOf(matchers: ReadonlyMap<string, RequestMatch>, name: string | undefined): RequestMatch | null {
  if (name === undefined) return null;
  return matchers.get(name) ?? NO_MATCH;
}
