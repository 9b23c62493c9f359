import * as net from 'node:net';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isIPv4, isIPv6 } from './ip.js';

// The model's IP rules must answer as Node's did when the model imported node:net:
// every host and bind address rule (parseHost, parseBindAddress) goes through them.

const samples = [
  '',
  '0.0.0.0',
  '127.0.0.1',
  '255.255.255.255',
  '256.0.0.1',
  '01.2.3.4',
  '1.2.3',
  '1.2.3.4.5',
  '1.2.3.',
  '::',
  '::1',
  ':::',
  '1::',
  '1:2:3:4:5:6:7:8',
  '1:2:3:4:5:6:7::',
  '1:2:3:4:5:6:7:8::',
  '::1:2:3:4:5:6:7',
  '::1:2:3:4:5:6:7:8',
  '1::2::3',
  '::ffff:127.0.0.1',
  '::127.0.0.1',
  '1:2:3:4:5:6:1.2.3.4',
  '1:2:3:4:5:6:7:1.2.3.4',
  '1:2:3:4:5::1.2.3.4',
  '1.2.3.4::',
  '1.2.3.4::1',
  '::1.2.3.4:1',
  'fe80::1',
  'FE80::ABCD',
  '12345::',
  'g::1',
  ':1',
  '1:',
  '1:2:3:4:5:6:7:8:9',
  '2001:db8::0:1',
];

describe('isIPv4 and isIPv6 answer as node:net', () => {
  it.each(samples)('%j', (text) => {
    expect(isIPv4(text)).toBe(net.isIPv4(text));
    expect(isIPv6(text)).toBe(net.isIPv6(text));
  });

  it('for any text of address characters (no zone)', () => {
    const char = fc.constantFrom(...'0123456789abcdefABCDEF:.'.split(''), '1', ':', '.');
    const text = fc.oneof(
      fc.string({ unit: char, maxLength: 45 }),
      // Near-valid shapes: groups joined by one or two colons, an optional dotted quad at the end.
      fc
        .tuple(
          fc.array(fc.stringMatching(/^[0-9a-f]{0,5}$/), { minLength: 1, maxLength: 9 }),
          fc.array(fc.constantFrom(':', '::'), { minLength: 8, maxLength: 8 }),
          fc.option(fc.ipV4(), { nil: undefined }),
        )
        .map(([groups, seps, v4]) => {
          let out = '';
          groups.forEach((g, i) => {
            out += g + (i < groups.length - 1 ? seps[i] : '');
          });
          return v4 === undefined ? out : `${out}:${v4}`;
        }),
      fc.ipV4(),
      fc.ipV6(),
      fc.ipV4Extended(),
    );
    fc.assert(
      fc.property(text, (t) => {
        expect(isIPv4(t)).toBe(net.isIPv4(t));
        expect(isIPv6(t)).toBe(net.isIPv6(t));
      }),
      { numRuns: 20_000 },
    );
  });
});
