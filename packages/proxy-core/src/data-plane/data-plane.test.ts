import http from 'node:http';
import net from 'node:net';
import { type Config, defaultGlobalOptions, emptySite, type RouteSpec, type Site } from '@proxyd/model';
import { afterEach, describe, expect, it } from 'vitest';
import { get } from '../loopback.test-helpers.js';
import { DataPlane } from './data-plane.js';

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

/** `http://host[:port] { respond "body" }` for each entry, http_port 0: the config and its routes. */
function plainSites(entries: [host: string, port: number | null, body: string][]): {
  config: Config;
  routes: RouteSpec[];
} {
  const sites: Site[] = entries.map(([host, port, body]) => {
    const site = emptySite([{ scheme: 'http', host, port }]);
    site.handler = { kind: 'respond', status: 200, body };
    return site;
  });
  const global = defaultGlobalOptions();
  global.http_port = 0;
  const routes = sites.map(
    (site): RouteSpec => ({
      domain: site.addresses[0]?.host ?? '',
      origin: 'proxyfile',
      source: null,
      site,
    }),
  );
  return { config: { global, sites }, routes };
}

/** A GET to `address:port` (the connection's local address on the proxy is `address`). */
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

// Linux answers every address of 127.0.0.0/8 on loopback: 127.0.0.2 and
// 127.0.0.3 are distinct local addresses a test can bind and connect to.
describe('bind and default_bind on the data plane (real loopback addresses)', () => {
  let plane: DataPlane | undefined;
  afterEach(async () => {
    await plane?.close();
    plane = undefined;
  });

  it('binds default_bind, opens what a site binds, and serves each site only at its own addresses', async () => {
    const { config, routes } = plainSites([
      ['default.test', null, 'default'],
      ['own.test', null, 'own'],
    ]);
    config.global.default_bind = ['127.0.0.1'];
    (routes[1] as RouteSpec).site.bind = ['127.0.0.2'];
    plane = await DataPlane.start(config, routes, {}, {});
    const port = plane.httpAddress.port;
    expect(plane.httpAddress.host).toBe('127.0.0.1');
    expect(await getAt('127.0.0.1', port, 'default.test')).toMatchObject({ status: 200, body: 'default' });
    expect(await getAt('127.0.0.2', port, 'own.test')).toMatchObject({ status: 200, body: 'own' });
    // Each site is refused at the other's address.
    expect(await getAt('127.0.0.1', port, 'own.test')).toMatchObject({ status: 404, body: 'no route for host\n' });
    expect(await getAt('127.0.0.2', port, 'default.test')).toMatchObject({ status: 404 });
    // Nothing listens on an address neither names.
    await expect(getAt('127.0.0.3', port, 'default.test')).rejects.toThrow(/ECONNREFUSED/);
  });

  it('keeps a site to its address behind the 0.0.0.0 listener (one wildcard listener, no EADDRINUSE)', async () => {
    const { config, routes } = plainSites([
      ['any.test', null, 'any'],
      ['local.test', null, 'local'],
    ]);
    (routes[1] as RouteSpec).site.bind = ['127.0.0.2'];
    plane = await DataPlane.start(config, routes, {}, {});
    const port = plane.httpAddress.port;
    expect(plane.httpAddress.host).toBe('0.0.0.0');
    expect(await getAt('127.0.0.3', port, 'any.test')).toMatchObject({ status: 200, body: 'any' });
    expect(await getAt('127.0.0.2', port, 'local.test')).toMatchObject({ status: 200, body: 'local' });
    expect(await getAt('127.0.0.1', port, 'local.test')).toMatchObject({ status: 404 });
  });

  it('opens the address of a site a later route set binds, on the main and the site ports', async () => {
    const { config, routes } = plainSites([['first.test', null, 'first']]);
    config.global.default_bind = ['127.0.0.1'];
    plane = await DataPlane.start(config, routes, {}, {});
    const port = plane.httpAddress.port;
    const sitePort = await freePort();
    const next = plainSites([
      ['first.test', null, 'first'],
      ['late.test', null, 'late'],
      ['pinned.test', sitePort, 'pinned'],
    ]);
    (next.routes[1] as RouteSpec).site.bind = ['127.0.0.3'];
    (next.routes[2] as RouteSpec).site.bind = ['127.0.0.3'];
    plane.setRoutes({ routes: next.routes, version: 2, changes: null });
    const until = Date.now() + 2_000;
    let reply = await getAt('127.0.0.3', port, 'late.test').catch(() => null);
    while (reply === null && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 10));
      reply = await getAt('127.0.0.3', port, 'late.test').catch(() => null);
    }
    expect(reply).toMatchObject({ status: 200, body: 'late' });
    expect(await getAt('127.0.0.3', sitePort, 'pinned.test')).toMatchObject({ status: 200, body: 'pinned' });
    // The site port binds only what its site names.
    await expect(getAt('127.0.0.1', sitePort, 'pinned.test')).rejects.toThrow(/ECONNREFUSED/);
    expect(await getAt('127.0.0.3', port, 'first.test')).toMatchObject({ status: 404 });
  });

  it('listens on IPv6 ::1 when default_bind names it', async () => {
    const { config, routes } = plainSites([['v6.test', null, 'v6']]);
    config.global.default_bind = ['::1'];
    plane = await DataPlane.start(config, routes, {}, {});
    expect(await getAt('::1', plane.httpAddress.port, 'v6.test')).toMatchObject({ status: 200, body: 'v6' });
    await expect(getAt('127.0.0.1', plane.httpAddress.port, 'v6.test')).rejects.toThrow(/ECONNREFUSED/);
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
    const { config, routes } = plainSites([
      ['pinned.test', sitePort, 'pinned'],
      ['main.test', null, 'main'],
    ]);
    plane = await DataPlane.start(config, routes, {}, { bindHost: '127.0.0.1' });
    const mainPort = plane.httpAddress.port;
    expect(plane.sitePortAddresses).toEqual([{ host: '127.0.0.1', port: sitePort, tls: false }]);
    expect(await get(sitePort, `pinned.test:${sitePort}`)).toMatchObject({ status: 200, body: 'pinned' });
    expect(await get(mainPort, 'pinned.test')).toMatchObject({ status: 404, body: 'no route for host\n' });
    expect(await get(sitePort, 'main.test')).toMatchObject({ status: 404, body: 'no route for host\n' });
    expect(await get(mainPort, 'main.test')).toMatchObject({ status: 200, body: 'main' });
  });

  it('opens a site port that routes published later name', async () => {
    const { config, routes } = plainSites([['main.test', null, 'main']]);
    plane = await DataPlane.start(config, routes, {}, { bindHost: '127.0.0.1' });
    const sitePort = await freePort();
    const next = plainSites([
      ['main.test', null, 'main'],
      ['late.test', sitePort, 'late'],
    ]);
    plane.setRoutes({ routes: next.routes, version: 2, changes: null });
    for (let i = 0; i < 100 && plane.sitePortAddresses.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(await get(sitePort, 'late.test')).toMatchObject({ status: 200, body: 'late' });
    expect(await get(plane.httpAddress.port, 'late.test')).toMatchObject({ status: 404, body: 'no route for host\n' });
  });

  it('fails to start, naming the site, when a site port is taken', async () => {
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const taken = (blocker.address() as net.AddressInfo).port;
    try {
      const { config, routes } = plainSites([['busy.test', taken, '']]);
      await expect(DataPlane.start(config, routes, {}, { bindHost: '127.0.0.1' })).rejects.toThrow(
        `site port ${taken} (busy.test): listen EADDRINUSE`,
      );
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  });

  it('refuses to start when two routes ask one site port for different protocols', async () => {
    const port = await freePort();
    const { config, routes } = plainSites([
      ['a.test', port, 'a'],
      ['b.test', port, 'b'],
    ]);
    const b = routes[1] as RouteSpec;
    b.site.addresses[0] = { scheme: null, host: 'b.test', port };
    await expect(DataPlane.start(config, routes, {}, { bindHost: '127.0.0.1' })).rejects.toThrow(
      `site port ${port}: a.test and b.test ask it for different protocols (plain HTTP and HTTPS)`,
    );
  });
});
