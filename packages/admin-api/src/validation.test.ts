import { describe, expect, it } from 'vitest';
import { domainProblem, normalizeDomain } from './domain.js';
import { sourceProblem } from './source.js';
import { upstreamProblem } from './upstream.js';

describe('domain validation', () => {
  it.each([
    'example.com',
    'a.b.c.example',
    '*.example.com',
    '*.com',
    'localhost',
    'x-1.example',
    `${'a'.repeat(63)}.example`,
    '127.0.0.1',
    // Issue 15: one domain rule for every source; DNS names and the Proxyfile allow "_".
    'a_b.example',
    '_acme-challenge.example',
  ])('accepts %s', (d) => expect(domainProblem(d)).toBeUndefined());
  it.each([
    '',
    '*',
    '*.',
    'a..b',
    '.a',
    'a.',
    '-a.example',
    'a-.example',
    'a.*.example',
    '**.example',
    `${'a'.repeat(64)}.example`,
    'é.example',
    'a b',
  ])('rejects %j', (d) => expect(domainProblem(d)).toBeTypeOf('string'));
  it('253 characters is the maximum', () => {
    const d253 = `${'a'.repeat(61)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(63)}`;
    expect(d253.length).toBe(253);
    expect(domainProblem(d253)).toBeUndefined();
    expect(domainProblem(`a${d253}`)).toMatch(/longer than 253/);
  });
  it('lowercases', () => expect(normalizeDomain('*.Example.COM')).toBe('*.example.com'));
});

describe('upstream validation', () => {
  it.each([
    '127.0.0.1:80',
    'localhost:1',
    'backend.internal:65535',
    '[::1]:8080',
    '[2001:db8::1]:443',
    'Host-1.Example:3000',
    'my_app:8080',
  ])('accepts %s', (u) => expect(upstreamProblem(u)).toBeUndefined());
  it.each([
    '',
    'h',
    'h:',
    ':80',
    'h:0',
    'h:65536',
    'h:080',
    'h:+80',
    'h:8 0',
    '::1:80',
    '[::1]',
    '[zz]:80',
    '[::1:80',
    'http://h:80',
    'h/x:80',
    'a..b:80',
    '-h:80',
    '[fe80::1%eth0]:80',
  ])('rejects %j', (u) => expect(upstreamProblem(u)).toBeTypeOf('string'));
});

describe('source validation', () => {
  it('accepts visible ASCII up to 128 characters', () => {
    expect(sourceProblem('k8s/ingress@node-1')).toBeUndefined();
    expect(sourceProblem('x'.repeat(128))).toBeUndefined();
  });
  it.each(['', 'a b', 'x'.repeat(129), 'tab\there', 'ünï'])('rejects %j', (s) =>
    expect(sourceProblem(s)).toBeTypeOf('string'),
  );
});
