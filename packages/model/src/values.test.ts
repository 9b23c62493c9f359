import { describe, expect, it } from 'vitest';
import {
  parseDomain,
  parseHeaderName,
  parseHost,
  parseHostName,
  parseHostPort,
  parsePort,
  parseRate,
} from './values.js';

const d253 = `${'a'.repeat(61)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(63)}`;

describe('parseHostName', () => {
  it.each([
    ['example.com', 'example.com'],
    ['Example.COM', 'example.com'],
    ['localhost', 'localhost'],
    ['x-1.example', 'x-1.example'],
    // Issue 15: underscores are valid in DNS names, as Caddy accepts them.
    ['a_b.test', 'a_b.test'],
    ['_acme-challenge.a.test', '_acme-challenge.a.test'],
    ['my_app', 'my_app'],
    ['127.0.0.1', '127.0.0.1'],
    [`${'a'.repeat(63)}.example`, `${'a'.repeat(63)}.example`],
    [d253, d253],
  ])('accepts %j as %j', (text, value) => expect(parseHostName(text)).toEqual({ ok: true, value }));
  it.each([
    ['', 'is empty'],
    ['a..b', 'has an empty label'],
    ['.a', 'has an empty label'],
    ['a.', 'has an empty label'],
    ['-a.example', 'has a label "-a" that is not letters, digits, "-" or "_" (or starts or ends with "-")'],
    ['a-.example', 'has a label "a-" that is not letters, digits, "-" or "_" (or starts or ends with "-")'],
    ['é.example', 'has a character outside ASCII (write an internationalized name in its xn-- form)'],
    // U+212A KELVIN SIGN lowercases to "k": refused as written, never taken for kelvin.test.
    ['\u212Aelvin.test', 'has a character outside ASCII (write an internationalized name in its xn-- form)'],
    ['\u0130stanbul.test', 'has a character outside ASCII (write an internationalized name in its xn-- form)'],
    ['a b', 'has a label "a b" that is not letters, digits, "-" or "_" (or starts or ends with "-")'],
    ['*.example', 'has a wildcard that is not a leading "*." label'],
    [`${'a'.repeat(64)}.example`, 'has a label longer than 63 characters'],
    [`a${d253}`, 'is longer than 253 characters'],
  ])('rejects %j: %s', (text, problem) => expect(parseHostName(text)).toEqual({ ok: false, problem }));
});

describe('parseDomain', () => {
  it.each([
    ['example.com', 'example.com'],
    ['*.Example.COM', '*.example.com'],
    ['*.com', '*.com'],
    ['*.a_b.test', '*.a_b.test'],
    ['127.0.0.1', '127.0.0.1'],
    [`*.${d253.slice(2)}`, `*.${d253.slice(2)}`],
  ])('accepts %j as %j', (text, value) => expect(parseDomain(text)).toEqual({ ok: true, value }));
  it.each([
    ['', 'is empty'],
    ['*', 'has a wildcard that is not a leading "*." label'],
    ['*.', 'has nothing after the wildcard'],
    ['**.example', 'has a wildcard that is not a leading "*." label'],
    ['a.*.example', 'has a wildcard that is not a leading "*." label'],
    ['*.*.example', 'has a wildcard that is not a leading "*." label'],
    ['*..example', 'has an empty label'],
    [`*.${d253}`, 'is longer than 253 characters'],
  ])('rejects %j: %s', (text, problem) => expect(parseDomain(text)).toEqual({ ok: false, problem }));
});

describe('parseHost', () => {
  it.each([
    ['Backend.Internal', 'backend.internal'],
    ['10.0.0.1', '10.0.0.1'],
    ['[::1]', '::1'],
    ['[2001:DB8::1]', '2001:db8::1'],
    ['[::ffff:127.0.0.1]', '::ffff:127.0.0.1'],
    ['my_app', 'my_app'],
  ])('accepts %j as %j', (text, value) => expect(parseHost(text)).toEqual({ ok: true, value }));
  it.each([
    ['', 'is empty'],
    ['[zz]', 'is not an IPv6 address'],
    ['[::1', 'is not an IPv6 address'],
    ['[127.0.0.1]', 'is not an IPv6 address'],
    ['[fe80::1%eth0]', 'is not an IPv6 address'],
    ['::1', 'is an IPv6 address outside brackets (write e.g. [::1]:8080)'],
    ['*.a.test', 'has a wildcard that is not a leading "*." label'],
  ])('rejects %j: %s', (text, problem) => expect(parseHost(text)).toEqual({ ok: false, problem }));
});

describe('parsePort', () => {
  it.each([
    ['1', false, 1],
    ['80', false, 80],
    ['65535', false, 65535],
    ['0', true, 0],
    ['8080', true, 8080],
  ])('accepts %j (allowZero %s)', (text, allowZero, value) =>
    expect(parsePort(text, allowZero)).toEqual({ ok: true, value }),
  );
  it.each([
    ['0', false, 'is not 1-65535'],
    ['65536', false, 'is not 1-65535'],
    ['65536', true, 'is not 0-65535'],
    ['99999', false, 'is not 1-65535'],
    ['123456', false, 'is not 1-65535'],
    ['', false, 'is not 1-65535'],
    ['-1', false, 'is not 1-65535'],
    ['+80', false, 'is not 1-65535'],
    ['1e3', false, 'is not 1-65535'],
    ['8 0', false, 'is not 1-65535'],
    ['080', false, 'has a leading zero'],
    ['00', true, 'has a leading zero'],
  ])('rejects %j (allowZero %s): %s', (text, allowZero, problem) =>
    expect(parsePort(text, allowZero)).toEqual({ ok: false, problem }),
  );
});

