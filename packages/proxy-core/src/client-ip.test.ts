import net from 'node:net';
import fc from 'fast-check';
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

describe('isTrusted agrees with net.BlockList', () => {
  it('over random IPv4 CIDRs and addresses, IPv4-mapped forms and malformed input', () => {
    const ipv4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((o) => o.join('.'));
    fc.assert(
      fc.property(
        fc.array(fc.tuple(ipv4, fc.integer({ min: 0, max: 32 })), { minLength: 1, maxLength: 4 }),
        fc.array(ipv4, { maxLength: 20 }),
        (cidrs, addresses) => {
          const resolver = new ClientIpResolver(cidrs.map(([a, p]) => `${a}/${p}`));
          const list = new net.BlockList();
          for (const [a, p] of cidrs) list.addSubnet(a, p, 'ipv4');
          for (const ip of addresses) {
            expect(resolver.isTrusted(ip)).toBe(list.check(ip, 'ipv4'));
            expect(resolver.isTrusted(`::ffff:${ip}`)).toBe(list.check(ip, 'ipv4'));
          }
        },
      ),
      { numRuns: 500 },
    );
    const resolver = new ClientIpResolver(['10.0.0.0/8', '::1']);
    for (const bad of ['10.0.0', '10.0.0.0.1', '010.0.0.1', '10.0.0.256', '10..0.1', '', 'x', '10.0.0.1 ']) {
      expect(resolver.isTrusted(bad), bad).toBe(false);
    }
    expect(resolver.isTrusted('::1')).toBe(true);
    expect(resolver.isTrusted('::2')).toBe(false);
  });
});
