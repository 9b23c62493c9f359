import { describe, expect, it } from 'vitest';
import { ClientIpResolver } from './client-ip.js';

describe('ClientIpResolver', () => {
  it('ignores X-Forwarded-For when no proxy is trusted', () => {
    expect(new ClientIpResolver([]).resolve('203.0.113.9', '1.2.3.4')).toBe('203.0.113.9');
  });

  it('ignores X-Forwarded-For from an untrusted peer', () => {
    const r = new ClientIpResolver(['10.0.0.0/8']);
    expect(r.resolve('203.0.113.9', '1.2.3.4')).toBe('203.0.113.9');
  });

  it('takes the rightmost untrusted hop from a trusted peer', () => {
    const r = new ClientIpResolver(['10.0.0.0/8', '::1']);
    expect(r.resolve('10.1.2.3', '1.2.3.4')).toBe('1.2.3.4');
    expect(r.resolve('::1', 'spoofed, 198.51.100.7, 10.9.9.9')).toBe('198.51.100.7');
    expect(r.resolve('::ffff:10.0.0.1', ['5.6.7.8'])).toBe('5.6.7.8');
  });

  it('stops at a malformed hop and keeps the last good address', () => {
    const r = new ClientIpResolver(['127.0.0.1']);
    expect(r.resolve('127.0.0.1', 'garbage')).toBe('127.0.0.1');
  });

  it('matches CIDR edges exactly', () => {
    const r = new ClientIpResolver(['192.168.4.0/22', '2001:db8::/32']);
    expect(r.isTrusted('192.168.7.255')).toBe(true);
    expect(r.isTrusted('192.168.8.0')).toBe(false);
    expect(r.isTrusted('2001:db8:ffff::1')).toBe(true);
    expect(r.isTrusted('2001:db9::1')).toBe(false);
  });

  it('rejects invalid entries', () => {
    expect(() => new ClientIpResolver(['10.0.0.0/33'])).toThrow(/invalid trusted_proxies/);
    expect(() => new ClientIpResolver(['nope'])).toThrow(/invalid trusted_proxies/);
  });
});
