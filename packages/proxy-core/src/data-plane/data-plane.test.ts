import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { get } from '../loopback.test-helpers.js';
import { type Config, defaultGlobalOptions, emptySite, type RouteSpec, type Site } from '../model/index.js';
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
    plane.setRoutes(next.routes, 2);
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
