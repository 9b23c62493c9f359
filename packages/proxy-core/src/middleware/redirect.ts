import type { Redirect } from '../model/index.js';
import { PathPattern } from './path-pattern.js';

/** Placeholders `redir` expands in its target. */
const PLACEHOLDERS = {
  '{http.request.uri.path.remainder}': 1,
  '{uri}': 2,
  '{path}': 3,
  '{query}': 4,
  '{host}': 5,
} as const;

type Part = string | 1 | 2 | 3 | 4 | 5;

/** What a redirect target may refer to. */
export interface RedirectInput {
  /** Raw request path (no query). */
  readonly path: string;
  /** Raw query string without `?` ('' when none). */
  readonly query: string;
  /** Request host without port. */
  readonly host: string;
}

/**
 * `redir <from> <to> <status>`, compiled once. `to` may hold
 * `{http.request.uri.path.remainder}` (the path after the literal prefix of
 * `from`, e.g. `/old/*` and `/old/a/b` give `a/b`), `{uri}` (path and query),
 * `{path}`, `{query}` (without `?`) and `{host}`. Unknown `{…}` text is kept
 * as written. The query string is not carried over unless `to` says so.
 */
export class CompiledRedirect {
  readonly pattern: PathPattern;
  readonly status: Redirect['status'];
  readonly #parts: readonly Part[];
  /** The target when it holds no placeholder (no work per request). */
  readonly #fixed: string | null;

  constructor(redirect: Redirect) {
    this.pattern = new PathPattern(redirect.from);
    this.status = redirect.status;
    const parts: Part[] = [];
    let rest = redirect.to;
    for (;;) {
      let at = -1;
      let which: keyof typeof PLACEHOLDERS | null = null;
      for (const key of Object.keys(PLACEHOLDERS) as (keyof typeof PLACEHOLDERS)[]) {
        const i = rest.indexOf(key);
        if (i >= 0 && (at < 0 || i < at)) {
          at = i;
          which = key;
        }
      }
      if (which === null) {
        if (rest !== '') parts.push(rest);
        break;
      }
      if (at > 0) parts.push(rest.slice(0, at));
      parts.push(PLACEHOLDERS[which]);
      rest = rest.slice(at + which.length);
    }
    this.#parts = parts;
    this.#fixed = parts.every((p) => typeof p === 'string') ? parts.join('') : null;
  }

  /** The Location for a request this redirect matched. */
  location(input: RedirectInput): string {
    if (this.#fixed !== null) return this.#fixed;
    let out = '';
    for (const part of this.#parts) {
      switch (part) {
        case 1:
          out += this.pattern.remainder(input.path);
          break;
        case 2:
          out += input.query === '' ? input.path : `${input.path}?${input.query}`;
          break;
        case 3:
          out += input.path;
          break;
        case 4:
          out += input.query;
          break;
        case 5:
          out += input.host;
          break;
        default:
          out += part;
      }
    }
    return out;
  }
}
