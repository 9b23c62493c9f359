import { describe, expect, it } from 'vitest';
import { isLocalName } from './local-name.js';

describe('isLocalName', () => {
  it.each([
    ['localhost', true],
    ['LOCALHOST.', true],
    ['app.localhost', true],
    ['*.localhost', true],
    ['*.app.localhost', true],
    ['printer.local', true],
    ['db.internal', true],
    ['nas.home.arpa', true],
    ['home.arpa', true],
    ['site.test', true],
    ['www.example', true],
    ['x.invalid', true],
    ['myhost', true],
    ['127.0.0.1', true],
    ['10.1.2.3', true],
    ['::1', true],
    ['[::1]', true],
    ['fe80::1', true],
    ['example.com', false],
    ['*.example.com', false],
    ['localhost.com', false],
    ['test.example.org', false],
    ['my.local.dev', false],
    ['arpa.home', false],
    ['notlocal', true],
    ['proxyd.io', false],
    ['', false],
  ])('%j → %s', (name, expected) => {
    expect(isLocalName(name)).toBe(expected);
  });
});
