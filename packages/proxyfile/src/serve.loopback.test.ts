// Proxyfile text → parse → routesFromConfig → proxy-core's DataPlane on real
// loopback listeners: the forms Caddy users write, answered as Caddy would.
import http from 'node:http';
import net from 'node:net';
import { DataPlane } from '@proxyd/proxy-core';
import { afterEach, describe, expect, it } from 'vitest';
import { parse } from './parse.js';
import { routesFromConfig } from './route-source.js';

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

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** One request to 127.0.0.1:`port` with a Host header (and optional method, headers). */
function request(
  port: number,
  host: string,
  path = '/',
  options: { method?: string; headers?: http.OutgoingHttpHeaders } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: options.method ?? 'GET',
        headers: { ...options.headers, host },
        agent: false,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          body += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const planes: DataPlane[] = [];
const servers: http.Server[] = [];
afterEach(async () => {
  for (const plane of planes.splice(0)) await plane.close();
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
});

/** Free ports for the http_port and the https_port, and the global block naming them. */
async function mainPorts(): Promise<{ http: number; global: string }> {
  const [httpPort, httpsPort] = [await freePort(), await freePort()];
  return { http: httpPort, global: `{\n\thttp_port ${httpPort}\n\thttps_port ${httpsPort}\n}\n` };
}

/** Parses the Proxyfile and serves its routes as the daemon does. */
async function serve(text: string): Promise<DataPlane> {
  const config = parse(text, { env: {} });
  const plane = await DataPlane.start(config, routesFromConfig(config), {}, { bindHost: '127.0.0.1' });
  planes.push(plane);
  return plane;
}

/** An upstream on 127.0.0.1 that answers `name <method> <url>` and echoes `x-seen-*` request headers. */
async function upstream(name: string, port = 0): Promise<number> {
  const server = http.createServer((req, res) => {
    const seen: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (k.startsWith('x-up-')) seen[k] = String(v);
    res.setHeader('x-seen', JSON.stringify(seen));
    res.end(`${name} ${req.method} ${req.url}`);
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  return (server.address() as net.AddressInfo).port;
}

describe('catch-all sites', () => {
  it('answers any host on its port, after the named sites there', async () => {
    const { http: main, global } = await mainPorts();
    const site = await freePort();
    await serve(`${global}
http://named.test {
	respond "named"
}

http://pinned.test:${site} {
	respond "pinned"
}

http:// {
	respond "main catch-all"
}

:${site} {
	respond "site-port catch-all"
}
`);
    expect(await request(main, 'named.test')).toMatchObject({ status: 200, body: 'named' });
    expect(await request(main, 'other.test:1234')).toMatchObject({ status: 200, body: 'main catch-all' });
    // A host pinned to the site port is not served on the main listener: the catch-all answers there.
    expect(await request(main, 'pinned.test')).toMatchObject({ body: 'main catch-all' });
    expect(await request(site, 'pinned.test')).toMatchObject({ status: 200, body: 'pinned' });
    expect(await request(site, 'anything.test')).toMatchObject({ status: 200, body: 'site-port catch-all' });
    // named.test lives on the main listeners: on the site port the catch-all answers.
    expect(await request(site, 'named.test')).toMatchObject({ body: 'site-port catch-all' });
  });

  it("serves Debian's default form (:80 → the http_port) with root * and file_server", async () => {
    const { http: main } = await mainPorts();
    const dir = await import('node:fs/promises').then((fs) => fs.mkdtemp('/tmp/proxyfile-catch-all-'));
    await import('node:fs/promises').then((fs) => fs.writeFile(`${dir}/index.html`, '<p>debian</p>'));
    await serve(`{
	http_port ${main}
}

:${main} {
	root * ${dir}
	file_server
}
`);
    expect(await request(main, 'whatever.example')).toMatchObject({ status: 200, body: '<p>debian</p>' });
    expect(await request(main, '203.0.113.7')).toMatchObject({ status: 200 });
  });

  it('without a catch-all, an unknown host is still 404', async () => {
    const { http: main, global } = await mainPorts();
    await serve(`${global}\nhttp://named.test {\n\trespond "named"\n}\n`);
    expect(await request(main, 'other.test')).toMatchObject({ status: 404, body: 'no route for host\n' });
  });

  it('a single site without braces, proxying to ":port" (localhost)', async () => {
    const { http: main, global } = await mainPorts();
    const up = await upstream('app');
    await serve(`${global}\nhttp://app.test\nreverse_proxy :${up}\n`);
    expect(await request(main, 'app.test', '/x?y=1')).toMatchObject({ status: 200, body: 'app GET /x?y=1' });
  });
});
