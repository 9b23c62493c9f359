import { ProxyfileErrorCode } from '../errors.js';
import type { Directive } from './directive.js';

/**
 * ```
 * analytics off|on
 * ```
 * First-party analytics and the script injection are on by default;
 * `analytics off` turns both off for the site.
 */
export const analytics: Directive = {
  name: 'analytics',
  scope: 'site',
  once: true,
  parse(d, state) {
    const t = d.arg('on or off');
    if (t.text !== 'on' && t.text !== 'off') throw d.unexpected(t, 'on or off', ProxyfileErrorCode.INVALID_VALUE);
    d.end();
    d.noBlock();
    state.site.analytics = t.text === 'on';
  },
};
