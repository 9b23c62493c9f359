import type { IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import { emptySite } from '@proxyd/model';
import { describe, expect, it } from 'vitest';
import type { RequestContext } from '../hooks.js';
import { HeaderPlan } from './header-plan.js';
import { compileMatchers } from './request-matcher.js';

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

describe('HeaderPlan with placeholders and matchers (issue 21)', () => {
  const site = emptySite([{ scheme: null, host: 'a.test', port: null }]);
  const ctx = (secure: boolean): RequestContext => ({
    domain: 'a.test',
    host: 'a.test',
    path: '/x',
    clientIp: '192.0.2.1',
    secure,
    site,
  });
  const req = (headers: IncomingMessage['headers'] = {}) =>
    ({ method: 'GET', url: '/x?q=1', headers, socket: { remoteAddress: '192.0.2.1' } }) as IncomingMessage;

  it('a static plan hands out its precompiled edit: no work per request', () => {
    const plan = new HeaderPlan([{ op: 'set', name: 'X-A', value: '{not-a-placeholder}' }]);
    expect(plan.dynamic).toBe(false);
    expect(plan.editFor(req(), ctx(false))).toBe(plan.plain);
    expect(plan.editFor(req(), ctx(true))).toBe(plan.secure);
  });

  it('fills placeholders per request and applies an op only where its matcher matches', () => {
    const matchers = compileMatchers({
      frame: { path: null, method: null, header: [{ name: 'X-Frame', values: ['*'] }] },
    });
    const plan = new HeaderPlan(
      [
        { op: 'set', name: 'X-Uri', value: '{host}{uri}' },
        { op: 'set', name: 'X-Frame-Options', value: 'DENY', matcher: 'frame' },
      ],
      matchers,
    );
    expect(plan.dynamic).toBe(true);
    const matched: OutgoingHttpHeaders = {};
    plan.editFor(req({ 'x-frame': '1' }), ctx(true))(matched, 200);
    expect(matched).toMatchObject({ 'x-uri': 'a.test/x?q=1', 'x-frame-options': 'DENY' });
    expect(matched['strict-transport-security']).toBe('max-age=31536000');
    // Not matched: the default X-Frame-Options stays (a conditional op does not decide it).
    const other: OutgoingHttpHeaders = {};
    plan.editFor(req(), ctx(false))(other, 200);
    expect(other).toEqual({
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'SAMEORIGIN',
      'x-uri': 'a.test/x?q=1',
    });
  });
});
