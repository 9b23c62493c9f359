import type { RequestRecord } from '@proxyd/model';
import { describe, expect, it } from 'vitest';
import { formatSiteLogLine } from './site-log-line.js';

const record: RequestRecord = {
  host: 'app.example.com',
  domain: 'app.example.com',
  analytics: true,
  method: 'GET',
  path: '/a/"quoted"/ü',
  status: 200,
  bytesSent: 42,
  durationMs: 7,
  bytesReceived: 11,
  clientIp: '203.0.113.9',
  referer: 'https://ref.example/',
  userAgent: 'curl/8 "x"',
  contentType: 'text/plain',
  startedAt: 1_700_000_000_000,
  protocol: 'h2',
};

describe('site log line', () => {
  it("is one JSON line in Caddy's access-log shape", () => {
    const line = formatSiteLogLine(record);
    expect(line.endsWith('\n')).toBe(true);
    expect(line.indexOf('\n')).toBe(line.length - 1);
    expect(JSON.parse(line)).toEqual({
      level: 'info',
      ts: 1_700_000_000.007,
      logger: 'http.log.access',
      msg: 'handled request',
      request: {
        client_ip: '203.0.113.9',
        proto: 'HTTP/2.0',
        method: 'GET',
        host: 'app.example.com',
        uri: '/a/"quoted"/ü',
        headers: { 'User-Agent': ['curl/8 "x"'], Referer: ['https://ref.example/'] },
      },
      bytes_read: 11,
      duration: 0.007,
      size: 42,
      status: 200,
      resp_headers: { 'Content-Type': ['text/plain'] },
    });
  });

  it('leaves out what the request did not send, and calls HTTP/1.x HTTP/1.1', () => {
    const { referer: _r, userAgent: _u, contentType: _c, protocol: _p, ...bare } = record;
    const parsed = JSON.parse(
      formatSiteLogLine({ ...bare, referer: undefined, userAgent: undefined, contentType: undefined, status: 0 }),
    );
    expect(parsed.request.headers).toEqual({});
    expect(parsed.request.proto).toBe('HTTP/1.1');
    expect(parsed.resp_headers).toBeUndefined();
    expect(parsed.status).toBe(0);
    const { bytesReceived: _b, ...noBody } = record;
    expect(JSON.parse(formatSiteLogLine(noBody)).bytes_read).toBe(0);
    const onlyReferer = JSON.parse(formatSiteLogLine({ ...record, userAgent: undefined }));
    expect(onlyReferer.request.headers).toEqual({ Referer: ['https://ref.example/'] });
  });

  it('rounds times to the microsecond (a monotonic duration carries float noise)', () => {
    const line = formatSiteLogLine({ ...record, durationMs: 0.3261720000000423 });
    expect(line).toContain('"ts":1700000000.000326,');
    expect(line).toContain('"duration":0.000326,');
  });

  it('escapes control characters a request path may carry', () => {
    const line = formatSiteLogLine({ ...record, path: '/a\nb\u0000' });
    expect(line.split('\n')).toHaveLength(2);
    expect(JSON.parse(line).request.uri).toBe('/a\nb\u0000');
  });
});
