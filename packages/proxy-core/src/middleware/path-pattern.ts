import { posix } from 'node:path';

/**
 * A compiled path pattern of `handle`, `handle_path` and `redir`, matched as
 * Caddy's path matcher does, case-insensitively:
 *
 * - `/a`    exact: the path `/a` only;
 * - `/a/*`  prefix: `/a/` and everything below it (not `/a` itself); any
 *           pattern ending in `*` is a prefix of what precedes the `*`;
 * - `*.php` suffix: any path ending in `.php`;
 * - `*` or null: every path.
 */
export class PathPattern {
  /** 'exact' | 'prefix' | 'suffix' | 'any'. */
  readonly kind: 'exact' | 'prefix' | 'suffix' | 'any';
  /** The literal part, lowercase (the prefix without `*`, the suffix without `*`). */
  readonly literal: string;

  constructor(pattern: string | null) {
    if (pattern === null || pattern === '*' || pattern === '') {
      this.kind = 'any';
      this.literal = '';
    } else if (pattern.endsWith('*')) {
      this.kind = 'prefix';
      this.literal = pattern.slice(0, -1).toLowerCase();
    } else if (pattern.startsWith('*')) {
      this.kind = 'suffix';
      this.literal = pattern.slice(1).toLowerCase();
    } else {
      this.kind = 'exact';
      this.literal = pattern.toLowerCase();
    }
  }

  /** Whether `matchPath` (a {@link matchablePath}) matches. */
  matches(matchPath: string): boolean {
    switch (this.kind) {
      case 'exact':
        return matchPath === this.literal;
      case 'prefix':
        return matchPath.startsWith(this.literal);
      case 'suffix':
        return matchPath.endsWith(this.literal);
      default:
        return true;
    }
  }

  /**
   * How specific the pattern is, higher first: exact > longer prefix >
   * shorter prefix > suffix (longer first) > any.
   */
  specificity(): number {
    switch (this.kind) {
      case 'exact':
        return 3_000_000 + this.literal.length;
      case 'prefix':
        return 2_000_000 + this.literal.length;
      case 'suffix':
        return 1_000_000 + this.literal.length;
      default:
        return 0;
    }
  }

  /**
   * The part of `path` after the pattern's literal prefix (prefix patterns);
   * '' for exact patterns; the whole path otherwise. `path` is the raw
   * request path; when it matched only in its decoded, normalised form, the
   * remainder is taken from that form and percent-encoded again.
   */
  remainder(path: string): string {
    if (this.kind === 'exact') return '';
    if (this.kind !== 'prefix') return path;
    const n = this.literal.length;
    if (path.length >= n && path.slice(0, n).toLowerCase() === this.literal) return path.slice(n);
    const normal = normalisedPath(path);
    return encodeURI(normal.slice(Math.min(n, normal.length)));
  }
}

/**
 * The form of a request path that patterns are matched against: lowercase;
 * when it holds `%`, `//` or a dot segment, percent-decoded and normalised
 * first, so that `/%61dmin/x` or `//admin/./x` cannot slip past a
 * `handle /admin/*` that carries `basic_auth`.
 */
export function matchablePath(path: string): string {
  if (path.indexOf('%') < 0 && path.indexOf('//') < 0 && path.indexOf('/.') < 0) return path.toLowerCase();
  return normalisedPath(path).toLowerCase();
}

function normalisedPath(path: string): string {
  let decoded = path;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    // A malformed escape is matched as written.
  }
  const normal = posix.normalize(decoded);
  return normal.startsWith('/') ? normal : `/${normal}`;
}
