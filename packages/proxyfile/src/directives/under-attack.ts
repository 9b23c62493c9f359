import { UNDER_ATTACK_MAX_DIFFICULTY } from '@proxyd/model';
import { ProxyfileErrorCode } from '../errors.js';
import type { Directive } from './directive.js';

/** Each bit doubles the visitor's work; past 20 the page takes minutes (proxy-core README, `under_attack`). */
const EXPECTED_DIFFICULTY = `a difficulty from 1 to ${UNDER_ATTACK_MAX_DIFFICULTY} (leading zero bits; each one doubles the visitor's work)`;

/**
 * ```
 * under_attack [on|off] [{
 *     difficulty <n>       # leading zero bits of the proof of work, 1-20 (default 16)
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
      const v = sub.arg(EXPECTED_DIFFICULTY);
      const n = /^\d{1,2}$/.test(v.text) ? Number(v.text) : 0;
      if (n < 1 || n > UNDER_ATTACK_MAX_DIFFICULTY) {
        throw sub.unexpected(v, EXPECTED_DIFFICULTY, ProxyfileErrorCode.INVALID_VALUE);
      }
      sub.end();
      sub.noBlock();
      state.site.under_attack.difficulty = n;
    }
  },
};
