import { describe, expect, it } from 'vitest';
import { acmeProblemOf, BAD_NONCE, parseProblem, problemError, retryBadNonceOnce } from './problem.js';

const badNonce = () =>
  problemError('POST /new-order', { type: BAD_NONCE, detail: 'JWS has an invalid nonce', status: 400 });

describe('retryBadNonceOnce', () => {
  it('repeats a request the CA refused for its nonce, once', async () => {
    let calls = 0;
    const result = await retryBadNonceOnce(async () => {
      calls++;
      if (calls === 1) throw badNonce();
      return 'order';
    });

    expect(result).toBe('order');
    expect(calls).toBe(2);
  });

  it('throws the second badNonce, and any other problem at once', async () => {
    let calls = 0;
    const twice = await retryBadNonceOnce(async () => {
      calls++;
      throw badNonce();
    }).catch((e: unknown) => e);
    expect(calls).toBe(2);
    expect(acmeProblemOf(twice)?.type).toBe(BAD_NONCE);

    calls = 0;
    const limited = await retryBadNonceOnce(async () => {
      calls++;
      throw problemError(
        'POST /new-order',
        { type: 'urn:ietf:params:acme:error:rateLimited', detail: '', status: 429 },
        60_000,
      );
    }).catch((e: unknown) => e);
    expect(calls).toBe(1);
    expect(acmeProblemOf(limited)?.status).toBe(429);
  });
});

describe('parseProblem', () => {
  it('reads type, detail, status and subproblems; anything else is no problem', () => {
    expect(
      parseProblem(
        {
          type: 'urn:ietf:params:acme:error:compound',
          detail: 'two\nnames',
          subproblems: [{ type: 'urn:ietf:params:acme:error:caa', detail: 'CAA forbids', identifier: {} }],
        },
        400,
      ),
    ).toEqual({
      type: 'urn:ietf:params:acme:error:compound',
      detail: 'two names',
      status: 400,
      subproblems: [{ type: 'urn:ietf:params:acme:error:caa', detail: 'CAA forbids', status: 400 }],
    });
    expect(parseProblem('<html>', 502)).toBeUndefined();
    expect(parseProblem({ status: 'valid' }, 200)).toBeUndefined();
  });
});
