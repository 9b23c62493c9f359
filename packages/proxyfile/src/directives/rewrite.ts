import type { Dispenser } from '../dispenser.js';
import type { Token } from '../lexer.js';
import { readMatcherRef } from '../matchers.js';
import { checkPathPattern } from '../path-pattern.js';
import { checkPlaceholders } from '../placeholders.js';
import type { BlockState, Directive } from './directive.js';

/** Where a rewrite applies: a path pattern (null: every path) and an optional named matcher. */
export interface RewriteScope {
  path: string | null;
  matcher?: string;
}

/**
 * Reads Caddy's matcher token when the line has one: `@name`, `*`, or a path
 * pattern (`/api/*`, `*.php`) when `isMatcher` says the token is one (the
 * caller knows from the arguments that follow).
 */
export function readScope(d: Dispenser, state: BlockState, isMatcher: (t: Token) => boolean): RewriteScope {
  const matcher = readMatcherRef(d, state.matchers);
  if (matcher !== null) return { path: null, matcher };
  const t = d.peekArg();
  if (t === null || !isMatcher(t)) return { path: null };
  d.nextArg();
  const p = checkPathPattern(d, t);
  return { path: p === '*' ? null : p };
}

/**
 * ```
 * rewrite [<path>|*|@name] <to>
 * ```
 * Changes the request's target before it is handled: `<to>` is a path,
 * with `?query` to replace the query (without `?`, the query is kept; `?…`
 * alone keeps the path). Request placeholders are filled per request
 * (`rewrite * /index.php?p={path}&{query}`). In one block the first
 * matching rewrite applies (Caddy: rewrites of a block are mutually
 * exclusive); `handle` then routes by the new path. The client never sees
 * it (see `redir` for that).
 */
export const rewrite: Directive = {
  name: 'rewrite',
  scope: 'any',
  once: false,
  parse(d, state) {
    // Two arguments: the first is the matcher (`rewrite /old /new`).
    const scope = readScope(d, state, () => d.argsLeft() === 2);
    const to = d.nonEmptyArg('the new path (rewrite [<matcher>] <to>)');
    d.end();
    d.noBlock();
    checkPlaceholders(to, 'the rewrite target');
    state.target.rewrites ??= [];
    state.target.rewrites.push({ ...scope, to: to.text });
  },
};
