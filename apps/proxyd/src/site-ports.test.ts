import http from 'node:http';
import net from 'node:net';
import { routesFromConfig } from '@proxyd/proxy-core';
import { parse } from '@proxyd/proxyfile';
import { afterEach, describe, expect, it } from 'vitest';
import { type DataPlane, startDataPlane } from './data-plane.js';
import { SitePortPolicy, sitePortsOf } from './site-ports.js';

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

function get(port: number, host: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/', headers: { host } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        body += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
  });
}

describe('sitePortsOf', () => {
  const config = parse(
    [
      '{',
      '\thttp_port 8080',
      '\thttps_port 8443',
      '}',
      'http://plain.test:9001, secure.test:9002 {',
      '\trespond',
      '}',
      'off.test:9003 {',
      '\ttls off',
      '\trespond',
      '}',
      'main.test, local.test:8080, other.test:8443 {',
      '\trespond',
      '}',
    ].join('\n'),
  );

  it('lists the ports addresses name besides http_port and https_port, with their protocol', () => {
    const { ports, byDomain, conflicts } = sitePortsOf(routesFromConfig(config), 8080, 8443);
    expect([...ports.values()]).toEqual([
      { port: 9001, tls: false, domain: 'plain.test' },
      { port: 9002, tls: true, domain: 'secure.test' },
      { port: 9003, tls: false, domain: 'off.test' },
    ]);
    expect(Object.fromEntries(byDomain)).toEqual({ 'plain.test': 9001, 'secure.test': 9002, 'off.test': 9003 });
    expect(conflicts).toEqual([]);
  });

  it('keeps the first protocol of a port and serves a route that asks otherwise nowhere', () => {
    const routes = routesFromConfig(parse('http://a.test:9001 {\n\trespond\n}\n'));
    const other = routesFromConfig(parse('b.test:9001 {\n\trespond\n}\n'));
    const { ports, byDomain, conflicts } = sitePortsOf([...routes, ...other], 80, 443);
    expect([...ports.values()]).toEqual([{ port: 9001, tls: false, domain: 'a.test' }]);
    expect(conflicts).toEqual([{ port: 9001, kept: 'a.test', refused: 'b.test' }]);
    const policy = new SitePortPolicy();
    policy.byDomain = byDomain;
    expect(policy.allows('b.test', 9001)).toBe(false);
    expect(policy.allows('a.test', 9001)).toBe(true);
  });
});

describe('site ports on the data plane (real loopback listeners)', () => {
  let plane: DataPlane | undefined;
  afterEach(async () => {
    await plane?.close();
    plane = undefined;
  });

  it('serves a site named with a port on that port only, and other sites only on the main listener', async () => {
    const sitePort = await freePort();
    const config = parse(
      [
        `http://pinned.test:${sitePort} {`,
        '\trespond "pinned"',
        '}',
        'http://main.test {',
        '\trespond "main"',
        '}',
      ].join('\n'),
    );
    config.global.http_port = 0;
    plane = await startDataPlane(config, routesFromConfig(config), {}, { bindHost: '127.0.0.1' });
    const mainPort = plane.httpAddress.port;
    expect(plane.sitePortAddresses).toEqual([{ host: '127.0.0.1', port: sitePort, tls: false }]);
    expect(await get(sitePort, `pinned.test:${sitePort}`)).toEqual({ status: 200, body: 'pinned' });
    expect(await get(mainPort, 'pinned.test')).toEqual({ status: 404, body: 'no route for host\n' });
    expect(await get(sitePort, 'main.test')).toEqual({ status: 404, body: 'no route for host\n' });
    expect(await get(mainPort, 'main.test')).toEqual({ status: 200, body: 'main' });
  });

  it('opens a site port that routes published later name', async () => {
    const config = parse('http://main.test {\n\trespond "main"\n}\n');
    config.global.http_port = 0;
    plane = await startDataPlane(config, routesFromConfig(config), {}, { bindHost: '127.0.0.1' });
    const sitePort = await freePort();
    const next = parse(
      `http://main.test {\n\trespond "main"\n}\nhttp://late.test:${sitePort} {\n\trespond "late"\n}\n`,
    );
    plane.setRoutes(routesFromConfig(next), 2);
    for (let i = 0; i < 100 && plane.sitePortAddresses.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(await get(sitePort, 'late.test')).toEqual({ status: 200, body: 'late' });
    expect(await get(plane.httpAddress.port, 'late.test')).toEqual({ status: 404, body: 'no route for host\n' });
  });

  it('fails to start, naming the site, when a site port is taken', async () => {
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const taken = (blocker.address() as net.AddressInfo).port;
    try {
      const config = parse(`http://busy.test:${taken} {\n\trespond\n}\n`);
      config.global.http_port = 0;
      await expect(startDataPlane(config, routesFromConfig(config), {}, { bindHost: '127.0.0.1' })).rejects.toThrow(
        `site port ${taken} (busy.test): listen EADDRINUSE`,
      );
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  });
});
