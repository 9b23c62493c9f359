import { describe, expect, it } from 'vitest';
import type { BackoffState } from './backoff.js';
import type { RenewalDecision } from './renewal-window.js';
import { type SummaryInput, summarizeCertificate } from './status.js';

const NOW = Date.UTC(2025, 0, 1);
const HOUR = 3_600_000;
const certificate = { issuer: 'https://127.0.0.1:14000/dir', notAfter: NOW + 60 * 24 * HOUR };
const notDue: RenewalDecision = { renew: false, dueAt: NOW + 30 * 24 * HOUR, reason: 'lifetime', expired: false };
const due: RenewalDecision = { ...notDue, renew: true, dueAt: NOW - 1 };
const failing: BackoffState = {
  firstFailureAt: NOW - HOUR,
  lastFailureAt: NOW - 60_000,
  failures: 3,
  lastError: 'connect ECONNREFUSED 127.0.0.1:14000',
  gaveUp: false,
  nextAttemptAt: NOW + 3 * 60_000,
};
const gaveUp: BackoffState = { ...failing, gaveUp: true, gaveUpAt: NOW - 60_000 };
const input = (over: Partial<SummaryInput>): SummaryInput => ({
  name: 'a.test',
  certificate,
  renewal: notDue,
  backoff: null,
  inFlight: false,
  now: NOW,
  ...over,
});

describe('summarizeCertificate', () => {
  it.each([
    { case: 'a certificate not due', over: {}, status: 'valid', next: notDue.dueAt, error: null },
    { case: 'due for renewal', over: { renewal: due }, status: 'renewing', next: NOW, error: null },
    {
      case: 'no certificate yet',
      over: { certificate: null, renewal: null },
      status: 'renewing',
      next: NOW,
      error: null,
    },
    { case: 'an attempt running', over: { inFlight: true }, status: 'renewing', next: NOW, error: null },
    {
      case: 'an attempt running after failures keeps the error',
      over: { inFlight: true, backoff: failing },
      status: 'renewing',
      next: NOW,
      error: failing.lastError,
    },
    {
      case: 'failing',
      over: { backoff: failing },
      status: 'failing',
      next: failing.nextAttemptAt,
      error: failing.lastError,
    },
    {
      case: 'failing and held longer by validation failures',
      over: { backoff: failing, heldUntil: NOW + HOUR },
      status: 'failing',
      next: NOW + HOUR,
      error: failing.lastError,
    },
    {
      case: 'a hold earlier than the retry does not bring it forward',
      over: { backoff: failing, heldUntil: NOW + 1 },
      status: 'failing',
      next: failing.nextAttemptAt,
      error: failing.lastError,
    },
    { case: 'gave up', over: { backoff: gaveUp }, status: 'gave-up', next: null, error: failing.lastError },
    {
      case: 'gave up, then an attempt asked for anew running',
      over: { backoff: gaveUp, inFlight: true },
      status: 'renewing',
      next: NOW,
      error: failing.lastError,
    },
  ])('$case → $status', ({ over, status, next, error }) => {
    expect(summarizeCertificate(input(over))).toEqual({
      name: 'a.test',
      issuer: 'certificate' in over ? null : certificate.issuer,
      notAfter: 'certificate' in over ? null : certificate.notAfter,
      status,
      lastError: error,
      nextAttemptAt: next,
    });
  });
});
