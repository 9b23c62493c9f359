import type { IncomingMessage } from 'node:http';
import type { Redirect } from '@proxyd/model';
import type { RequestContext } from '../hooks.js';
import { PathPattern } from './path-pattern.js';
import { Template } from './placeholders.js';
import { matcherOf, type RequestMatch } from './request-matcher.js';

const NO_MATCHERS: ReadonlyMap<string, RequestMatch> = new Map();

/**
 * `redir [<from>|@name] <to> <status>`, compiled once. `to` may hold
 * `{http.request.uri.path.remainder}` (the path after the literal prefix of
 * `from`, e.g. `/old/*` and `/old/a/b` give `a/b`; the whole path without a
 * `from`) and the request placeholders (`{uri}` — path and query —,
 * `{path}`, `{query}` without `?`, `{host}`, `{remote_host}`, and Caddy's
 * long forms). Other `{…}` text is kept as written. The query string is not
 * carried over unless `to` says so.
 */
export class CompiledRedirect {
  readonly pattern: PathPattern;
  readonly status: Redirect['status'];
  /** `redir @name …`: the site matcher that must match too (null: none). */
  readonly match: RequestMatch | null;
  readonly #to: string;
  /** The target's placeholders (null: `#to` as is, no work per request). */
  readonly #template: Template | null;

  constructor(redirect: Redirect, matchers: ReadonlyMap<string, RequestMatch> = NO_MATCHERS) {
    this.pattern = new PathPattern(redirect.from);
    this.status = redirect.status;
    this.match = matcherOf(matchers, redirect.matcher);
    this.#to = redirect.to;
    this.#template = Template.of(redirect.to, true);
  }

  /** The Location for a request this redirect matched. */
  location(req: IncomingMessage, ctx: RequestContext): string {
    if (this.#template === null) return this.#to;
    return this.#template.render(req, ctx, this.pattern);
  }
}
