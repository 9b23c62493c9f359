import type { OutgoingHttpHeaders } from 'node:http';
import { describe, expect, it } from 'vitest';
import { HeaderPlan } from './header-plan.js';

describe('HeaderPlan', () => {
  it('adds HSTS on HTTPS responses only', () => {
    const plan = new HeaderPlan([]);
    const plain: OutgoingHttpHeaders = {};
    const secure: OutgoingHttpHeaders = {};
    plan.edit(false)(plain, 200);
    plan.edit(true)(secure, 200);
    expect(plain).toEqual({ 'x-content-type-options': 'nosniff', 'x-frame-options': 'SAMEORIGIN' });
    expect(secure).toEqual({
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'SAMEORIGIN',
      'strict-transport-security': 'max-age=31536000',
    });
  });

  it('keeps a header the upstream set itself instead of the default', () => {
    const headers: OutgoingHttpHeaders = { 'x-frame-options': 'DENY' };
    new HeaderPlan([]).secure(headers, 200);
    expect(headers['x-frame-options']).toBe('DENY');
  });

  it('applies set, add and delete in order, case-insensitively, defaults included', () => {
    const plan = new HeaderPlan([
      { op: 'set', name: 'Strict-Transport-Security', value: 'max-age=60' },
      { op: 'delete', name: 'x-frame-options' },
      { op: 'add', name: 'Vary', value: 'Cookie' },
      { op: 'add', name: 'Link', value: '<a>' },
      { op: 'add', name: 'Link', value: '<b>' },
      { op: 'delete', name: 'Server' },
    ]);
    const headers: OutgoingHttpHeaders = { vary: 'Accept', server: 'upstream', 'x-frame-options': 'ALLOW' };
    plan.secure(headers, 200);
    expect(headers).toEqual({
      vary: ['Accept', 'Cookie'],
      link: ['<a>', '<b>'],
      'x-content-type-options': 'nosniff',
      'strict-transport-security': 'max-age=60',
    });
  });
});
