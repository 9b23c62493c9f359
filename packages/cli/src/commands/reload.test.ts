import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { connectAddress, reloadFailure, reloadTarget } from './reload.js';

describe('proxyd reload: where it sends the request', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'proxyd-reload-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  afterEach(() => vi.unstubAllEnvs());
  const proxyfile = (name: string, text: string) => {
    const file = path.join(dir, name);
    writeFileSync(file, text);
    return file;
  };

  it("reads the admin address from the Proxyfile's global admin option", async () => {
    vi.stubEnv('PROXY_ADMIN_TOKEN', undefined);
    const file = proxyfile('a.Proxyfile', '{\n\tadmin 127.0.0.1:7001\n}\na.test {\n\trespond "a"\n}\n');
    expect(await reloadTarget({ config: file, token: 't' })).toEqual({
      options: { admin: '127.0.0.1:7001', token: 't' },
      describe: `127.0.0.1:7001 (the admin option of ${file})`,
    });
  });

  it('uses PROXY_CONFIG when --config is absent, and the default address when the Proxyfile names none', async () => {
    vi.stubEnv('PROXY_ADMIN_TOKEN', 'from-env');
    vi.stubEnv('PROXY_CONFIG', proxyfile('b.Proxyfile', 'a.test {\n\trespond "a"\n}\n'));
    expect((await reloadTarget({})).options).toEqual({ admin: '127.0.0.1:6190', token: 'from-env' });
  });

  it('--admin and --admin-socket win over the Proxyfile, which is then not read', async () => {
    vi.stubEnv('PROXY_ADMIN_TOKEN', undefined);
    const broken = proxyfile('broken.Proxyfile', 'a.test {\n');
    expect((await reloadTarget({ config: broken, admin: '[::1]:7002' })).options).toEqual({ admin: '[::1]:7002' });
    expect((await reloadTarget({ config: broken, adminSocket: '/run/a.sock', token: 't' })).options).toEqual({
      socketPath: '/run/a.sock',
    });
  });

  it('a Proxyfile that does not parse stops the command with its positioned error', async () => {
    const broken = proxyfile('bad.Proxyfile', '{\n\tadmin nope\n}\n');
    await expect(reloadTarget({ config: broken })).rejects.toThrow(new RegExp(`^${broken}:2:8: `));
  });

  it('reaches a wildcard admin listener on the loopback of its family', () => {
    expect(connectAddress('0.0.0.0:6190')).toBe('127.0.0.1:6190');
    expect(connectAddress('[::]:6190')).toBe('[::1]:6190');
    expect(connectAddress('10.0.0.1:6190')).toBe('10.0.0.1:6190');
  });
});

describe('proxyd reload: what a refusal says', () => {
  const json = (status: number, body: unknown, headers: Record<string, string> = {}) => ({
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', ...headers },
    body: JSON.stringify(body),
  });

  it('a 401 without a token says how to pass one; with one, that it was refused', () => {
    const res = json(401, { error: 'unauthorized' });
    expect(reloadFailure(res, false)).toBe(
      'reload failed (401): unauthorized: no token was sent; pass --token <token> or set PROXY_ADMIN_TOKEN to the one proxyd was started with, or use --admin-socket',
    );
    expect(reloadFailure(res, true)).toContain('unauthorized: the token was refused;');
  });

  it('the cooldown says how long to wait; a parse error comes through whole', () => {
    expect(reloadFailure(json(429, { error: 'reload too soon', retry_after: 4 }, { 'retry-after': '4' }), true)).toBe(
      'reload failed (429): reload too soon (retry in 4 s)',
    );
    const text = { status: 400, headers: { 'content-type': 'text/plain; charset=utf-8' }, body: 'P:2:2: bad' };
    expect(reloadFailure(text, true)).toBe('reload failed (400): P:2:2: bad');
  });
});
