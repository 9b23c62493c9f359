import type { Dispenser } from './dispenser.js';
import { ProxyfileErrorCode } from './errors.js';
import type { Token } from './lexer.js';

/** A path pattern: `/exact`, `/prefix/*`, `*.suffix` or `*`. */
export function checkPathPattern(d: Dispenser, t: Token): string {
  const p = t.text;
  const ok =
    p === '*' ||
    (p.startsWith('/') && !p.slice(0, -1).includes('*')) ||
    (p.startsWith('*') && !p.slice(1).includes('*'));
  if (!ok) {
    throw d.unexpected(t, 'a path pattern: /exact, /prefix/* or *.suffix', ProxyfileErrorCode.INVALID_VALUE);
  }
  return p;
}
