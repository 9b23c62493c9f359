import { describe, expect, it } from 'vitest';
import { OrderRateLimiter } from './order-rate-limiter.js';

const T0 = Date.UTC(2025, 0, 1);

function fakeClock() {
  let now = T0;
  return {
    now: () => now,
    set: (at: number) => {
      now = at;
    },
  };
}

describe('OrderRateLimiter', () => {
  it('allows 10 orders in 10 s per account, then says when the 11th may go', () => {
    const clock = fakeClock();
    const limiter = new OrderRateLimiter({ clock });
    for (let i = 0; i < 10; i++) expect(limiter.tryAcquire('acct')).toEqual({ ok: true });
    expect(limiter.tryAcquire('acct')).toEqual({ ok: false, retryAt: T0 + 10_000 });
    clock.set(T0 + 9_999);
    expect(limiter.availableAt('acct')).toBe(T0 + 10_000);
    expect(limiter.tryAcquire('acct')).toEqual({ ok: false, retryAt: T0 + 10_000 });
    clock.set(T0 + 10_000);
    expect(limiter.availableAt('acct')).toBe(T0 + 10_000);
    expect(limiter.tryAcquire('acct')).toEqual({ ok: true });
  });

  it('slides: orders spread over the window free one slot each as they age out', () => {
    const clock = fakeClock();
    const limiter = new OrderRateLimiter({ clock });
    for (let i = 0; i < 10; i++) {
      clock.set(T0 + i * 1_000);
      expect(limiter.tryAcquire('acct').ok).toBe(true);
    }
    clock.set(T0 + 9_500);
    expect(limiter.tryAcquire('acct')).toEqual({ ok: false, retryAt: T0 + 10_000 });
    clock.set(T0 + 10_000);
    expect(limiter.tryAcquire('acct')).toEqual({ ok: true });
    expect(limiter.tryAcquire('acct')).toEqual({ ok: false, retryAt: T0 + 11_000 });
  });

  it('a refused request takes no slot', () => {
    const clock = fakeClock();
    const limiter = new OrderRateLimiter({ clock });
    for (let i = 0; i < 10; i++) limiter.tryAcquire('acct');
    for (let i = 0; i < 50; i++) expect(limiter.tryAcquire('acct')).toEqual({ ok: false, retryAt: T0 + 10_000 });
    clock.set(T0 + 10_000);
    for (let i = 0; i < 10; i++) expect(limiter.tryAcquire('acct').ok).toBe(true);
  });

  it('counts each account on its own', () => {
    const limiter = new OrderRateLimiter({ clock: fakeClock() });
    for (let i = 0; i < 10; i++) limiter.tryAcquire('le-prod');
    expect(limiter.tryAcquire('le-prod').ok).toBe(false);
    expect(limiter.tryAcquire('zerossl')).toEqual({ ok: true });
    expect(limiter.availableAt('zerossl')).toBe(T0);
  });

  it('takes another limit and window', () => {
    const limiter = new OrderRateLimiter({ clock: fakeClock(), limit: 2, windowMs: 500 });
    expect(limiter.tryAcquire('a').ok).toBe(true);
    expect(limiter.tryAcquire('a').ok).toBe(true);
    expect(limiter.tryAcquire('a')).toEqual({ ok: false, retryAt: T0 + 500 });
  });
});
