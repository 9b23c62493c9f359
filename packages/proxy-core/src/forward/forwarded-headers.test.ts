import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { ClientIpResolver } from '../client-ip.js';
import type { RequestContext } from '../hooks.js';
import { forwardedFor } from './forwarded-headers.js';
import { buildUpstreamHeaders, editUpstreamHeaders, upstreamHeaderPlan } from './upstream-headers.js';

function request(peer: string, raw: string[]): IncomingMessage {
  const headers: Record<string, string> = {};
  for (let i = 0; i < raw.length; i += 2) headers[(raw[i] as string).toLowerCase()] = raw[i + 1] as string;
  return { rawHeaders: raw, headers, socket: { remoteAddress: peer } } as unknown as IncomingMessage;
}

const ctx = { host: 'a.test', clientIp: '203.0.113.9', secure: true } as RequestContext;
const trusting = new ClientIpResolver(['10.0.0.0/8']);

/** The headers the raw (HTTP) path sends, as a lowercase map of the last value per name. */
function sent(raw: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < raw.length; i += 2) out[(raw[i] as string).toLowerCase()] = raw[i + 1] as string;
  return out;
}

describe('forwardedFor', () => {
  it('replaces an untrusted peer’s X-Forwarded-* with the client IP, scheme and Host', () => {
    const req = request('198.51.100.1', [
      'Host',
      'a.test:8443',
      'X-Forwarded-For',
      '1.2.3.4',
      'X-Forwarded-Proto',
      'ftp',
    ]);
    expect(forwardedFor(req, ctx, trusting)).toEqual({
      forwardedFor: '203.0.113.9',
      trusted: false,
      proto: 'https',
      host: 'a.test:8443',
    });
    expect(forwardedFor(req, ctx, undefined).trusted).toBe(false);
  });

  it('appends a trusted proxy (IPv4-mapped peer unmapped) to its list and keeps its values', () => {
    const req = request('::ffff:10.1.2.3', ['Host', 'a.test', 'X-Forwarded-For', '203.0.113.9']);
    expect(forwardedFor(req, ctx, trusting)).toEqual({
      forwardedFor: '203.0.113.9, 10.1.2.3',
      trusted: true,
      proto: 'https',
      host: 'a.test',
    });
  });

  it('gives the HTTP and the WebSocket path the same X-Forwarded-* and header_up result', () => {
    const plan = upstreamHeaderPlan([
      { op: 'set', name: 'X-Site', value: 'one' },
      { op: 'delete', name: 'x-drop' },
    ]);
    for (const peer of ['198.51.100.1', '10.1.2.3']) {
      const raw = [
        'Host',
        'a.test',
        'X-Forwarded-For',
        '203.0.113.9',
        'X-Forwarded-Proto',
        'http',
        'X-Drop',
        'x',
        'Keep-Alive',
        'timeout=5',
        'X_Forwarded_For',
        '6.6.6.6',
        'x_drop',
        'y',
      ];
      const req = request(peer, raw);
      const forwarded = forwardedFor(req, ctx, trusting);
      const http = sent(buildUpstreamHeaders(req, forwarded, plan));
      editUpstreamHeaders(req, forwarded, plan);
      expect(req.headers).toEqual(http);
      expect(http['x-drop']).toBeUndefined();
      expect(http['keep-alive']).toBeUndefined();
      expect(Object.keys(http).filter((name) => name.includes('_'))).toEqual([]);
      expect(http['x-site']).toBe('one');
    }
  });
});
