import { describe, expect, it } from 'vitest';
import { AUTH, testApp } from '../memory-ports.test-helpers.js';

const post = (payload: unknown, headers: Record<string, string> = {}) => ({
  method: 'POST' as const,
  url: '/routes',
  headers: { ...AUTH, 'content-type': 'application/json', ...headers },
  payload: typeof payload === 'string' ? payload : JSON.stringify(payload),
});

describe('POST /routes', () => {
  it('201 with the route object, domain lowercased, rate_limit_rps null, under_attack false; audit route_add', async () => {
    const { app, store, audit } = testApp();
    const res = await app.inject(
      post({ domain: 'App.Example.COM', upstream: '127.0.0.1:3000', tls: false, source: 'deployer' }),
    );
    expect(res.statusCode).toBe(201);
    expect(res.headers['access-control-allow-origin']).toBe('null');
    expect(res.json()).toEqual({
      domain: 'app.example.com',
      upstream: '127.0.0.1:3000',
      tls: false,
      rate_limit_rps: null,
      under_attack: false,
      source: 'deployer',
    });
    expect(store.table.get('app.example.com')?.source).toBe('deployer');
    expect(audit).toEqual([{ action: 'route_add', principal: 'admin', resource: 'app.example.com' }]);
    await app.close();
  });

  it('replaces the route with the same domain, compared case-insensitively (201 again)', async () => {
    const { app, store } = testApp();
    await app.inject(post({ domain: 'a.example', upstream: '127.0.0.1:1', tls: false }));
    const res = await app.inject(post({ domain: 'A.EXAMPLE', upstream: '[::1]:2', tls: true }));
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({ domain: 'a.example', upstream: '[::1]:2', tls: true, source: null });
    expect(store.list()).toHaveLength(1);
    await app.close();
  });

  it('accepts wildcards, IPv6 upstreams, null source and any Content-Type', async () => {
    const { app } = testApp();
    const ok = [
      post({ domain: '*.example.com', upstream: 'backend.internal:8443', tls: true }),
      post({ domain: 'v6.example', upstream: '[2001:db8::1]:65535', tls: false, source: null }),
      post(
        { domain: 'form.example', upstream: 'h:1', tls: false },
        { 'content-type': 'application/x-www-form-urlencoded' },
      ),
      post({ domain: 'text.example', upstream: 'h:1', tls: false }, { 'content-type': 'text/plain' }),
    ];
    for (const req of ok) expect((await app.inject(req)).statusCode, req.payload).toBe(201);
    await app.close();
  });

  const bad: Array<[string, unknown, string]> = [
    ['malformed JSON', '{"domain":', 'invalid JSON: '],
    ['empty body', '', 'invalid JSON: request body is empty'],
    ['array body', '[]', 'invalid JSON: body must be object'],
    ['missing tls', { domain: 'a.example', upstream: 'h:1' }, 'invalid JSON: tls is required'],
    ['tls not boolean', { domain: 'a.example', upstream: 'h:1', tls: 'yes' }, 'invalid JSON: tls must be boolean'],
    [
      'unknown field',
      { domain: 'a.example', upstream: 'h:1', tls: false, under_attack: true },
      'invalid JSON: body has unknown property "under_attack"',
    ],
    ['missing domain', { upstream: 'h:1', tls: false }, 'invalid domain: domain is required'],
    ['domain not a string', { domain: 7, upstream: 'h:1', tls: false }, 'invalid domain: domain must be a string'],
    ['empty domain', { domain: '', upstream: 'h:1', tls: false }, 'invalid domain: domain is empty'],
    ['space in domain', { domain: 'a b.example', upstream: 'h:1', tls: false }, 'invalid domain: '],
    ['leading hyphen', { domain: '-a.example', upstream: 'h:1', tls: false }, 'invalid domain: '],
    [
      'empty label',
      { domain: 'a..example', upstream: 'h:1', tls: false },
      'invalid domain: "a..example" has an empty label',
    ],
    ['inner wildcard', { domain: 'a.*.example', upstream: 'h:1', tls: false }, 'invalid domain: '],
    ['bare wildcard', { domain: '*', upstream: 'h:1', tls: false }, 'invalid domain: '],
    ['label of 64', { domain: `${'a'.repeat(64)}.example`, upstream: 'h:1', tls: false }, 'invalid domain: '],
    ['254 characters', { domain: `${'a.'.repeat(126)}ab`, upstream: 'h:1', tls: false }, 'invalid domain: '],
    [
      'issue 20: U+212A KELVIN SIGN in the domain',
      { domain: '\u212aelvin.test', upstream: 'h:1', tls: false },
      'invalid domain: "\u212aelvin.test" has a character outside ASCII (send an internationalized name as punycode, xn--…)',
    ],
    ['missing upstream', { domain: 'a.example', tls: false }, 'invalid upstream address: upstream is required'],
    ['no port', { domain: 'a.example', upstream: '127.0.0.1', tls: false }, 'invalid upstream address: '],
    ['port 0', { domain: 'a.example', upstream: '127.0.0.1:0', tls: false }, 'invalid upstream address: '],
    ['port 65536', { domain: 'a.example', upstream: '127.0.0.1:65536', tls: false }, 'invalid upstream address: '],
    ['scheme', { domain: 'a.example', upstream: 'http://h:80', tls: false }, 'invalid upstream address: '],
    ['bare IPv6', { domain: 'a.example', upstream: '::1:80', tls: false }, 'invalid upstream address: '],
    ['bad IPv6', { domain: 'a.example', upstream: '[zz::1]:80', tls: false }, 'invalid upstream address: '],
    ['source with space', { domain: 'a.example', upstream: 'h:1', tls: false, source: 'a b' }, 'invalid source: '],
    [
      'source number',
      { domain: 'a.example', upstream: 'h:1', tls: false, source: 3 },
      'invalid source: source must be a string',
    ],
  ];
  for (const [name, payload, message] of bad) {
    it(`400 for ${name}, envelope, nothing written`, async () => {
      const { app, store, audit } = testApp();
      const res = await app.inject(post(payload));
      expect(res.statusCode).toBe(400);
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(res.headers['access-control-allow-origin']).toBe('null');
      const body = res.json() as { error: string };
      expect(Object.keys(body)).toEqual(['error']);
      if (message.endsWith(': ')) expect(body.error.startsWith(message)).toBe(true);
      else expect(body.error).toBe(message);
      expect(store.writes).toBe(0);
      expect(audit).toEqual([]);
      await app.close();
    });
  }

  it('413 request body too large over 64 KB; exactly 64 KB is read', async () => {
    const { app, store } = testApp();
    const padded = (size: number) => {
      const base = JSON.stringify({ domain: 'a.example', upstream: 'h:1', tls: false });
      return `${base.slice(0, -1)}${' '.repeat(size - base.length)}}`;
    };
    const over = await app.inject(post(padded(64 * 1024 + 1)));
    expect(over.statusCode).toBe(413);
    expect(over.json()).toEqual({ error: 'request body too large' });
    expect(over.headers['access-control-allow-origin']).toBe('null');
    expect(store.writes).toBe(0);
    expect((await app.inject(post(padded(64 * 1024)))).statusCode).toBe(201);
    await app.close();
  });

  it('401 without token and 429 over the global limit', async () => {
    const { app } = testApp({ rateLimit: { max: 1, windowMs: 60_000 } });
    expect((await app.inject({ ...post({}), headers: {} })).statusCode).toBe(401);
    expect((await app.inject(post({ domain: 'a.example', upstream: 'h:1', tls: false }))).statusCode).toBe(201);
    const limited = await app.inject(post({ domain: 'b.example', upstream: 'h:1', tls: false }));
    expect(limited.statusCode).toBe(429);
    expect(limited.json()).toEqual({ error: 'rate limit exceeded' });
    await app.close();
  });
});
