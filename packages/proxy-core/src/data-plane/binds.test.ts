import { emptySite, type RouteSpec } from '@proxyd/model';
import { describe, expect, it } from 'vitest';
import { answersOn, ListenerBinds, listenAddresses, MAIN_LISTENERS } from './binds.js';

function route(domain: string, bind: string[] = []): RouteSpec {
  const site = emptySite([{ scheme: 'http', host: domain, port: null }]);
  site.bind = bind;
  return { domain, origin: 'proxyfile', source: null, site };
}

describe('answersOn', () => {
  it('takes the address itself, 0.0.0.0 for every IPv4 address and :: for every address', () => {
    expect(answersOn(['127.0.0.2'], '127.0.0.2')).toBe(true);
    expect(answersOn(['127.0.0.2'], '127.0.0.1')).toBe(false);
    expect(answersOn(['0.0.0.0'], '10.1.2.3')).toBe(true);
    expect(answersOn(['0.0.0.0'], '::1')).toBe(false);
    expect(answersOn(['::'], '::1')).toBe(true);
    expect(answersOn(['::'], '192.0.2.1')).toBe(true);
    expect(answersOn(['::1', '127.0.0.1'], '::1')).toBe(true);
  });

  it('reads an IPv4 connection on a dual-stack listener (::ffff:a.b.c.d) as its IPv4 address', () => {
    expect(answersOn(['127.0.0.1'], '::ffff:127.0.0.1')).toBe(true);
    expect(answersOn(['0.0.0.0'], '::ffff:10.0.0.1')).toBe(true);
    expect(answersOn(['127.0.0.2'], '::ffff:127.0.0.1')).toBe(false);
  });

  it('refuses a connection whose local address is unknown', () => {
    expect(answersOn(['0.0.0.0'], undefined)).toBe(false);
  });
});

describe('listenAddresses', () => {
  it('keeps specific addresses apart and lets a wildcard cover its family', () => {
    expect(listenAddresses(['127.0.0.1', '::1'])).toEqual(['127.0.0.1', '::1']);
    expect(listenAddresses(['127.0.0.1', '0.0.0.0', '::1'])).toEqual(['0.0.0.0', '::1']);
    expect(listenAddresses(['127.0.0.1', '::', '::1'])).toEqual(['::']);
  });
});

describe('ListenerBinds', () => {
  it('binds the main listeners to default_bind plus what their sites name, and each site port to its sites', () => {
    const binds = new ListenerBinds(['127.0.0.1']);
    const pins = new Map([['pinned.test', 9001]]);
    const grew = binds.add(
      [route('a.test'), route('b.test', ['127.0.0.2']), route('pinned.test', ['::1'])],
      (d) => pins.get(d) ?? null,
    );
    expect([...grew].sort()).toEqual([MAIN_LISTENERS, 9001].sort());
    expect(binds.addresses(MAIN_LISTENERS)).toEqual(['127.0.0.1', '127.0.0.2']);
    expect(binds.addresses(9001)).toEqual(['::1']);
    expect(binds.restricted).toBe(true);
  });

  it('restricts nothing while no site names its own bind, and grows only by new addresses', () => {
    const binds = new ListenerBinds(['0.0.0.0']);
    expect(binds.add([route('a.test'), route('b.test')], () => null).size).toBe(0);
    expect(binds.restricted).toBe(false);
    expect(binds.add([route('c.test', ['0.0.0.0'])], () => null).size).toBe(0);
    expect([...binds.add([route('d.test', ['::1'])], () => null)]).toEqual([MAIN_LISTENERS]);
    expect(binds.addresses(MAIN_LISTENERS)).toEqual(['0.0.0.0', '::1']);
  });

  it('gives a site port without bind the default addresses', () => {
    const binds = new ListenerBinds(['127.0.0.1']);
    binds.add([route('p.test')], () => 9002);
    expect(binds.addresses(9002)).toEqual(['127.0.0.1']);
  });
});
