import { describe, expect, it } from 'vitest';
import { selectAriRenewalTime } from './ari.js';
import { lifetimeRenewalTimes, RENEWAL_CHECK_INTERVAL_MS, renewalDecision } from './renewal-window.js';

const DAY = 24 * 60 * 60 * 1000;
const T0 = Date.UTC(2025, 0, 1);
// A 90-day certificate: 1/3 left is 30 days before notAfter, 1/20 left is 4.5 days.
const validity = { notBefore: T0, notAfter: T0 + 90 * DAY };
const RENEW_AT = T0 + 60 * DAY;
const FORCE_AT = T0 + 90 * DAY - 4.5 * DAY;
const CERT_ID = 'aYhba4dGQEHhs3uEe6CuLN4ByNQ.AIdlQyE';

describe('lifetimeRenewalTimes', () => {
  it('renews at 1/3 of the lifetime left and forces at 1/20', () => {
    expect(lifetimeRenewalTimes(validity)).toEqual({ renewAt: RENEW_AT, forceAt: FORCE_AT });
  });

  it('is the first integer ms with at most 1/3 (1/20) left, for lifetimes not divisible by 3 or 20', () => {
    for (const lifetime of [1, 2, 100, 101, 12 * 60 * 60 * 1000 + 7, 7 * DAY - 1]) {
      const notAfter = T0 + lifetime;
      const { renewAt, forceAt } = lifetimeRenewalTimes({ notBefore: T0, notAfter });
      expect(3 * (notAfter - renewAt)).toBeLessThanOrEqual(lifetime);
      expect(3 * (notAfter - (renewAt - 1))).toBeGreaterThan(lifetime);
      expect(20 * (notAfter - forceAt)).toBeLessThanOrEqual(lifetime);
      expect(20 * (notAfter - (forceAt - 1))).toBeGreaterThan(lifetime);
    }
  });

  it('a zero or negative lifetime is due at notAfter', () => {
    expect(lifetimeRenewalTimes({ notBefore: T0, notAfter: T0 })).toEqual({ renewAt: T0, forceAt: T0 });
    expect(lifetimeRenewalTimes({ notBefore: T0 + 5, notAfter: T0 })).toEqual({ renewAt: T0, forceAt: T0 });
  });
});

describe('renewalDecision without ARI', () => {
  it.each([
    { case: 'just issued', now: T0, renew: false, expired: false },
    { case: '1 ms before 1/3 left', now: RENEW_AT - 1, renew: false, expired: false },
    { case: 'exactly 1/3 left', now: RENEW_AT, renew: true, expired: false },
    { case: 'exactly 1/20 left', now: FORCE_AT, renew: true, expired: false },
    { case: 'expired', now: validity.notAfter, renew: true, expired: true },
  ])('$case → renew $renew', ({ now, renew, expired }) => {
    expect(renewalDecision({ validity, now })).toEqual({ renew, dueAt: RENEW_AT, reason: 'lifetime', expired });
  });

  it('null ARI (absent, failed or unparsable) is the lifetime rule', () => {
    expect(renewalDecision({ validity, now: RENEW_AT, ari: null })).toEqual(
      renewalDecision({ validity, now: RENEW_AT }),
    );
  });
});

describe('renewalDecision with ARI', () => {
  const ari = (start: number, end: number) => ({ window: { start, end }, certId: CERT_ID });

  it('renews at the selected time, or as soon as it falls before the next check', () => {
    const window = ari(T0 + 40 * DAY, T0 + 42 * DAY);
    const selected = selectAriRenewalTime(window.window, CERT_ID);
    const at = (now: number) => renewalDecision({ validity, now, ari: window });
    // Renewing before the 1/3 rule, as the CA asks.
    expect(at(selected - RENEWAL_CHECK_INTERVAL_MS)).toEqual({
      renew: false,
      dueAt: selected,
      reason: 'ari',
      expired: false,
    });
    expect(at(selected - RENEWAL_CHECK_INTERVAL_MS + 1).renew).toBe(true);
    expect(at(selected).renew).toBe(true);
  });

  it('with a check interval of 0, renews exactly at the selected time', () => {
    const window = ari(T0 + 40 * DAY, T0 + 42 * DAY);
    const selected = selectAriRenewalTime(window.window, CERT_ID);
    expect(renewalDecision({ validity, now: selected - 1, ari: window, checkIntervalMs: 0 }).renew).toBe(false);
    expect(renewalDecision({ validity, now: selected, ari: window, checkIntervalMs: 0 }).renew).toBe(true);
  });

  it('a window wholly in the past means renew now', () => {
    const decision = renewalDecision({ validity, now: T0 + 10 * DAY, ari: ari(T0 + 5 * DAY, T0 + 6 * DAY) });
    expect(decision.renew).toBe(true);
    expect(decision.reason).toBe('ari');
    expect(decision.dueAt).toBeLessThan(T0 + 10 * DAY);
  });

  it('a window later than 1/3 left overrides the lifetime rule', () => {
    const decision = renewalDecision({ validity, now: RENEW_AT, ari: ari(T0 + 70 * DAY, T0 + 72 * DAY) });
    expect(decision).toMatchObject({ renew: false, reason: 'ari' });
  });

  it('1/20 left still forces renewal when the window lies beyond it', () => {
    const beyond = ari(T0 + 87 * DAY, T0 + 89 * DAY);
    expect(renewalDecision({ validity, now: FORCE_AT - 1, ari: beyond })).toEqual({
      renew: false,
      dueAt: FORCE_AT,
      reason: 'force',
      expired: false,
    });
    expect(renewalDecision({ validity, now: FORCE_AT, ari: beyond })).toEqual({
      renew: true,
      dueAt: FORCE_AT,
      reason: 'force',
      expired: false,
    });
  });
});
