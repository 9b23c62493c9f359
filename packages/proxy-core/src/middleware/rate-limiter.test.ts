import { describe, expect, it } from 'vitest';
import { RateLimiter } from './rate-limiter.js';

function clock(start: number) {
  const c = { t: start, now: () => c.t };
  return c;
}

function burst(limiter: RateLimiter, n: number, ip = '192.0.2.1', domain = 'a.test'): number {
  let admitted = 0;
  for (let i = 0; i < n; i++) if (limiter.admit(domain, ip)) admitted++;
  return admitted;
}

describe('RateLimiter (sliding-window estimator)', () => {
  it('admits exactly n per second in a fresh window, at both edges of it', () => {
    const c = clock(10_000);
    const limiter = new RateLimiter({ limit: 5, now: c.now });
    expect(burst(limiter, 4)).toBe(4);
    c.t = 10_999;
    expect(limiter.admit('a.test', '192.0.2.1')).toBe(true);
    expect(limiter.admit('a.test', '192.0.2.1')).toBe(false);
  });

  it('weights the previous window by how much of it still overlaps the last second', () => {
    const c = clock(10_000);
    const limiter = new RateLimiter({ limit: 5, now: c.now });
    expect(burst(limiter, 5)).toBe(5);
    c.t = 11_000; // previous weighs 1: 5 + 0 + 1 > 5
    expect(limiter.admit('a.test', '192.0.2.1')).toBe(false);
    c.t = 11_199; // 5 × 0.801 + 1 > 5
    expect(limiter.admit('a.test', '192.0.2.1')).toBe(false);
    c.t = 11_200; // 5 × 0.8 + 0 + 1 = 5
    expect(limiter.admit('a.test', '192.0.2.1')).toBe(true);
    expect(limiter.admit('a.test', '192.0.2.1')).toBe(false);
    c.t = 11_400; // 5 × 0.6 + 1 + 1 = 5
    expect(limiter.admit('a.test', '192.0.2.1')).toBe(true);
    expect(limiter.admit('a.test', '192.0.2.1')).toBe(false);
    c.t = 11_999; // 5 × 0.001 + 2 + 1 ≤ 5 twice more, then 5.005 + … > 5
    expect(burst(limiter, 5)).toBe(2);
  });

  it('forgets a window that is two or more seconds old', () => {
    const c = clock(10_000);
    const limiter = new RateLimiter({ limit: 3, now: c.now });
    expect(burst(limiter, 10)).toBe(3);
    c.t = 12_000;
    expect(burst(limiter, 10)).toBe(3);
  });

  it('does not count refused requests', () => {
    const c = clock(10_000);
    const limiter = new RateLimiter({ limit: 2, now: c.now });
    expect(burst(limiter, 100)).toBe(2);
    c.t = 11_500; // previous = 2 (the refused 98 do not count): 1 + 0 + 1 ≤ 2
    expect(burst(limiter, 100)).toBe(1);
  });

  it('keeps each client IP and each domain apart', () => {
    const c = clock(0);
    const limiter = new RateLimiter({ limit: 1, now: c.now });
    expect(limiter.admit('a.test', '192.0.2.1')).toBe(true);
    expect(limiter.admit('a.test', '192.0.2.1')).toBe(false);
    expect(limiter.admit('a.test', '192.0.2.2')).toBe(true);
    expect(limiter.admit('b.test', '192.0.2.1')).toBe(true);
  });

  it('stays within its key cap under 100,000 distinct IPs in one second', () => {
    const c = clock(0);
    const limiter = new RateLimiter({ limit: 10, now: c.now, maxKeys: 10_000 });
    let max = 0;
    for (let i = 0; i < 100_000; i++) {
      limiter.admit('a.test', `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
      if ((i & 1023) === 0) max = Math.max(max, limiter.size('a.test'));
    }
    expect(Math.max(max, limiter.size('a.test'))).toBe(10_000);
    // The clients tracked before the cap was reached are still limited.
    expect(limiter.admit('a.test', '10.0.0.0')).toBe(true);
    for (let i = 0; i < 10; i++) limiter.admit('a.test', '10.0.0.0');
    expect(limiter.admit('a.test', '10.0.0.0')).toBe(false);
  });

  it('evicts idle keys as traffic goes on, and keeps limiting an active client during a flood', () => {
    const c = clock(0);
    const limiter = new RateLimiter({ limit: 10, now: c.now });
    let peak = 0;
    let victimAdmitted = 0;
    // 100,000 distinct IPs over 100 s (1,000 a second), one steady client at 20 requests a second.
    for (let i = 0; i < 100_000; i++) {
      c.t = i; // 1 ms apart
      limiter.admit('a.test', `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
      if (i % 50 === 0 && limiter.admit('a.test', '198.51.100.7')) victimAdmitted++;
      peak = Math.max(peak, limiter.size('a.test'));
    }
    // Only the last two windows' keys (≤ 2,000 + the steady client) are ever held.
    expect(peak).toBeLessThanOrEqual(2_001);
    // 100 s at 20/s offered, 10/s allowed: the estimator admits at most the limit
    // on average (a little under it for an evenly spaced overload).
    expect(victimAdmitted).toBeGreaterThanOrEqual(850);
    expect(victimAdmitted).toBeLessThanOrEqual(1_010);
  });
});
