import type { HandleBlock } from '@proxyd/model';
import type { Dispenser } from '../dispenser.js';
import { ProxyfileErrorCode } from '../errors.js';
import { quoteText, type Token } from '../lexer.js';
import { readMatcherRef } from '../matchers.js';
import { checkPathPattern } from '../path-pattern.js';
import { type BlockState, type Directive, nestedBlockState } from './directive.js';

function compileHandle(kind: HandleBlock['kind'], d: Dispenser, state: BlockState): void {
  let pattern: Token | null = null;
  const matcherAt = d.peekArg();
  const matcher = readMatcherRef(d, state.matchers);
  if (matcher !== null && kind === 'handle_path') {
    throw d.unexpected(
      matcherAt as Token,
      'a path prefix such as /api/* (handle_path strips the prefix it matched; use handle @name for a named matcher)',
      ProxyfileErrorCode.INVALID_VALUE,
    );
  }
  const arg = matcher === null ? d.nextArg() : null;
  if (arg !== null) pattern = arg;
  if (kind === 'handle_path' && pattern === null) throw d.missing('a path pattern such as /api/*');
  d.end();
  const path = pattern === null ? null : checkPathPattern(d, pattern);
  if (kind === 'handle_path' && pattern !== null && !pattern.text.startsWith('/')) {
    throw d.unexpected(
      pattern,
      'a path prefix such as /api/* (handle_path strips the prefix it matched)',
      ProxyfileErrorCode.INVALID_VALUE,
    );
  }
  if (!d.hasBlock()) throw d.missing(`"{" to open the ${kind} block`);
  const key = matcher !== null ? `@${matcher}` : path === null || path === '*' ? '' : path;
  const where = matcherAt !== null && matcher !== null ? matcherAt : (pattern ?? d.name);
  const first = state.handlePatterns.get(key);
  if (first) {
    throw d.error(
      where,
      ProxyfileErrorCode.DUPLICATE_DIRECTIVE,
      key === ''
        ? `a fallback handle block (no pattern, or *) already exists at ${first.file}:${first.line}:${first.column}`
        : `a handle block for ${quoteText(key)} already exists at ${first.file}:${first.line}:${first.column}`,
    );
  }
  state.handlePatterns.set(key, where);
  const block: HandleBlock = {
    kind,
    path,
    ...(matcher === null ? {} : { matcher }),
    header: [],
    basic_auth: null,
    redirects: [],
    handler: null,
  };
  state.compileBlock(d.blockLines(), nestedBlockState(state, block));
  state.site.handles.push(block);
}

/**
 * ```
 * handle [<path-pattern>|@name] {
 *     <directives...>
 * }
 * ```
 * Routes by path: `/exact`, `/prefix/*`, `*.suffix`, or by a named matcher.
 * The most specific pattern wins, then `handle @name` blocks (ranked by
 * their matcher's first path, else after every pattern) in file order; a
 * `handle` without either is the fallback. Blocks do not nest; site-level
 * directives (header, basic_auth, redir) apply first.
 */
export const handle: Directive = {
  name: 'handle',
  scope: 'site',
  once: false,
  parse: (d, state) => compileHandle('handle', d, state),
};

/**
 * ```
 * handle_path <path-pattern> {
 *     <directives...>
 * }
 * ```
 * Like `handle`, but strips the matched prefix (`/api/*` → `/api`) before
 * the upstream sees the request.
 */
export const handlePath: Directive = {
  name: 'handle_path',
  scope: 'site',
  once: false,
  parse: (d, state) => compileHandle('handle_path', d, state),
};
