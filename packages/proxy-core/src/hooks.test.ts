import type { IncomingMessage, ServerResponse } from 'node:http';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { composeHooks, type DataPlaneHooks, type RequestContext, type RequestRecord } from './hooks.js';

const record = { host: 'a.test' } as RequestRecord;
const ctx = { host: 'a.test' } as RequestContext;
const req = {} as IncomingMessage;
const res = {} as ServerResponse;

describe('composeHooks', () => {
  it('calls every onRequest in order, past one that throws', () => {
    const calls: string[] = [];
    const hooks = composeHooks(
      { onRequest: () => calls.push('a') },
      {},
      {
        onRequest: () => {
          calls.push('b');
          throw new Error('boom');
        },
      },
      { onRequest: (r) => calls.push(`c:${r.host}`) },
    );
    hooks.onRequest?.(record);
    expect(calls).toEqual(['a', 'b', 'c:a.test']);
  });

  it('leaves kinds no set has absent, and hands a lone hook through bound to its set', () => {
    const set = {
      seen: [] as string[],
      onRequest(this: { seen: string[] }, r: RequestRecord) {
        this.seen.push(r.host);
      },
    };
    const hooks = composeHooks({}, set as DataPlaneHooks);
    expect(hooks.intercept).toBeUndefined();
    expect(hooks.transformResponse).toBeUndefined();
    expect(hooks.rewriteBody).toBeUndefined();
    hooks.onRequest?.(record);
    expect(set.seen).toEqual(['a.test']);
    expect(composeHooks()).toEqual({});
  });

  it('asks intercepts in turn until one answers; a throw does not answer', () => {
    const asked: string[] = [];
    const hooks = composeHooks(
      {
        intercept: () => {
          asked.push('a');
          return false;
        },
      },
      {
        intercept: () => {
          asked.push('b');
          throw new Error('boom');
        },
      },
      {
        intercept: () => {
          asked.push('c');
          return true;
        },
      },
      {
        intercept: () => {
          asked.push('d');
          return true;
        },
      },
    );
    expect(hooks.intercept?.(req, res, ctx)).toBe(true);
    expect(asked).toEqual(['a', 'b', 'c']);
    const none = composeHooks({ intercept: () => false }, { intercept: () => false });
    expect(none.intercept?.(req, res, ctx)).toBe(false);
  });

  it('takes the first rewriteBody and transformResponse that apply', () => {
    const upper = (body: Buffer) => Buffer.from(body.toString().toUpperCase());
    const stream = new PassThrough();
    const hooks = composeHooks(
      { rewriteBody: () => null, transformResponse: () => null },
      {
        rewriteBody: () => {
          throw new Error('boom');
        },
        transformResponse: () => {
          throw new Error('boom');
        },
      },
      { rewriteBody: () => upper, transformResponse: () => stream },
      { rewriteBody: () => () => Buffer.from('late'), transformResponse: () => new PassThrough() },
    );
    expect(hooks.rewriteBody?.(ctx, req, 200, {})).toBe(upper);
    expect(hooks.transformResponse?.(ctx, req, 200, {})).toBe(stream);
    const none = composeHooks(
      { rewriteBody: () => null },
      { transformResponse: () => null },
      {
        transformResponse: () => null,
      },
    );
    expect(none.rewriteBody?.(ctx, req, 200, {})).toBeNull();
    expect(none.transformResponse?.(ctx, req, 200, {})).toBeNull();
  });
});
