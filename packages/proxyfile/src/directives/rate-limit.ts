import { parseRate } from '@proxyd/model';
import { ProxyfileErrorCode } from '../errors.js';
import type { Directive } from './directive.js';

const EXPECTED = 'a rate of the form <n>/s (requests per second per client IP), e.g. 100/s';

/**
 * ```
 * rate_limit <n>/s
 * ```
 * Per-client-IP limit for the whole site, in requests per second (the
 * model's `parseRate`: n a whole number ≥ 1 without a leading zero).
 */
export const rateLimit: Directive = {
  name: 'rate_limit',
  scope: 'site',
  once: true,
  parse(d, state) {
    const t = d.arg(EXPECTED);
    const rate = parseRate(t.text);
    if (!rate.ok) throw d.unexpected(t, EXPECTED, ProxyfileErrorCode.INVALID_RATE_LIMIT);
    d.end();
    d.noBlock();
    state.site.rate_limit = rate.value;
  },
};
