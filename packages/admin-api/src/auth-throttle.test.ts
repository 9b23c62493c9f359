import { describe, expect, it } from 'vitest';
import { clientKey, createAuthThrottle } from './auth-throttle.js';

describe('auth throttle', () => {
  it('locks a client out at maxFailures within the window, for lockoutMs', () => {
    const t = createAuthThrottle({ maxFailures: 3, windowMs: 10_000, lockoutMs: 5_000 });
    expect(t.fail('a', 0)).toEqual({ action: 'auth_failure', client: 'a', failures: 1 });
    expect(t.fail('a', 1_000)).toBeUndefined();
    expect(t.lockedFor('a', 1_000)).toBe(0);
    expect(t.fail('a', 2_000)).toEqual({ action: 'auth_lockout', client: 'a', failures: 3, retry_after: 5 });
    expect(t.lockedFor('a', 2_000)).toBe(5);
    expect(t.lockedFor('a', 6_001)).toBe(1);
    expect(t.lockedFor('a', 7_000)).toBe(0);
    // After the lockout the count starts again.
    expect(t.fail('a', 7_000)).toEqual({ action: 'auth_failure', client: 'a', failures: 1 });
  });

  it('forgets failures when the window ends', () => {
    const t = createAuthThrottle({ maxFailures: 2, windowMs: 10_000 });
    t.fail('a', 0);
    expect(t.fail('a', 10_000)).toEqual({ action: 'auth_failure', client: 'a', failures: 1 });
    expect(t.lockedFor('a', 10_000)).toBe(0);
  });

  it('keeps at most maxClients entries, dropping the oldest', () => {
    const t = createAuthThrottle({ maxClients: 100, maxFailures: 2 });
    t.fail('first', 0);
    t.fail('first', 0);
    for (let i = 0; i < 10_000; i++) t.fail(`c${i}`, 1);
    expect(t.size).toBe(100);
    expect(t.lockedFor('first', 2)).toBe(0);
    expect(t.lockedFor('c9999', 2)).toBe(0);
  });

  it('reports at most maxEventsPerWindow events in all, then says how many it held back', () => {
    const t = createAuthThrottle({ maxEventsPerWindow: 2, windowMs: 60_000 });
    expect(t.fail('a', 0)).toBeDefined();
    expect(t.fail('b', 0)).toBeDefined();
    for (let i = 0; i < 50; i++) expect(t.fail(`x${i}`, 1)).toBeUndefined();
    expect(t.fail('c', 60_000)).toEqual({ action: 'auth_failure', client: 'c', failures: 1, suppressed: 50 });
    expect(t.fail('d', 60_001)).toEqual({ action: 'auth_failure', client: 'd', failures: 1 });
  });
});

describe('client key', () => {
  it('is the IPv4 address, also IPv4-mapped', () => {
    expect(clientKey('192.0.2.1')).toBe('192.0.2.1');
    expect(clientKey('::ffff:192.0.2.1')).toBe('192.0.2.1');
    expect(clientKey(undefined)).toBe('unknown');
  });

  it('is the /64 of an IPv6 address, however it is written', () => {
    expect(clientKey('2001:db8:1:2::1')).toBe('2001:db8:1:2::/64');
    expect(clientKey('2001:0db8:0001:0002:ffff:1:2:3')).toBe('2001:db8:1:2::/64');
    expect(clientKey('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(clientKey('1:2::3:4:5:6:7')).toBe('1:2:0:3::/64');
    expect(clientKey('::1')).toBe('0:0:0:0::/64');
    expect(clientKey('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
  });
});
