import { SITE_DIRECTIVES, SITE_STEP_ORDER } from '@proxyd/model';
import { describe, expect, it } from 'vitest';
import { DIRECTIVE_BY_NAME, DIRECTIVES } from './index.js';

describe('DIRECTIVES', () => {
  it('is proxy-core’s site directive order: every directive maps to a step, in the same order', () => {
    expect(DIRECTIVES.map((d) => d.name)).toEqual(SITE_DIRECTIVES.map((d) => d.name));
    const parsers = new Set([...DIRECTIVE_BY_NAME.values()].map((d) => d.name));
    expect([...parsers].sort()).toEqual(DIRECTIVES.map((d) => d.name).sort());
  });

  it('lists the steps in SITE_STEP_ORDER', () => {
    const ranks = SITE_DIRECTIVES.map((d) => SITE_STEP_ORDER.indexOf(d.step));
    expect(ranks.every((rank) => rank >= 0)).toBe(true);
    expect(ranks).toEqual([...ranks].sort((a, b) => a - b));
  });
});
