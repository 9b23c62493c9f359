import { describe, expect, it } from 'vitest';
import { StoreError } from './errors.js';
import { formatUpstream, parseUpstream } from './upstream.js';

describe("parseUpstream (the model's host:port rule)", () => {
  it.each([
    ['127.0.0.1:8080', { host: '127.0.0.1', port: 8080 }],
    ['App.Test:443', { host: 'app.test', port: 443 }],
    ['my_app:3000', { host: 'my_app', port: 3000 }],
    ['[::1]:9000', { host: '::1', port: 9000 }],
    ['[2001:DB8::1]:65535', { host: '2001:db8::1', port: 65535 }],
  ])('accepts %s', (text, address) => {
    expect(parseUpstream(text)).toEqual(address);
    expect(parseUpstream(formatUpstream(address))).toEqual(address);
  });

  it.each([
    'nope',
    'h:0',
    'h:65536',
    'h:080',
    '::1:80',
    '[::1]',
    'http://h:80',
    'a..b:80',
    '-a:80',
    '[fe80::1%eth0]:80',
    '',
  ])('refuses %j with STORE_INVALID_UPSTREAM and the same message', (text) => {
    let err: unknown;
    try {
      parseUpstream(text);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(StoreError);
    expect(err).toMatchObject({
      code: 'STORE_INVALID_UPSTREAM',
      message: `invalid upstream address "${text}", expected host:port`,
    });
  });
});
