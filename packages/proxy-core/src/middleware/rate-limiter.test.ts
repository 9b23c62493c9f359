import { describe, expect, it, vi } from 'vitest';
import { RateLimiter, rateLimitKey } from './rate-limiter.js';

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

  it('stays within its key cap under 100,000 distinct IPs in one second; the keys over it share one allowance', () => {
    const c = clock(0);
    const limiter = new RateLimiter({ limit: 10, now: c.now, maxKeys: 10_000 });
    let max = 0;
    let admitted = 0;
    for (let i = 0; i < 100_000; i++) {
      if (limiter.admit('a.test', `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`)) admitted++;
      if ((i & 1023) === 0) max = Math.max(max, limiter.size('a.test'));
    }
    expect(Math.max(max, limiter.size('a.test'))).toBe(10_000);
    // 10,000 tracked keys got their first request; the 90,000 others shared 10.
    expect(admitted).toBe(10_000 + 10);
    // The clients tracked before the cap was reached are still limited on their own.
    for (let i = 0; i < 9; i++) expect(limiter.admit('a.test', '10.0.0.0')).toBe(true);
    expect(limiter.admit('a.test', '10.0.0.0')).toBe(false);
    // Next window: the full generation becomes the previous one, and is dropped early for new keys.
    c.t = 1_000;
    expect(limiter.admit('a.test', '10.9.9.9')).toBe(true);
    expect(limiter.size('a.test')).toBe(1);
  });

  it('keys an IPv6 client by its /64, however the address is written', () => {
    const c = clock(0);
    const limiter = new RateLimiter({ limit: 3, now: c.now });
    expect(limiter.admit('a.test', '2001:db8:1:2::1')).toBe(true);
    expect(limiter.admit('a.test', '2001:DB8:1:2:ffff:ffff:ffff:ffff')).toBe(true);
    expect(limiter.admit('a.test', '2001:0db8:0001:0002:0:0:0:9%eth0')).toBe(true);
    expect(limiter.admit('a.test', '2001:db8:1:2:a:b:c:d')).toBe(false);
    // The next /64 is another client.
    expect(limiter.admit('a.test', '2001:db8:1:3::1')).toBe(true);
    expect(limiter.size('a.test')).toBe(2);
    // A flood from one /64 holds one key, not one per address.
    for (let i = 0; i < 5_000; i++) limiter.admit('a.test', `2001:db8:ffff:1::${i.toString(16)}`);
    expect(limiter.size('a.test')).toBe(3);
    // IPv4-mapped IPv6 is the IPv4 client, not one shared ::ffff:0:0/64 key.
    expect(limiter.admit('a.test', '::ffff:192.0.2.7')).toBe(true);
    expect(limiter.admit('a.test', '::FFFF:c000:0208')).toBe(true);
    expect(limiter.size('a.test')).toBe(5);
    for (let i = 0; i < 2; i++) expect(limiter.admit('a.test', '192.0.2.7')).toBe(true);
    expect(limiter.admit('a.test', '192.0.2.7')).toBe(false);
  });

  it('rateLimitKey agrees with the groups of 2,000 random addresses in several spellings', () => {
    let seed = 42;
    const rnd = (n: number) => {
      seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
      return seed % n;
    };
    for (let k = 0; k < 2_000; k++) {
      // Runs of zero groups are common in real addresses: make them likely.
      const groups = Array.from({ length: 8 }, () => (rnd(3) === 0 ? 0 : rnd(0x10000)));
      if (groups.slice(0, 6).join() === '0,0,0,0,0,65535') groups[5] = 1;
      const expected = `${groups
        .slice(0, 4)
        .map((g) => g.toString(16))
        .join(':')}::/64`;
      const full = groups.map((g) => g.toString(16).toUpperCase().padStart(4, '0')).join(':');
      const canonical = new URL(`http://[${full}]/`).hostname.slice(1, -1);
      const dotted = `${groups
        .slice(0, 6)
        .map((g) => g.toString(16))
        .join(
          ':',
        )}:${(groups[6] as number) >> 8}.${(groups[6] as number) & 255}.${(groups[7] as number) >> 8}.${(groups[7] as number) & 255}`;
      for (const spelling of [full, canonical, `${canonical}%lo`, dotted]) {
        expect(rateLimitKey(spelling), spelling).toBe(expected);
      }
    }
    expect(rateLimitKey('::')).toBe('0:0:0:0::/64');
    expect(rateLimitKey('::1')).toBe('0:0:0:0::/64');
    expect(rateLimitKey('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    expect(rateLimitKey('0:0:0:0:0:ffff:1.2.3.4')).toBe('1.2.3.4');
    expect(rateLimitKey('192.0.2.1')).toBe('192.0.2.1');
    for (const bad of [
      '1::2::3',
      ':1:2',
      '1:02:3:4:5:6:7:8:9',
      '12345::',
      '1::2:3:4:5:6:7:1.2.3.4',
      '::1.2.3',
      'zz::',
    ]) {
      expect(rateLimitKey(bad), bad).toBe(bad);
    }
  });

  it('survives the clock stepping backwards: no lockout, no second allowance', () => {
    const c = clock(1_000_000);
    const limiter = new RateLimiter({ limit: 5, now: c.now });
    expect(burst(limiter, 5)).toBe(5);
    // The wall clock steps back an hour: time resumes from the last reading.
    c.t -= 3_600_000;
    expect(burst(limiter, 5)).toBe(0);
    // And goes on from there at the clock's pace.
    c.t += 1_000;
    expect(burst(limiter, 10)).toBe(0); // previous window weighs 1 at its edge
    c.t += 999;
    expect(burst(limiter, 10)).toBe(4);
    c.t += 1_001;
    expect(burst(limiter, 10)).toBe(5);
  });

  it('defaults to a monotonic clock: wall-clock steps do not open a new window', () => {
    const limiter = new RateLimiter({ limit: 2 });
    expect(burst(limiter, 3)).toBe(2);
    const wall = Date.now();
    const spy = vi.spyOn(Date, 'now').mockReturnValue(wall + 10_000);
    try {
      expect(burst(limiter, 3)).toBe(0);
    } finally {
      spy.mockRestore();
    }
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
