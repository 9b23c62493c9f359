import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { routeHash } from './route-hash.js';

const route = fc.record({
  domain: fc.domain().map((d) => d.toLowerCase()),
  upstream: fc.tuple(fc.ipV4(), fc.integer({ min: 1, max: 65535 })).map(([h, p]) => `${h}:${p}`),
  tls: fc.boolean(),
});
const routeSet = fc.uniqueArray(route, { selector: (r) => r.domain, maxLength: 30 });

describe('routeHash', () => {
  it('matches the documented definition (sha256 of source line + sorted route lines)', () => {
    const expected = createHash('sha256')
      .update('ctrl-a\na.test 127.0.0.1:80 false\nb.test [::1]:443 true\n')
      .digest('hex');
    expect(
      routeHash('ctrl-a', [
        { domain: 'b.test', upstream: '[::1]:443', tls: true },
        { domain: 'a.test', upstream: '127.0.0.1:80', tls: false },
      ]),
    ).toBe(expected);
    expect(routeHash('ctrl-a', [])).toBe(createHash('sha256').update('ctrl-a\n').digest('hex'));
  });

  it('is the same for the same set in any order', () => {
    fc.assert(
      fc.property(
        fc.string(),
        routeSet.chain((set) => fc.tuple(fc.constant(set), fc.shuffledSubarray(set, { minLength: set.length }))),
        (source, [set, shuffled]) => {
          expect(routeHash(source, shuffled)).toBe(routeHash(source, set));
        },
      ),
    );
  });

  it('differs when the source, a domain, an upstream or tls differs', () => {
    fc.assert(
      fc.property(
        routeSet.filter((s) => s.length > 0),
        fc.nat(),
        (set, pick) => {
          const i = pick % set.length;
          const base = routeHash('s', set);
          const at = set[i] as (typeof set)[number];
          expect(routeHash('t', set)).not.toBe(base);
          const flip = set.map((r, j) => (j === i ? { ...r, tls: !r.tls } : r));
          expect(routeHash('s', flip)).not.toBe(base);
          const moved = set.map((r, j) => (j === i ? { ...r, upstream: `${at.upstream}0` } : r));
          expect(routeHash('s', moved)).not.toBe(base);
          expect(routeHash('s', set.slice(0, i).concat(set.slice(i + 1)))).not.toBe(base);
        },
      ),
    );
  });
});