describe('parseHostPort', () => {
  it.each([
    ['127.0.0.1:80', false, { host: '127.0.0.1', port: 80 }],
    ['localhost:1', false, { host: 'localhost', port: 1 }],
    ['Host-1.Example:3000', false, { host: 'host-1.example', port: 3000 }],
    ['my_app:8080', false, { host: 'my_app', port: 8080 }],
    ['[::1]:8080', false, { host: '::1', port: 8080 }],
    ['[2001:db8::1]:443', false, { host: '2001:db8::1', port: 443 }],
    ['127.0.0.1:0', true, { host: '127.0.0.1', port: 0 }],
    ['[::]:0', true, { host: '::', port: 0 }],
  ])('accepts %j (allowZero %s)', (text, allowZero, value) =>
    expect(parseHostPort(text, allowZero)).toEqual({ ok: true, value }),
  );
  it.each([
    ['', 'is empty'],
    ['h', 'is not host:port'],
    ['[::1]', 'has no port (expected host:port)'],
    ['[::1:80', 'is not host:port'],
    ['h:', 'has a port "" that is not 1-65535'],
    ['h:0', 'has a port "0" that is not 1-65535'],
    ['h:65536', 'has a port "65536" that is not 1-65535'],
    ['h:080', 'has a port "080" that has a leading zero'],
    ['h:+80', 'has a port "+80" that is not 1-65535'],
    [':80', 'has a host "" that is empty'],
    ['::1:80', 'has a host "::1" that is an IPv6 address outside brackets (write e.g. [::1]:8080)'],
    ['[zz]:80', 'has a host "[zz]" that is not an IPv6 address'],
    ['[fe80::1%eth0]:80', 'has a host "[fe80::1%eth0]" that is not an IPv6 address'],
    ['a..b:80', 'has a host "a..b" that has an empty label'],
    ['*.a.test:80', 'has a host "*.a.test" that has a wildcard that is not a leading "*." label'],
    ['http://h:80', 'is not host:port (no scheme or path)'],
    ['h/x:80', 'is not host:port (no scheme or path)'],
    [`${'a'.repeat(260)}:80`, 'is too long'],
  ])('rejects %j: %s', (text, problem) => expect(parseHostPort(text)).toEqual({ ok: false, problem }));
});

// Issue 20: "numeric upstream forms (`2130706433:80`, `127.1`, `0x7f.1`) are
// accepted". A host ending in a number is a dotted-quad IPv4 address or nothing.
describe('issue 20: numeric hosts other than a dotted quad', () => {
  const NOT_A_QUAD = 'ends in a number but is not a dotted-quad IPv4 address (four parts 0-255, no leading zeros)';
  it.each([
    '2130706433',
    '127.1',
    '127.0.1',
    '0x7f.1',
    '0x7f000001',
    '0X7F.0.0.1',
    '0177.0.0.1',
    '127.0.0.01',
    '127.0.0.0x1',
    '256.1.1.1',
    '1.2.3.4.5',
    'a.test.123',
    '0x',
  ])('refuses %j as the host of a socket address (an upstream, a listen address)', (text) => {
    expect(parseHost(text)).toEqual({ ok: false, problem: NOT_A_QUAD });
    expect(parseHostPort(`${text}:80`)).toEqual({
      ok: false,
      problem: `has a host ${JSON.stringify(text)} that ${NOT_A_QUAD}`,
    });
  });
  it.each([
    ['0.0.0.0:80', '0.0.0.0'],
    ['255.255.255.255:1', '255.255.255.255'],
    ['10.0.0.1:8080', '10.0.0.1'],
    ['1.2.3.4.nip.io:80', '1.2.3.4.nip.io'],
    ['0x7f.example:80', '0x7f.example'],
    ['123.test:80', '123.test'],
    ['[::ffff:127.0.0.1]:80', '::ffff:127.0.0.1'],
  ])('still accepts %j', (text, host) => expect(parseHostPort(text)).toMatchObject({ ok: true, value: { host } }));
  it.each(['127.1', 'a.test.123', '0'])('keeps %j a valid domain (a route matches the Host header literally)', (text) =>
    expect(parseDomain(text)).toEqual({ ok: true, value: text }),
  );
});

describe('parseRate', () => {
  it.each([
    ['1/s', 1],
    ['100/s', 100],
    ['999999999/s', 999_999_999],
  ])('accepts %j', (text, value) => expect(parseRate(text)).toEqual({ ok: true, value }));
  it.each(['', '0/s', '010/s', '100', '100/m', '1.5/s', '-1/s', '1000000000/s', ' 1/s', '1/S'])('rejects %j', (text) =>
    expect(parseRate(text)).toEqual({ ok: false, problem: 'is not <n>/s with n a whole number of at least 1' }),
  );
});

describe('parseHeaderName', () => {
  it.each(['X-Test', 'cache-control', "!#$%&'*+-.^_`|~09Az"])('accepts %j', (text) =>
    expect(parseHeaderName(text)).toEqual({ ok: true, value: text }),
  );
  it.each(['Bad Name', 'a:b', 'é', '(x)', 'a\tb'])('rejects %j', (text) =>
    expect(parseHeaderName(text)).toEqual({
      ok: false,
      problem: "is not a header name (letters, digits and !#$%&'*+-.^_`|~)",
    }),
  );
  it('rejects the empty name', () => expect(parseHeaderName('')).toEqual({ ok: false, problem: 'is empty' }));
});
