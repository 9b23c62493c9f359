import { ProxyfileErrorCode } from '../errors.js';
import type { Directive } from './directive.js';

const EXPECTED = 'a rate of the form <n>/s (requests per second per client IP), e.g. 100/s';

/**
 * ```
 * rate_limit <n>/s
 * ```
 * Per-client-IP limit for the whole site, in requests per second (n ≥ 1).
 */
export const rateLimit: Directive = {
  name: 'rate_limit',
  scope: 'site',
  once: true,
  parse(d, state) {
    const t = d.arg(EXPECTED);
    const m = /^(\d{1,9})\/s$/.exec(t.text);
    const n = m ? Number(m[1]) : 0;
    if (n < 1) throw d.unexpected(t, EXPECTED, ProxyfileErrorCode.INVALID_RATE_LIMIT);
    d.end();
    d.noBlock();
    state.site.rate_limit = n;
  },
};
