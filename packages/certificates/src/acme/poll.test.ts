import { describe, expect, it } from 'vitest';
import { CertificatesError } from '../errors.js';
import { type PollAnswer, pollUntilSettled } from './poll.js';

/** A fake clock whose sleep advances it and records each wait. */
function fakeClock(start = 1_000_000) {
  let now = start;
  const waits: number[] = [];
  return {
    waits,
    now: () => now,
    sleep: async (ms: number) => {
      waits.push(ms);
      now += ms;
    },
  };
}

function answers(...list: PollAnswer<null>[]) {
  let i = 0;
  return async () => list[Math.min(i++, list.length - 1)] as PollAnswer<null>;
}

describe('pollUntilSettled', () => {
  it('doubles the wait up to the cap and returns the first settled answer', async () => {
    const clock = fakeClock();
    const pending = { status: 'pending', value: null };
    const result = await pollUntilSettled(
      'order',
      answers(pending, pending, pending, pending, { status: 'valid', value: null }),
      { intervalMs: 100, maxIntervalMs: 500, deadline: clock.now() + 60_000, ...clock },
    );

    expect(result.status).toBe('valid');
    expect(clock.waits).toEqual([100, 200, 400, 500]);
  });

  it("honours the CA's Retry-After, capped at the longest interval", async () => {
    const clock = fakeClock();
    await pollUntilSettled(
      'order',
      answers(
        { status: 'processing', value: null, retryAfterMs: 3000 },
        { status: 'processing', value: null, retryAfterMs: 3_600_000 },
        { status: 'invalid', value: null },
      ),
      { intervalMs: 100, maxIntervalMs: 10_000, deadline: clock.now() + 60_000, ...clock },
    );

    expect(clock.waits).toEqual([3000, 10_000]);
  });

  it('gives up with CERT_ACME_TIMEOUT once the deadline has passed', async () => {
    const clock = fakeClock();
    const err = await pollUntilSettled('authorization of app.test', answers({ status: 'pending', value: null }), {
      intervalMs: 1000,
      maxIntervalMs: 1000,
      deadline: clock.now() + 2500,
      ...clock,
    }).catch((e: unknown) => e);

    expect(err).toBeInstanceOf(CertificatesError);
    expect((err as CertificatesError).code).toBe('CERT_ACME_TIMEOUT');
    expect((err as CertificatesError).message).toContain('authorization of app.test still pending');
    expect(clock.waits).toEqual([1000, 1000, 500]);
  });
});
