import type { ErrorHandleBlock } from '@proxyd/model';
import { ProxyfileErrorCode } from '../errors.js';
import { type Directive, nestedBlockState } from './directive.js';

const STATUS = /^[1-5](\d\d|xx)$/;

/**
 * ```
 * handle_errors [<status>...] {
 *     <directives...>
 * }
 * ```
 * Answers instead of an error proxyd produced in the site: 404 (no handler,
 * no file), 403 (file_server), 502/503/504 (reverse_proxy), `try_files
 * =<status>`. `<status>` is a code (`404`) or a class (`5xx`); without
 * any, every error. The first block whose statuses hold the error answers
 * it; `{err.status_code}`, `{err.status_text}`, `{err.message}` are filled,
 * `file_server` serves its page with the error's status and
 * `respond <body> {err.status_code}` answers with it. A status listed in
 * two blocks is an error; so is a second block without statuses.
 */
export const handleErrors: Directive = {
  name: 'handle_errors',
  scope: 'site',
  once: false,
  parse(d, state) {
    const statuses: string[] = [];
    for (const t of d.remainingArgs()) {
      if (!STATUS.test(t.text)) {
        throw d.unexpected(t, 'an error status such as 404, or a class such as 5xx', ProxyfileErrorCode.INVALID_VALUE);
      }
      const key = t.text.toLowerCase();
      const first = state.handlePatterns.get(`!error ${key}`);
      if (first !== undefined) {
        throw d.error(
          t,
          ProxyfileErrorCode.DUPLICATE_DIRECTIVE,
          `handle_errors for ${key} already exists at ${first.file}:${first.line}:${first.column}`,
        );
      }
      state.handlePatterns.set(`!error ${key}`, t);
      statuses.push(key);
    }
    if (statuses.length === 0) {
      const first = state.handlePatterns.get('!error');
      if (first !== undefined) {
        throw d.error(
          d.name,
          ProxyfileErrorCode.DUPLICATE_DIRECTIVE,
          `a handle_errors block for every error already exists at ${first.file}:${first.line}:${first.column}`,
        );
      }
      state.handlePatterns.set('!error', d.name);
    }
    if (!d.hasBlock()) throw d.missing('"{" to open the handle_errors block');
    const block: ErrorHandleBlock = { statuses, header: [], basic_auth: null, redirects: [], handler: null };
    state.compileBlock(d.blockLines(), nestedBlockState(state, block, true));
    state.site.handle_errors ??= [];
    state.site.handle_errors.push(block);
  },
};
