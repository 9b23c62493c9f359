import { describe, expect, it } from 'vitest';
import { AUTH, ScriptedReload, testApp } from '../memory-ports.test-helpers.js';

const reload = { method: 'POST' as const, url: '/reload', headers: AUTH };
const PARSE_ERROR = 'Proxyfile:3:5: unexpected "}", expected one of: directive name, "{"\n   3 |     }\n     |     ^';

describe('POST /reload', () => {
  it('200 {message}; audit reload', async () => {
    const port = new ScriptedReload([{ ok: true, message: 'reloaded: 3 Proxyfile routes' }]);
    const { app, audit } = testApp({ reload: port });
    const res = await app.inject(reload);
    expect(res.statusCode).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBe('null');
    expect(res.json()).toEqual({ message: 'reloaded: 3 Proxyfile routes' });
    expect(audit).toEqual([{ action: 'reload', principal: 'admin', resource: 'proxyfile' }]);
    await app.close();
  });

  it('400 text/plain; charset=utf-8 with the full parse error text; nothing audited', async () => {
    const { app, audit } = testApp({ reload: new ScriptedReload([{ ok: false, errorText: PARSE_ERROR }]) });
    const res = await app.inject(reload);
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(res.headers['access-control-allow-origin']).toBe('null');
    expect(res.body).toBe(PARSE_ERROR);
    expect(audit).toEqual([]);
    await app.close();
  });

  it('429 reload too soon within 5 s, retry_after equal to Retry-After; the port is not called', async () => {
    const port = new ScriptedReload([]);
    const { app, clock } = testApp({ reload: port });
    expect((await app.inject(reload)).statusCode).toBe(200);
    clock.advance(1_200);
    const res = await app.inject(reload);
    expect(res.statusCode).toBe(429);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.json()).toEqual({ error: 'reload too soon', retry_after: 4 });
    expect(res.headers['retry-after']).toBe('4');
    expect(port.calls).toBe(1);
    clock.advance(3_799);
    expect((await app.inject(reload)).json()).toEqual({ error: 'reload too soon', retry_after: 1 });
    clock.advance(1);
    expect((await app.inject(reload)).statusCode).toBe(200);
    expect(port.calls).toBe(2);
    await app.close();
  });

  it('a failed parse consumes the cooldown too', async () => {
    const port = new ScriptedReload([{ ok: false, errorText: PARSE_ERROR }]);
    const { app, clock } = testApp({ reload: port });
    expect((await app.inject(reload)).statusCode).toBe(400);
    clock.advance(4_000);
    const res = await app.inject(reload);
    expect(res.statusCode).toBe(429);
    expect(res.headers['retry-after']).toBe('1');
    clock.advance(1_000);
    expect((await app.inject(reload)).statusCode).toBe(200);
    await app.close();
  });

  it('concurrent reloads: exactly one runs', async () => {
    const port = new ScriptedReload([]);
    const { app } = testApp({ reload: port });
    const statuses = (await Promise.all([app.inject(reload), app.inject(reload), app.inject(reload)])).map(
      (r) => r.statusCode,
    );
    expect(statuses.sort()).toEqual([200, 429, 429]);
    expect(port.calls).toBe(1);
    await app.close();
  });

  it('a body of any content up to 64 KB is ignored; over 64 KB is 413 and leaves the cooldown unconsumed', async () => {
    const port = new ScriptedReload([]);
    const { app, clock } = testApp({ reload: port });
    const withBody = (payload: string, contentType = 'application/json') =>
      app.inject({ ...reload, headers: { ...AUTH, 'content-type': contentType }, payload });
    const over = await withBody('x'.repeat(65_537), 'text/plain');
    expect(over.statusCode).toBe(413);
    expect(over.json()).toEqual({ error: 'request body too large' });
    expect(port.calls).toBe(0);
    expect((await withBody('not JSON at all')).statusCode).toBe(200);
    clock.advance(5_000);
    expect((await withBody(JSON.stringify({ anything: 'x'.repeat(65_000) }))).statusCode).toBe(200);
    clock.advance(5_000);
    expect((await withBody('x'.repeat(65_536), 'text/plain')).statusCode).toBe(200);
    expect(port.calls).toBe(3);
    await app.close();
  });

  it('501 without a config watcher (exact text, em dash)', async () => {
    const { app } = testApp();
    const res = await app.inject(reload);
    expect(res.statusCode).toBe(501);
    expect(res.json()).toEqual({ error: 'reload not supported — config watcher not active' });
    await app.close();
  });

  it('401 without token, 429 rate limit exceeded over the global limit', async () => {
    const { app, clock } = testApp({ rateLimit: { max: 1, windowMs: 60_000 }, reload: new ScriptedReload([]) });
    expect((await app.inject({ method: 'POST', url: '/reload' })).statusCode).toBe(401);
    expect((await app.inject(reload)).statusCode).toBe(200);
    clock.advance(10_000);
    const res = await app.inject(reload);
    expect(res.statusCode).toBe(429);
    expect(res.json()).toEqual({ error: 'rate limit exceeded' });
    expect(res.headers['retry-after']).toBe('50');
    await app.close();
  });
});
