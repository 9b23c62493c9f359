import { ProxyfileErrorCode } from '../errors.js';
import { setHandler } from '../handler.js';
import type { Token } from '../lexer.js';
import { readMatcherToken } from '../matchers.js';
import { checkPlaceholders } from '../placeholders.js';
import type { Directive } from './directive.js';

const STATUS = /^[1-9]\d\d$/;

/**
 * ```
 * respond [@name] [<body>] [<status>]
 * ```
 * A fixed response. One argument that is a three-digit number is a status
 * with an empty body; otherwise the body, answered with 200 unless a status
 * follows; inside `handle_errors`, `{err.status_code}` as the status is the
 * error's. With `@name`, only the requests that matcher matches, before the
 * block's `reverse_proxy` (model `matched_responses`): `respond @denied 403`.
 */
export const respond: Directive = {
  name: 'respond',
  scope: 'any',
  once: false,
  parse(d, state) {
    const matcher = readMatcherToken(d, state);
    const args = d.remainingArgs();
    d.noBlock();
    if (args.length > 2) throw d.unexpected(args[2] as Token, 'the end of the line (respond [<body>] [<status>])');
    let body = '';
    let status = 200;
    const readStatus = (t: Token) => {
      if (!STATUS.test(t.text)) {
        const hint = t.text.startsWith('{err.') ? ' ({err.status_code} is a status inside handle_errors only)' : '';
        throw d.unexpected(t, `an HTTP status code (100-999)${hint}`, ProxyfileErrorCode.INVALID_VALUE);
      }
      return Number(t.text);
    };
    let errorStatus = false;
    if (args.length === 2) {
      body = (args[0] as Token).text;
      const st = args[1] as Token;
      if (state.errorRoute === true && (st.text === '{err.status_code}' || st.text === '{http.error.status_code}')) {
        errorStatus = true;
      } else status = readStatus(st);
    } else if (args.length === 1) {
      const t = args[0] as Token;
      if (!t.quoted && STATUS.test(t.text)) status = Number(t.text);
      else body = t.text;
    }
    if (args.length > 0) checkPlaceholders(args[0] as Token, 'response body');
    const handler = { kind: 'respond' as const, body, status, ...(errorStatus ? { error_status: true as const } : {}) };
    if (matcher === null) setHandler(d, state, handler);
    else {
      state.target.matched_responses ??= [];
      state.target.matched_responses.push({ matcher, handler });
    }
  },
};
