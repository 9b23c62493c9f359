import { describe, expect, it } from 'vitest';
import { containerMember, hasProxyLabels, type MemberContext, type MemberResult, nearestLabel } from './labels.js';
import { fakeContainer } from './runtime/fake-runtime.test-helpers.js';
import type { ContainerInfo } from './runtime/runtime.js';

const context: MemberContext = { defaultNetwork: null, ownNetworks: null };
const ref = { name: 'web', id: 'web000000000' };

/** The member of a container `web` on one bridge network (10.0.0.2) with these labels. */
function derive(labels: Record<string, string>, overrides: Partial<ContainerInfo> = {}): MemberResult {
  return containerMember(fakeContainer('web', labels, overrides), context);
}

/** The warnings of a result as `label: reason`. */
function warningsOf(result: MemberResult): string[] {
  return result.ok ? [] : result.warnings.map((w) => `${w.label}: ${w.reason}`);
}

describe('containerMember: valid labels', () => {
  const base = { 'proxy.domain': 'app.test', 'proxy.port': '8080' };
  const cases: Array<[string, Record<string, string>, Partial<ContainerInfo>, object]> = [
    ['domain and port', base, {}, { domains: ['app.test'], upstream: { host: '10.0.0.2', port: 8080 } }],
    [
      'domains separated by commas, lowercased, deduplicated',
      { ...base, 'proxy.domain': 'App.test, www.app.test,app.test' },
      {},
      { domains: ['app.test', 'www.app.test'] },
    ],
    ['a wildcard domain', { ...base, 'proxy.domain': '*.app.test' }, {}, { domains: ['*.app.test'] }],
    [
      'no proxy.port: the one exposed TCP port',
      { 'proxy.domain': 'app.test' },
      { exposedPorts: [3000] },
      { upstream: { host: '10.0.0.2', port: 3000 } },
    ],
    ['proxy.port wins over the exposed ports', base, { exposedPorts: [80, 443] }, { upstream: { port: 8080 } }],
    [
      'tls off, rate limit, headers (sorted by name)',
      {
        ...base,
        'proxy.tls': 'off',
        'proxy.rate_limit': '20/s',
        'proxy.header.X-Frame-Options': 'DENY',
        'proxy.header.Cache-Control': 'no-store, max-age=0',
      },
      {},
      {
        settings: {
          tls: 'off',
          rateLimit: 20,
          headers: [
            { op: 'set', name: 'Cache-Control', value: 'no-store, max-age=0' },
            { op: 'set', name: 'X-Frame-Options', value: 'DENY' },
          ],
        },
      },
    ],
    [
      'tls auto is the default, and may be written',
      { ...base, 'proxy.tls': 'auto' },
      {},
      { settings: { tls: 'auto' } },
    ],
    [
      'proxy.encode: codings in preference order, commas or spaces',
      { ...base, 'proxy.encode': 'zstd,br, gzip' },
      {},
      { settings: { tls: 'auto', rateLimit: null, headers: [], encode: ['zstd', 'br', 'gzip'] } },
    ],
    ['proxy.encode: one coding', { ...base, 'proxy.encode': 'gzip' }, {}, { settings: { encode: ['gzip'] } }],
    [
      'host network: loopback and the label port',
      base,
      { networkMode: 'host', networks: [] },
      { upstream: { host: '127.0.0.1', port: 8080 } },
    ],
    [
      'proxy.network picks the network',
      { ...base, 'proxy.network': 'front' },
      {
        networks: [
          { name: 'back', ipv4: '172.18.0.2', ipv6: '' },
          { name: 'front', ipv4: '172.19.0.2', ipv6: '' },
        ],
      },
      { upstream: { host: '172.19.0.2', port: 8080 } },
    ],
    ['health is carried to the pool', base, { health: 'unhealthy' }, { health: 'unhealthy' }],
    [
      'labels outside proxy.* are not read',
      { ...base, 'com.example.x': 'y', traefik_enable: 'true' },
      {},
      { domains: ['app.test'] },
    ],
  ];
  it.each(cases)('%s', (_name, labels, overrides, expected) => {
    const result = derive(labels, overrides);
    expect(warningsOf(result)).toEqual([]);
    expect(result).toMatchObject({ ok: true, member: { container: ref, ...expected } });
  });
});

