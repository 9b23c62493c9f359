import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningProxyd, request, startProxyd, startUpstream } from './support/proxyd.js';

/** The access-log lines proxyd printed so far. */
function accessLines(proxyd: RunningProxyd): Record<string, unknown>[] {
  return proxyd
    .output()
    .split('\n')
    .filter((line) => line.includes('"proxy::access"'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** Waits until an access-log line for `path` shows up, and returns it. */
async function lineFor(proxyd: RunningProxyd, path: string): Promise<Record<string, unknown>> {
  const end = Date.now() + 5_000;
  for (;;) {
    const line = accessLines(proxyd).find((l) => l.path === path);
    if (line) return line;
    if (Date.now() > end) throw new Error(`no access-log line for ${path} in:\n${proxyd.output()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const SITES = (upstreamPort: number) => `http://app.test {
\treverse_proxy 127.0.0.1:${upstreamPort}
\trate_limit 3/s
}
`;

// The real client IP through the built daemon: the access log and rate_limit
// use it, with and without trusted_proxies (clients simulated from loopback
// with X-Forwarded-For).
describe('client IP in the access log and rate_limit (built daemon)', () => {
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  let trusting: RunningProxyd;
  let plain: RunningProxyd;
  let quiet: RunningProxyd;

  beforeAll(async () => {
    upstream = await startUpstream((_req, res) => res.end('ok'));
    const env = { PROXY_LOG: 'warn,proxy::access=info' };
    trusting = await startProxyd({
      sites: SITES(upstream.port),
      global: '\ttrusted_proxies 127.0.0.1/32\n',
      env,
      ready: 'health',
    });
    plain = await startProxyd({ sites: SITES(upstream.port), env, ready: 'health' });
    quiet = await startProxyd({ sites: SITES(upstream.port) });
  });

  afterAll(async () => {
    await trusting?.stop();
    await plain?.stop();
    await quiet?.stop();
    await upstream?.close();
  });

  it('logs the forwarded client IP when the peer is a trusted proxy', async () => {
    const res = await request(trusting.httpPort, {
      path: '/trusted?q=secret',
      headers: {
        host: 'app.test',
        'x-forwarded-for': '198.51.100.23',
        'user-agent': 'e2e-agent/1',
        referer: 'https://ref.test/page',
      },
    });
    expect(res.status).toBe(200);
    const line = await lineFor(trusting, '/trusted');
    expect(line).toMatchObject({
      level: 'info',
      target: 'proxy::access',
      msg: 'request',
      client_ip: '198.51.100.23',
      host: 'app.test',
      method: 'GET',
      path: '/trusted',
      status: 200,
      bytes: 2,
      user_agent: 'e2e-agent/1',
      referer: 'https://ref.test/page',
    });
    expect(typeof line.duration_ms).toBe('number');
    // The query string is never logged.
    expect(JSON.stringify(accessLines(trusting))).not.toContain('secret');
  });

  it('logs the peer, not a spoofed X-Forwarded-For, without trusted_proxies', async () => {
    const res = await request(plain.httpPort, {
      path: '/untrusted',
      headers: { host: 'app.test', 'x-forwarded-for': '198.51.100.23' },
    });
    expect(res.status).toBe(200);
    expect(await lineFor(plain, '/untrusted')).toMatchObject({
      client_ip: '127.0.0.1',
      user_agent: null,
      referer: null,
    });
  });

  it('logs unrouted requests too, with status 404', async () => {
    await request(trusting.httpPort, {
      path: '/nowhere',
      headers: { host: 'nobody.test', 'x-forwarded-for': '192.0.2.5' },
    });
    // One client IP everywhere: the forwarded client, also for a host without a route.
    expect(await lineFor(trusting, '/nowhere')).toMatchObject({
      client_ip: '192.0.2.5',
      host: 'nobody.test',
      status: 404,
    });
  });

  it('writes no access log when PROXY_LOG does not ask for it', async () => {
    expect((await request(quiet.httpPort, { path: '/silent', headers: { host: 'app.test' } })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 200));
    expect(quiet.output()).toContain('proxyd ready');
    expect(accessLines(quiet)).toEqual([]);
  });

  it('rate-limits each forwarded client on its own, and an IPv6 /64 as one client', async () => {
    const from = (ip: string) =>
      request(trusting.httpPort, { path: '/limited', headers: { host: 'app.test', 'x-forwarded-for': ip } });
    const a: number[] = [];
    for (let i = 0; i < 4; i++) a.push((await from('203.0.113.1')).status);
    expect(a).toEqual([200, 200, 200, 429]);
    expect((await from('203.0.113.2')).status).toBe(200);
    const v6: number[] = [];
    for (const host of ['1', '2', 'ffff', 'abcd:1']) v6.push((await from(`2001:db8:7:1::${host}`)).status);
    expect(v6).toEqual([200, 200, 200, 429]);
    expect((await from('2001:db8:7:2::1')).status).toBe(200);
    // Without trusted_proxies every one of these is the peer, 127.0.0.1: one allowance.
    const peer: number[] = [];
    for (const ip of ['203.0.113.1', '203.0.113.2', '203.0.113.3', '203.0.113.4']) {
      peer.push(
        (await request(plain.httpPort, { path: '/limited', headers: { host: 'app.test', 'x-forwarded-for': ip } }))
          .status,
      );
    }
    expect(peer[0]).toBe(200);
    expect(peer).toContain(429);
  });
});
