import { setHandler } from '../handler.js';
import { readMatcherToken } from '../matchers.js';
import type { Directive } from './directive.js';

/**
 * ```
 * abort [@name]
 * ```
 * Closes the connection without an answer (Caddy's `abort`): an HTTP/1
 * connection is closed, an HTTP/2 stream reset. With `@name`, only the
 * requests that matcher matches, before the block's `reverse_proxy`
 * (model `matched_responses`); without, the block's handler.
 */
export const abort: Directive = {
  name: 'abort',
  scope: 'any',
  once: false,
  parse(d, state) {
    const matcher = readMatcherToken(d, state);
    d.end();
    d.noBlock();
    if (matcher === null) {
      setHandler(d, state, { kind: 'abort' });
      return;
    }
    state.target.matched_responses ??= [];
    state.target.matched_responses.push({ matcher, handler: { kind: 'abort' } });
  },
};
