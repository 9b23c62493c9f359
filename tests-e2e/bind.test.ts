import { readFile, writeFile } from 'node:fs/promises';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, adminCall } from './support/admin.js';
import { type RunningProxyd, startProxyd } from './support/proxyd.js';

/** A GET sent to `address:port`: the proxy sees `address` as the connection's local address. */
function getAt(address: string, port: number, host: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: address, port, path: '/', headers: { host }, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        body += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

// `default_bind` and a site's `bind` against the built daemon (with its
// default workers, and again with PROXY_WORKERS=1). Linux answers all of
// 127.0.0.0/8 on loopback, so 127.0.0.2 and 127.0.0.3 are local addresses
// of their own that nothing else on the machine listens on at these ports.
describe('bind and default_bind (built daemon)', () => {
  let proxyd: RunningProxyd;

  beforeAll(async () => {
    proxyd = await startProxyd({
      global: '\tdefault_bind 127.0.0.1\n',
      sites:
        'http://everywhere.test {\n\trespond "default"\n}\n\nhttp://inside.test {\n\tbind 127.0.0.2\n\trespond "inside"\n}\n',
      env: { PROXY_ADMIN_TOKEN: ADMIN_TOKEN },
    });
  });

  afterAll(async () => {
    await proxyd?.stop();
  });

  it('listens only where default_bind and the sites say, and serves each site at its own addresses', async () => {
    const port = proxyd.httpPort;
    expect(await getAt('127.0.0.1', port, 'everywhere.test')).toEqual({ status: 200, body: 'default' });
    expect(await getAt('127.0.0.2', port, 'inside.test')).toEqual({ status: 200, body: 'inside' });
    expect(await getAt('127.0.0.1', port, 'inside.test')).toEqual({ status: 404, body: 'no route for host\n' });
    expect(await getAt('127.0.0.2', port, 'everywhere.test')).toEqual({ status: 404, body: 'no route for host\n' });
    await expect(getAt('127.0.0.3', port, 'everywhere.test')).rejects.toThrow(/ECONNREFUSED/);
  });

  it('a reload that binds a site to a new address opens a listener there', async () => {
    const text = await readFile(proxyd.configPath, 'utf8');
    await writeFile(proxyd.configPath, `${text}\nhttp://later.test {\n\tbind 127.0.0.3\n\trespond "later"\n}\n`);
    const reloaded = await adminCall(proxyd.adminPort, 'POST', '/reload');
    expect(reloaded.status).toBe(200);
    const until = Date.now() + 5_000;
    let reply = await getAt('127.0.0.3', proxyd.httpPort, 'later.test').catch(() => null);
    while (reply === null && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 20));
      reply = await getAt('127.0.0.3', proxyd.httpPort, 'later.test').catch(() => null);
    }
    expect(reply).toEqual({ status: 200, body: 'later' });
    expect(await getAt('127.0.0.1', proxyd.httpPort, 'later.test')).toMatchObject({ status: 404 });
  });
});
