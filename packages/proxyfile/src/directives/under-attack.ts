import { ProxyfileErrorCode } from '../errors.js';
import type { Directive } from './directive.js';

/**
 * ```
 * under_attack [on|off] [{
 *     difficulty <n>       # leading zero bits of the proof of work, 1-32 (default 16)
 * }]
 * ```
 * Challenge mode: browsers solve a proof of work before reaching the site.
 * A bare `under_attack` means `on`.
 */
export const underAttack: Directive = {
  name: 'under_attack',
  scope: 'site',
  once: true,
  parse(d, state) {
    const t = d.nextArg();
    if (t !== null && t.text !== 'on' && t.text !== 'off')
      throw d.unexpected(t, 'on or off', ProxyfileErrorCode.INVALID_VALUE);
    d.end();
    state.site.under_attack.enabled = t === null || t.text === 'on';
    let seen = false;
    for (const sub of d.blockLines()) {
      if (sub.name.text !== 'difficulty') {
        throw sub.unexpected(sub.name, 'an under_attack option (difficulty)', ProxyfileErrorCode.UNKNOWN_DIRECTIVE);
      }
      if (seen) throw sub.error(sub.name, ProxyfileErrorCode.DUPLICATE_DIRECTIVE, '"difficulty" is set twice');
      seen = true;
      const v = sub.arg('a difficulty (1-32)');
      const n = /^\d{1,2}$/.test(v.text) ? Number(v.text) : 0;
      if (n < 1 || n > 32) throw sub.unexpected(v, 'a difficulty (1-32)', ProxyfileErrorCode.INVALID_VALUE);
      sub.end();
      sub.noBlock();
      state.site.under_attack.difficulty = n;
    }
  },
};
