import { RouteSpec } from '@proxyd/model';
import { Value } from 'typebox/value';
import { describe, expect, it } from 'vitest';
import type { ContainerMember } from './labels.js';
import { inRotation, poolRoute } from './pools.js';

const member = (name: string, host: string, overrides: Partial<ContainerMember> = {}): ContainerMember => ({
  container: { name, id: `${name}-id`.padEnd(12, '0') },
  domains: ['app.test'],
  upstream: { host, port: 8080 },
  health: 'none',
  settings: { tls: 'auto', rateLimit: null, headers: [] },
  ...overrides,
});

describe('inRotation', () => {
  it.each([
    ['none', true],
    ['healthy', true],
    ['starting', false],
    ['unhealthy', false],
  ] as const)('%s → %s', (health, expected) => {
    expect(inRotation(health)).toBe(expected);
  });
});

describe('poolRoute', () => {
  it('every member in rotation is an upstream, round-robin, ordered by container name', () => {
    const { route, warnings } = poolRoute('app.test', [member('web-2', '10.0.0.3'), member('web-1', '10.0.0.2')]);
    expect(warnings).toEqual([]);
    expect(route).toMatchObject({ domain: 'app.test', origin: 'labels', source: 'docker' });
    expect(route.site.handler).toMatchObject({
      kind: 'reverse_proxy',
      lb_policy: 'round_robin',
      upstreams: [
        { host: '10.0.0.2', port: 8080 },
        { host: '10.0.0.3', port: 8080 },
      ],
    });
    expect(route.site.addresses).toEqual([{ scheme: null, host: 'app.test', port: null }]);
    expect(route.site.tls.mode).toBe('auto');
    expect(Value.Check(RouteSpec, route)).toBe(true);
  });

  it('unhealthy and starting members are out; no healthcheck counts as healthy', () => {
    const { route } = poolRoute('app.test', [
      member('a', '10.0.0.2', { health: 'unhealthy' }),
      member('b', '10.0.0.3', { health: 'starting' }),
      member('c', '10.0.0.4', { health: 'healthy' }),
      member('d', '10.0.0.5'),
    ]);
    expect(route.site.handler).toMatchObject({
      upstreams: [
        { host: '10.0.0.4', port: 8080 },
        { host: '10.0.0.5', port: 8080 },
      ],
    });
  });

  it('every member out: the route stays with an empty pool (the data plane answers 503, not 404)', () => {
    const { route } = poolRoute('app.test', [member('a', '10.0.0.2', { health: 'unhealthy' })]);
    expect(route.site.handler).toMatchObject({ kind: 'reverse_proxy', upstreams: [] });
    // A valid route: the model allows an empty pool from a live source.
    expect(Value.Check(RouteSpec, route)).toBe(true);
  });

  it('tls off, rate limit and headers become the site settings', () => {
    const { route } = poolRoute('app.test', [
      member('a', '10.0.0.2', {
        settings: { tls: 'off', rateLimit: 5, headers: [{ op: 'set', name: 'X-Frame-Options', value: 'DENY' }] },
      }),
    ]);
    expect(route.site.addresses).toEqual([{ scheme: 'http', host: 'app.test', port: null }]);
    expect(route.site.tls.mode).toBe('off');
    expect(route.site.rate_limit).toBe(5);
    expect(route.site.header).toEqual([{ op: 'set', name: 'X-Frame-Options', value: 'DENY' }]);
    expect(Value.Check(RouteSpec, route)).toBe(true);
  });

  it('proxy.encode becomes the site encode (default minimum_length); members that differ get a warning', () => {
    const { route, warnings } = poolRoute('app.test', [
      member('a', '10.0.0.2', { settings: { tls: 'auto', rateLimit: null, headers: [], encode: ['br', 'gzip'] } }),
      member('b', '10.0.0.3', { settings: { tls: 'auto', rateLimit: null, headers: [] } }),
    ]);
    expect(route.site.encode).toEqual({ encodings: ['br', 'gzip'], minimum_length: 512 });
    expect(Value.Check(RouteSpec, route)).toBe(true);
    expect(warnings.map((w) => w.label)).toEqual(['proxy.encode']);
    expect(poolRoute('app.test', [member('a', '10.0.0.2')]).route.site.encode).toBeNull();
  });

  it('members that differ in settings: the first by name sets them, the others get a warning and still serve', () => {
    const { route, warnings } = poolRoute('app.test', [
      member('b', '10.0.0.3', { settings: { tls: 'auto', rateLimit: 10, headers: [] } }),
      member('a', '10.0.0.2', { settings: { tls: 'auto', rateLimit: 5, headers: [] } }),
      member('c', '10.0.0.4', {
        settings: { tls: 'auto', rateLimit: 5, headers: [{ op: 'set', name: 'X-A', value: '1' }] },
      }),
    ]);
    expect(route.site.rate_limit).toBe(5);
    expect(route.site.handler).toMatchObject({ upstreams: [{}, {}, {}] });
    expect(warnings).toEqual([
      {
        container: { name: 'b', id: 'b-id00000000' },
        label: 'proxy.rate_limit',
        reason: "differs from a for app.test; the pool uses a's settings",
      },
      {
        container: { name: 'c', id: 'c-id00000000' },
        label: 'proxy.header.X-A',
        reason: "differs from a for app.test; the pool uses a's settings",
      },
    ]);
  });

  it('the same address twice counts once; the key changes exactly when the route does', () => {
    const a = member('a', '127.0.0.1');
    const b = member('b', '127.0.0.1');
    const one = poolRoute('app.test', [a, b]);
    expect(one.route.site.handler).toMatchObject({ upstreams: [{ host: '127.0.0.1', port: 8080 }] });
    expect(poolRoute('app.test', [b, a]).key).toBe(one.key);
    expect(poolRoute('app.test', [a, { ...b, health: 'unhealthy' }]).key).toBe(one.key);
    expect(poolRoute('app.test', [a, member('c', '10.0.0.9')]).key).not.toBe(one.key);
    expect(poolRoute('app.test', [{ ...a, settings: { ...a.settings, rateLimit: 1 } }]).key).not.toBe(one.key);
  });
});
