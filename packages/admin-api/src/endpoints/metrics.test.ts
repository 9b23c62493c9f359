import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { AUTH, testApp } from '../memory-ports.test-helpers.js';

describe('GET /metrics', () => {
  it('200 with the exposition and exactly text/plain; version=0.0.4', async () => {
    const { app } = testApp({ metrics: { render: async () => '# TYPE up gauge\nup 1\n' } });
    const res = await app.inject({ method: 'GET', url: '/metrics', headers: AUTH });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/plain; version=0.0.4');
    expect(res.headers['access-control-allow-origin']).toBe('null');
    expect(res.body).toBe('# TYPE up gauge\nup 1\n');
    await app.close();
  });

  it('404 when metrics are disabled (--no-metrics), envelope', async () => {
    const { app } = testApp();
    const res = await app.inject({ method: 'GET', url: '/metrics', headers: AUTH });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ error: 'metrics disabled' });
    await app.close();
  });

  it('401 without token, 429 over the limit', async () => {
    const { app } = testApp({ rateLimit: { max: 1, windowMs: 60_000 }, metrics: { render: async () => '' } });
    expect((await app.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(401);
    expect((await app.inject({ method: 'GET', url: '/metrics', headers: AUTH })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/metrics', headers: AUTH })).statusCode).toBe(429);
    await app.close();
  });

  it("records the admin app's own requests (fastify-metrics) in the shared registry, by route pattern and status class", async () => {
    const registry = new Registry();
    const { app } = testApp({ metricsRegistry: registry, metrics: { render: () => registry.metrics() } });
    await app.inject({ method: 'GET', url: '/routes', headers: AUTH });
    await app.inject({ method: 'DELETE', url: '/routes/some.example', headers: AUTH });
    await app.inject({ method: 'GET', url: '/routes' });
    await app.inject({ method: 'GET', url: '/no/such/path', headers: AUTH });
    const text = (await app.inject({ method: 'GET', url: '/metrics', headers: AUTH })).body;
    expect(text).toContain('# TYPE proxyd_admin_http_request_duration_seconds histogram');
    expect(text).toMatch(
      /proxyd_admin_http_request_duration_seconds_count\{method="GET",route="\/routes",status_code="2xx"\} 1/,
    );
    expect(text).toMatch(
      /proxyd_admin_http_request_duration_seconds_count\{method="GET",route="\/routes",status_code="4xx"\} 1/,
    );
    expect(text).toMatch(/route="\/routes\/:domain",status_code="4xx"/);
    expect(text).not.toContain('/no/such/path');
    expect(text).not.toContain('some.example');
    await app.close();
  });

  it('two apps can share one registry one after the other (daemon restart in tests)', async () => {
    const registry = new Registry();
    const first = testApp({ metricsRegistry: registry });
    await first.app.ready();
    await first.app.close();
    const second = testApp({ metricsRegistry: registry });
    await second.app.ready();
    await second.app.close();
  });
});
