import { Writable } from 'node:stream';
import type { RequestRecord } from '@proxyd/model';
import { describe, expect, it } from 'vitest';
import { ACCESS_TARGET, accessLogEnabled, createAccessLog } from './access-log.js';
import { createLogging, parseLogFilter } from './logging.js';

const record: RequestRecord = {
  host: 'app.test',
  domain: 'app.test',
  analytics: true,
  method: 'GET',
  path: '/a/b',
  status: 200,
  bytesSent: 42,
  durationMs: 7,
  clientIp: '203.0.113.9',
  referer: 'https://ref.test/',
  userAgent: 'curl/8',
  contentType: 'text/plain',
  startedAt: 1_700_000_000_000,
};

describe('access log', () => {
  it('is off unless PROXY_LOG names proxy::access (or a parent) at info or lower', () => {
    for (const spec of [undefined, '', 'info', 'debug', 'trace', 'warn,proxy::access=warn', 'proxy::accessx=info']) {
      expect(accessLogEnabled(parseLogFilter(spec)), String(spec)).toBe(false);
    }
    for (const spec of ['warn,proxy::access=info', 'proxy::access=debug', 'off,proxy=info']) {
      expect(accessLogEnabled(parseLogFilter(spec)), spec).toBe(true);
    }
    // The most specific directive wins.
    expect(accessLogEnabled(parseLogFilter('proxy=info,proxy::access=off'))).toBe(false);
    expect(accessLogEnabled(parseLogFilter('proxy=off,proxy::access=info'))).toBe(true);
  });

  it('gives no hook at all when off', () => {
    expect(createAccessLog(createLogging('info'))).toBeUndefined();
  });

  it('writes one JSON line per request with the client IP and the request fields', async () => {
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const line of chunk.toString().split('\n')) if (line) lines.push(JSON.parse(line));
        done();
      },
    });
    const hook = createAccessLog(createLogging(`warn,${ACCESS_TARGET}=info`, sink));
    expect(hook).toBeDefined();
    hook?.(record);
    hook?.({ ...record, referer: undefined, userAgent: undefined, status: 0, bytesSent: 0, protocol: 'h2' });
    await new Promise((r) => setImmediate(r));
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({
      level: 'info',
      target: ACCESS_TARGET,
      msg: 'request',
      client_ip: '203.0.113.9',
      host: 'app.test',
      method: 'GET',
      path: '/a/b',
      status: 200,
      bytes: 42,
      duration_ms: 7,
      protocol: 'h1',
      user_agent: 'curl/8',
      referer: 'https://ref.test/',
    });
    expect(lines[1]).toMatchObject({ status: 0, bytes: 0, protocol: 'h2', user_agent: null, referer: null });
  });
});