describe('containerMember: invalid labels give warnings and no member (never half a route)', () => {
  const base = { 'proxy.domain': 'app.test', 'proxy.port': '8080' };
  const cases: Array<[string, Record<string, string>, Partial<ContainerInfo>, string[]]> = [
    [
      'no proxy.domain',
      { 'proxy.port': '8080' },
      {},
      ['proxy.domain: is missing: the container has proxy.* labels but no proxy.domain, so it is not routed'],
    ],
    ['an empty domain', { ...base, 'proxy.domain': ' ' }, {}, ['proxy.domain: is empty']],
    [
      'one bad domain among several',
      { ...base, 'proxy.domain': 'ok.test, bad..test' },
      {},
      ['proxy.domain: "bad..test" has an empty label'],
    ],
    [
      'an empty item between commas',
      { ...base, 'proxy.domain': 'a.test,,b.test' },
      {},
      ['proxy.domain: "a.test,,b.test" has an empty item between commas'],
    ],
    [
      'a URL instead of a domain',
      { ...base, 'proxy.domain': 'https://app.test' },
      {},
      [
        'proxy.domain: "https://app.test" has a label "https://app" that is not letters, digits, "-" or "_" (or starts or ends with "-")',
      ],
    ],
    ['port out of range', { ...base, 'proxy.port': '70000' }, {}, ['proxy.port: "70000" is not 1-65535']],
    ['port with a leading zero', { ...base, 'proxy.port': '080' }, {}, ['proxy.port: "080" has a leading zero']],
    [
      'no port and none exposed',
      { 'proxy.domain': 'app.test' },
      {},
      ['proxy.port: is missing and the container exposes no port: set proxy.port'],
    ],
    [
      'no port and several exposed',
      { 'proxy.domain': 'app.test' },
      { exposedPorts: [80, 443] },
      ['proxy.port: is missing and the container exposes several ports (80, 443): set proxy.port'],
    ],
    [
      'tls other than off',
      { ...base, 'proxy.tls': 'false' },
      {},
      ['proxy.tls: "false" is not off (or auto, the default)'],
    ],
    [
      'proxy.encode: an unknown coding',
      { ...base, 'proxy.encode': 'gzip,deflate' },
      {},
      ['proxy.encode: "deflate" is not an encoding (zstd, br or gzip)'],
    ],
    [
      'proxy.encode: empty',
      { ...base, 'proxy.encode': ' , ' },
      {},
      ['proxy.encode: is empty (write zstd, br and/or gzip, e.g. zstd,gzip)'],
    ],
    [
      'proxy.encode: a coding twice',
      { ...base, 'proxy.encode': 'br,br' },
      {},
      ['proxy.encode: "br,br" names an encoding twice'],
    ],
    [
      'rate limit without /s',
      { ...base, 'proxy.rate_limit': '10' },
      {},
      ['proxy.rate_limit: "10" is not <n>/s with n a whole number of at least 1'],
    ],
    [
      'a header name that is not a token',
      { ...base, 'proxy.header.X Bad': 'v' },
      {},
      [`proxy.header.X Bad: the header name "X Bad" is not a header name (letters, digits and !#$%&'*+-.^_\`|~)`],
    ],
    ['an empty header name', { ...base, 'proxy.header.': 'v' }, {}, ['proxy.header.: the header name "" is empty']],
    [
      'a header value with a newline',
      { ...base, 'proxy.header.X-A': 'a\r\nSet-Cookie: x=1' },
      {},
      ['proxy.header.X-A: has a control character (such as a newline) in its value'],
    ],
    [
      'an empty header value',
      { ...base, 'proxy.header.X-A': '' },
      {},
      ['proxy.header.X-A: has an empty value (write the header value)'],
    ],
    [
      'the same header twice in another case',
      { ...base, 'proxy.header.X-A': '1', 'proxy.header.x-a': '2' },
      {},
      ['proxy.header.x-a: sets the same header as proxy.header.X-A (header names are case-insensitive)'],
    ],
    ['an empty network', { ...base, 'proxy.network': '' }, {}, ['proxy.network: is empty']],
    [
      'a network the container is not on',
      { ...base, 'proxy.network': 'db' },
      {},
      ['proxy.network: the container is not on network "db"; it is on "bridge"'],
    ],
    [
      'two networks, nothing to choose',
      base,
      {
        networks: [
          { name: 'back', ipv4: '172.18.0.2', ipv6: '' },
          { name: 'front', ipv4: '172.19.0.2', ipv6: '' },
        ],
      },
      [
        'proxy.network: the container is on several networks ("back", "front") and none is chosen: set proxy.network (or the default network option)',
      ],
    ],
    [
      'unknown labels, with the nearest known name',
      { ...base, 'proxy.prot': '1', 'proxy.ratelimit': '5/s', 'proxy.headers.X-A': '1', 'proxy.enable': 'true' },
      {},
      [
        'proxy.enable: is not a proxyd label',
        'proxy.headers.X-A: is not a proxyd label (did you mean proxy.header.X-A?)',
        'proxy.prot: is not a proxyd label (did you mean proxy.port?)',
        'proxy.ratelimit: is not a proxyd label (did you mean proxy.rate_limit?)',
      ],
    ],
    [
      'every problem at once is reported, not only the first',
      { 'proxy.domain': 'a..b', 'proxy.port': 'http', 'proxy.rate_limit': '0/s' },
      {},
      [
        'proxy.domain: "a..b" has an empty label',
        'proxy.port: "http" is not 1-65535',
        'proxy.rate_limit: "0/s" is not <n>/s with n a whole number of at least 1',
      ],
    ],
  ];
  it.each(cases)('%s', (_name, labels, overrides, expected) => {
    const result = derive(labels, overrides);
    expect(result.ok).toBe(false);
    expect(warningsOf(result)).toEqual(expected);
    if (!result.ok) for (const w of result.warnings) expect(w.container).toEqual(ref);
  });
});

describe('label helpers', () => {
  it('hasProxyLabels', () => {
    expect(hasProxyLabels({ 'proxy.port': '1' })).toBe(true);
    expect(hasProxyLabels({ proxy: 'x', 'com.proxy.domain': 'a' })).toBe(false);
  });

  it.each([
    ['proxy.domian', 'proxy.domain'],
    ['proxy.Port', 'proxy.port'],
    ['proxy.rate-limit', 'proxy.rate_limit'],
    ['proxy.netwrok', 'proxy.network'],
    ['proxy.tsl', 'proxy.tls'],
    ['proxy.headers.Cache-Control', 'proxy.header.Cache-Control'],
    ['proxy.enable', null],
    ['proxy.loadbalancer.server.port', null],
  ])('nearestLabel(%s) = %s', (label, expected) => {
    expect(nearestLabel(label)).toBe(expected);
  });
});
