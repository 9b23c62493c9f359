import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningProxyd, request, startProxyd, startUpstream } from './support/proxyd.js';

describe('walking skeleton: the built proxyd', () => {
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  let proxyd: RunningProxyd;

  beforeAll(async () => {
    upstream = await startUpstream((req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' }).end(`hello from upstream, host=${req.headers.host}`);
    });
    proxyd = await startProxyd({
      sites: `http://app.test {\n\treverse_proxy 127.0.0.1:${upstream.port}\n}\n`,
    });
  });

  afterAll(async () => {
    await proxyd?.stop();
    await upstream?.close();
  });

  it('routes a request by Host to the upstream', async () => {
    const res = await request(proxyd.httpPort, { headers: { host: 'app.test' } });
    expect(res.status).toBe(200);
    expect(res.body).toContain('hello from upstream');
  });

  it('matches the host case-insensitively and ignores the port', async () => {
    const res = await request(proxyd.httpPort, { headers: { host: `APP.Test:${proxyd.httpPort}` } });
    expect(res.status).toBe(200);
  });

  it('answers an unknown host without contacting any upstream', async () => {
    const res = await request(proxyd.httpPort, { headers: { host: 'nobody.test' } });
    expect(res.status).toBe(404);
    expect(res.body).toBe('no route for host\n');
  });

  it('serves GET /health on the admin listener', async () => {
    const res = await request(proxyd.adminPort, { path: '/health' });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const body = JSON.parse(res.body) as { status: string; uptime_secs: number };
    expect(body.status).toBe('ok');
    expect(Number.isInteger(body.uptime_secs)).toBe(true);
    expect(body.uptime_secs).toBeGreaterThanOrEqual(0);
  });

  it('stops cleanly on SIGTERM', async () => {
    const code = await proxyd.stop();
    expect(code).toBe(0);
  });
});
