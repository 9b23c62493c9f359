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

describe('request placeholders', () => {
  it('fills {host}, {path}, {query}, {uri}, {remote_host} in respond, header, redir and header_up', async () => {
    const { http: main, global } = await mainPorts();
    const up = await upstream('up');
    await serve(`${global}
http://p.test {
	header X-Was "{http.request.host}{path}"
	redir /old/* /new/{http.request.uri.path.remainder}?{query} 301
	redir /moved https://elsewhere.test{uri} 308
	handle /up/* {
		reverse_proxy 127.0.0.1:${up} {
			header_up X-Up-Host {host}
			header_up X-Up-Uri {uri}
			header_up X-Up-Peer {remote_host}
		}
	}
	respond "hello {host} at {path} q={query} from {remote_host} json {\\"a\\":1}"
}
`);
    const hello = await request(main, 'P.test:81', '/a%20b?x=1');
    expect(hello).toMatchObject({ status: 200, body: 'hello p.test at /a%20b q=x=1 from 127.0.0.1 json {"a":1}' });
    expect(hello.headers['x-was']).toBe('p.test/a%20b');
    expect(hello.headers['content-length']).toBe(String(Buffer.byteLength(hello.body)));
    const old = await request(main, 'p.test', '/old/a/b?k=v');
    expect(old.status).toBe(301);
    expect(old.headers.location).toBe('/new/a/b?k=v');
    expect(old.headers['x-was']).toBe('p.test/old/a/b');
    expect((await request(main, 'p.test', '/moved?z=1')).headers.location).toBe('https://elsewhere.test/moved?z=1');
    const proxied = await request(main, 'p.test', '/up/x?y=2');
    expect(proxied.body).toBe('up GET /up/x?y=2');
    expect(JSON.parse(String(proxied.headers['x-seen']))).toEqual({
      'x-up-host': 'p.test',
      'x-up-uri': '/up/x?y=2',
      'x-up-peer': '127.0.0.1',
    });
    expect(proxied.headers['x-was']).toBe('p.test/up/x');
  });
});

describe('named matchers', () => {
  it('route handle, redir, header and reverse_proxy by path, method and header; every condition must hold', async () => {
    const { http: main, global } = await mainPorts();
    const [api, forms, site] = [await upstream('api'), await upstream('forms'), await upstream('site')];
    await serve(`${global}
http://m.test {
	@api path /api/* /v1/*
	@post {
		method POST
		path /forms/*
		header Content-Type application/x-www-form-urlencoded multipart/*
	}
	@legacy header X-Legacy *yes*
	@anonymous header !Authorization
	@ghost method DELETE

	redir @legacy /modern{uri} 308
	header @anonymous X-Anonymous yes
	header @ghost X-Never here
	handle @post {
		reverse_proxy 127.0.0.1:${forms}
	}
	handle /static/* {
		respond "static"
	}
	reverse_proxy @api 127.0.0.1:${api}
	reverse_proxy 127.0.0.1:${site}
}
`);
    // reverse_proxy @api: any of its paths; the rest goes to the site's own upstream.
    expect((await request(main, 'm.test', '/api/x')).body).toBe('api GET /api/x');
    expect((await request(main, 'm.test', '/V1/y')).body).toBe('api GET /V1/y');
    expect((await request(main, 'm.test', '/other')).body).toBe('site GET /other');
    // handle @post: method, path and header must all hold.
    const form = { 'content-type': 'multipart/form-data; boundary=x' };
    expect((await request(main, 'm.test', '/forms/a', { method: 'POST', headers: form })).body).toBe(
      'forms POST /forms/a',
    );
    expect((await request(main, 'm.test', '/forms/a', { method: 'PUT', headers: form })).body).toBe(
      'site PUT /forms/a',
    );
    expect((await request(main, 'm.test', '/forms/a', { method: 'POST' })).body).toBe('site POST /forms/a');
    expect((await request(main, 'm.test', '/static/x', { method: 'POST', headers: form })).body).toBe('static');
    // redir @legacy: a substring of the header value.
    const legacy = await request(main, 'm.test', '/p?q=1', { headers: { 'x-legacy': 'oh yes please' } });
    expect(legacy.status).toBe(308);
    expect(legacy.headers.location).toBe('/modern/p?q=1');
    expect((await request(main, 'm.test', '/p', { headers: { 'x-legacy': 'no' } })).status).toBe(200);
    // header @anonymous: only without Authorization; header @ghost never (GET requests).
    const anonymous = await request(main, 'm.test', '/static/x');
    expect(anonymous.headers['x-anonymous']).toBe('yes');
    expect(anonymous.headers['x-never']).toBeUndefined();
    const signed = await request(main, 'm.test', '/static/x', { headers: { authorization: 'Basic eDp5' } });
    expect(signed.headers['x-anonymous']).toBeUndefined();
    // The default security headers are still there.
    expect(signed.headers['x-content-type-options']).toBe('nosniff');
  });
});

/** A raw HTTP/1.1 request; resolves with what came back before the connection closed. */
function raw(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.end(text));
    let got = '';
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => {
      got += c;
    });
    socket.on('close', () => resolve(got));
    socket.on('error', reject);
  });
}

// Issue 34: client address rules and Caddy's matchers, Proxyfile text to the data plane.
describe('client_ip / remote_ip rules, not, host, query, regexps (issue 34)', () => {
  it('keeps an admin panel LAN-only: abort and respond 403 for clients outside, honouring trusted_proxies', async () => {
    const { http: main, global } = await mainPorts();
    const up = await upstream('panel');
    await serve(`${global.replace('}', '\ttrusted_proxies 127.0.0.1\n}')}
http://admin.test {
	@outside not client_ip 10.0.0.0/8 192.168.0.0/16
	abort @outside
	reverse_proxy 127.0.0.1:${up}
}

http://panel.test {
	@outside not client_ip private_ranges
	respond @outside "LAN only, not {client_ip}" 403
	reverse_proxy 127.0.0.1:${up}
}

http://peer.test {
	@local remote_ip 127.0.0.1
	respond @local "peer {remote_host}, client {client_ip}"
	respond "elsewhere"
}
`);
    const lan = { 'x-forwarded-for': '10.1.2.3' };
    const wan = { 'x-forwarded-for': '203.0.113.9' };
    expect(await request(main, 'admin.test', '/x', { headers: lan })).toMatchObject({
      status: 200,
      body: 'panel GET /x',
    });
    // abort: the connection closes without any answer.
    const aborted = await raw(main, 'GET /x HTTP/1.1\r\nhost: admin.test\r\nx-forwarded-for: 203.0.113.9\r\n\r\n');
    expect(aborted).toBe('');
    await expect(request(main, 'admin.test', '/x', { headers: wan })).rejects.toThrow(/socket hang up|ECONNRESET/);
    expect(await request(main, 'panel.test', '/', { headers: wan })).toMatchObject({
      status: 403,
      body: 'LAN only, not 203.0.113.9',
    });
    expect(await request(main, 'panel.test', '/', { headers: { 'x-forwarded-for': '192.168.1.4' } })).toMatchObject({
      status: 200,
    });
    // remote_ip is the connection's peer (127.0.0.1), whatever X-Forwarded-For says.
    expect(await request(main, 'peer.test', '/', { headers: wan })).toMatchObject({
      body: 'peer 127.0.0.1, client 203.0.113.9',
    });
  });

  it('matches host, query and header_regexp, and fills {re.*}, {header.*} and {query.*}', async () => {
    const { http: main, global } = await mainPorts();
    const up = await upstream('api');
    await serve(`${global}
http://app.test, http://x.app.test, http://y.z.app.test {
	@sub host *.app.test
	@json query format=json
	@user path_regexp user ^/users/(?<id>[0-9]+)$
	@beta header_regexp Cookie beta=(\\w+)
	respond @user "user {re.user.id}"
	respond @beta "beta {re.beta.1} {re.1}"
	reverse_proxy @json 127.0.0.1:${up} {
		header_up X-Up-Flag {header.X-Flag}
		header_up X-Up-Page {query.page}
	}
	respond @sub "sub {host}"
	respond "main"
}
`);
    expect(await request(main, 'app.test', '/users/42')).toMatchObject({ body: 'user 42' });
    expect(await request(main, 'app.test', '/users/abc')).toMatchObject({ body: 'main' });
    expect(await request(main, 'app.test', '/', { headers: { cookie: 'a=1; beta=yes' } })).toMatchObject({
      body: 'beta yes yes',
    });
    const proxied = await request(main, 'app.test', '/?format=json&page=3', { headers: { 'x-flag': 'on' } });
    expect(proxied.body).toBe('api GET /?format=json&page=3');
    expect(JSON.parse(String(proxied.headers['x-seen']))).toEqual({ 'x-up-flag': 'on', 'x-up-page': '3' });
    expect(await request(main, 'x.app.test')).toMatchObject({ body: 'sub x.app.test' });
    // `*` is one label: y.z.app.test is not *.app.test.
    expect(await request(main, 'y.z.app.test')).toMatchObject({ body: 'main' });
  });
});

// Issue 34, group 2: rewrite, uri, try_files and handle_errors, Proxyfile text to the data plane.
describe('rewrite, uri, try_files, handle_errors (issue 34)', () => {
  it('rewrites and edits the path the handler and the upstream see', async () => {
    const { http: main, global } = await mainPorts();
    const up = await upstream('up');
    await serve(`${global}
http://app.test {
	@legacy header X-Legacy *
	rewrite /old/* /new{path}?from=old&{query}
	rewrite @legacy /v2{uri}
	rewrite /search ?q={query.term}
	uri /api/* strip_prefix /api
	uri replace /beta/ /v2/ 1
	uri path_regexp ^/u/([0-9]+)$ /users/$1
	handle /new/* {
		respond "new {path} {query}"
	}
	reverse_proxy 127.0.0.1:${up}
}
`);
    expect(await request(main, 'app.test', '/old/a?x=1')).toMatchObject({ body: 'new /new/old/a from=old&x=1' });
    expect((await request(main, 'app.test', '/p?k=v', { headers: { 'x-legacy': '1' } })).body).toBe('up GET /v2/p?k=v');
    expect((await request(main, 'app.test', '/search?term=cats&page=2')).body).toBe('up GET /search?q=cats');
    expect((await request(main, 'app.test', '/api/items?id=3')).body).toBe('up GET /items?id=3');
    expect((await request(main, 'app.test', '/beta/beta/x')).body).toBe('up GET /v2/beta/x');
    expect((await request(main, 'app.test', '/u/42')).body).toBe('up GET /users/42');
  });

  it('serves a single-page app with try_files, and custom error pages for 404 and 502', async () => {
    const { http: main, global } = await mainPorts();
    const fs = await import('node:fs/promises');
    const dir = await fs.mkdtemp('/tmp/proxyfile-spa-');
    await fs.mkdir(`${dir}/assets`);
    await fs.mkdir(`${dir}/errors`);
    await fs.writeFile(`${dir}/index.html`, '<p>app shell</p>');
    await fs.writeFile(`${dir}/assets/app.js`, 'console.log(1)');
    await fs.writeFile(`${dir}/errors/404.html`, '<p>custom 404</p>');
    const down = await freePort();
    await serve(`${global}
http://spa.test {
	handle /api/* {
		reverse_proxy 127.0.0.1:${down}
	}
	handle /docs/* {
		root * ${dir}
		try_files {path} {path}.html =404
		file_server
	}
	handle {
		root * ${dir}
		try_files {path} /index.html
		file_server
	}
	handle_errors 404 {
		rewrite * /errors/404.html
		file_server {
			root ${dir}
		}
	}
	handle_errors 5xx {
		respond "{err.status_code} {err.status_text}: {err.message}" {err.status_code}
	}
}
`);
    expect(await request(main, 'spa.test', '/assets/app.js')).toMatchObject({ status: 200, body: 'console.log(1)' });
    // A client-side route: the app shell, 200.
    expect(await request(main, 'spa.test', '/settings/profile')).toMatchObject({
      status: 200,
      body: '<p>app shell</p>',
    });
    // try_files … =404: the custom page, with the error's status.
    expect(await request(main, 'spa.test', '/docs/missing')).toMatchObject({ status: 404, body: '<p>custom 404</p>' });
    // A refused upstream connection: 502 through handle_errors 5xx.
    expect(await request(main, 'spa.test', '/api/x')).toMatchObject({
      status: 502,
      body: '502 Bad Gateway: bad gateway',
    });
  });
});

// Issue 34, group 3: forward_auth, Proxyfile text to the data plane.
describe('forward_auth (issue 34)', () => {
  it('relays a refusal as it came, passes the body of an allowed request, and answers 502 without the auth server', async () => {
    const { http: main, global } = await mainPorts();
    const authServer = http.createServer((req, res) => {
      if (req.headers.authorization === 'Bearer good') {
        res.writeHead(204, { 'x-user': 'bob' }).end();
        return;
      }
      res
        .writeHead(401, { 'www-authenticate': 'Bearer', 'x-reason': 'no token' })
        .end(`denied ${req.headers['x-forwarded-method']} ${req.headers['x-forwarded-uri']}`);
    });
    servers.push(authServer);
    await new Promise<void>((r) => authServer.listen(0, '127.0.0.1', r));
    const authPort = (authServer.address() as net.AddressInfo).port;
    const app = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => {
        body += c.toString();
      });
      req.on('end', () => res.end(`app ${req.method} ${req.url} user=${req.headers['x-user']} body=${body}`));
    });
    servers.push(app);
    await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
    const appPort = (app.address() as net.AddressInfo).port;
    const gone = await freePort();
    await serve(`${global}
http://api.test {
	handle /admin/* {
		forward_auth 127.0.0.1:${authPort} {
			uri /check?for={path}
			copy_headers X-User
		}
		reverse_proxy 127.0.0.1:${appPort}
	}
	handle /broken/* {
		forward_auth 127.0.0.1:${gone} {
			uri /check
		}
		reverse_proxy 127.0.0.1:${appPort}
	}
	reverse_proxy 127.0.0.1:${appPort}
}
`);
    const refused = await request(main, 'api.test', '/admin/users?x=1', { method: 'POST' });
    expect(refused).toMatchObject({ status: 401, body: 'denied POST /admin/users?x=1' });
    expect(refused.headers).toMatchObject({ 'www-authenticate': 'Bearer', 'x-reason': 'no token' });
    const allowed = await new Promise<Answer>((resolve, reject) => {
      const req = http.request(
        {
          host: '127.0.0.1',
          port: main,
          path: '/admin/users',
          method: 'POST',
          headers: {
            host: 'api.test',
            authorization: 'Bearer good',
            'x-user': 'mallory',
            'content-type': 'text/plain',
          },
          agent: false,
        },
        (res) => {
          let body = '';
          res.on('data', (c: Buffer) => {
            body += c.toString();
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
        },
      );
      req.on('error', reject);
      req.end('payload');
    });
    expect(allowed).toMatchObject({ status: 200, body: 'app POST /admin/users user=bob body=payload' });
    expect(await request(main, 'api.test', '/open')).toMatchObject({ status: 200 });
    expect(await request(main, 'api.test', '/broken/x')).toMatchObject({ status: 502 });
  });
});

/** Reads a response as it streams: resolves with what arrived and how it ended. */
function streamed(
  port: number,
  host: string,
  path: string,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; chunks: string[]; ended: 'end' | 'error' }> {
  return new Promise((resolve) => {
    const chunks: string[] = [];
    const req = http.request({ host: '127.0.0.1', port, path, headers: { host }, agent: false }, (res) => {
      res.setEncoding('utf8');
      res.on('data', (c: string) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, chunks, ended: 'end' }));
      res.on('error', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, chunks, ended: 'error' }));
      res.on('close', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, chunks, ended: 'error' }));
    });
    req.on('error', () => resolve({ status: 0, headers: {}, chunks, ended: 'error' }));
    req.end();
  });
}

// Issue 34, group 4: reverse_proxy's header_down, read_timeout, flush_interval and stream_timeout.
describe('reverse_proxy header_down and stream timeouts (issue 34)', () => {
  it('edits the upstream response headers with header_down', async () => {
    const { http: main, global } = await mainPorts();
    const server = http.createServer((_req, res) => {
      res.writeHead(200, { server: 'gunicorn', 'x-powered-by': 'php', 'cache-control': 'no-store' }).end('ok');
    });
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as net.AddressInfo).port;
    await serve(`${global}
http://down.test {
	reverse_proxy 127.0.0.1:${port} {
		header_down -Server
		header_down -X-Powered-By
		header_down Cache-Control "public, max-age=60"
		header_down +X-Served-For {host}
	}
}
`);
    const res = await request(main, 'down.test');
    expect(res.headers.server).toBeUndefined();
    expect(res.headers['x-powered-by']).toBeUndefined();
    expect(res.headers['cache-control']).toBe('public, max-age=60');
    expect(res.headers['x-served-for']).toBe('down.test');
  });

  it('keeps a silent event stream open past read_timeout, and cuts a silent plain response', async () => {
    const { http: main, global } = await mainPorts();
    const server = http.createServer((req, res) => {
      if (req.url === '/plain') {
        // Headers after 1.5 s of silence: past the 500 ms read_timeout.
        setTimeout(() => res.writeHead(200).end('late'), 1_500);
        return;
      }
      const sse = req.url === '/events';
      res.writeHead(200, { 'content-type': sse ? 'text/event-stream' : 'application/octet-stream' });
      res.write(sse ? 'data: one\n\n' : 'one;');
      // 1.5 s of silence, three times the read_timeout, then the next event.
      setTimeout(() => res.end(sse ? 'data: two\n\n' : 'two;'), 1_500);
    });
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as net.AddressInfo).port;
    await serve(`${global}
http://sse.test {
	reverse_proxy 127.0.0.1:${port} {
		transport http {
			read_timeout 500ms
		}
	}
}

http://flush.test {
	reverse_proxy 127.0.0.1:${port} {
		flush_interval -1
		transport http {
			read_timeout 500ms
		}
	}
}

http://bounded.test {
	reverse_proxy 127.0.0.1:${port} {
		stream_timeout 700ms
	}
}
`);
    const [events, plain, flushed, bounded] = await Promise.all([
      streamed(main, 'sse.test', '/events'),
      streamed(main, 'sse.test', '/plain'),
      streamed(main, 'flush.test', '/bytes'),
      streamed(main, 'bounded.test', '/events'),
    ]);
    expect(events).toMatchObject({ status: 200, ended: 'end' });
    expect(events.chunks.join('')).toBe('data: one\n\ndata: two\n\n');
    expect(plain.status).toBe(504);
    expect(flushed.chunks.join('')).toBe('one;two;');
    expect(flushed.ended).toBe('end');
    // stream_timeout bounds the stream's life: cut before its second event.
    expect(bounded.chunks.join('')).toBe('data: one\n\n');
    expect(bounded.ended).toBe('error');
  });
});

// Issue 34, group 4: load balancing knobs, Proxyfile text to the data plane.
describe('reverse_proxy lb_retries, weighted_round_robin, cookie (issue 34)', () => {
  it('tries another upstream after a refused connection, for idempotent requests only', async () => {
    const { http: main, global } = await mainPorts();
    const live = await upstream('live');
    const dead = await freePort();
    await serve(`${global}
http://retry.test {
	reverse_proxy 127.0.0.1:${dead} 127.0.0.1:${live} {
		lb_policy first
		lb_retries 2
		lb_try_interval 50ms
	}
}

http://noretry.test {
	reverse_proxy 127.0.0.1:${dead} 127.0.0.1:${live} {
		lb_policy first
	}
}
`);
    // The first member refuses: the GET goes to the second.
    expect(await request(main, 'retry.test', '/a')).toMatchObject({ status: 200, body: 'live GET /a' });
    // Without lb_retries the same failure is a 502 (the member then leaves the rotation).
    expect((await request(main, 'noretry.test', '/a')).status).toBe(502);
  });

  it('keeps a POST on its failure (not idempotent), and retries while lb_try_duration allows', async () => {
    const { http: main, global } = await mainPorts();
    const dead = await freePort();
    const late = await freePort();
    const live = await upstream('live');
    await serve(`${global}
http://post.test {
	reverse_proxy 127.0.0.1:${dead} 127.0.0.1:${live} {
		lb_policy first
		lb_retries 3
		fail_duration 0
	}
}

http://later.test {
	reverse_proxy 127.0.0.1:${late} {
		lb_try_duration 3s
		lb_try_interval 100ms
		fail_duration 0
	}
}
`);
    // A POST may have done its work: it is not sent to a second upstream. A GET is.
    expect((await request(main, 'post.test', '/p', { method: 'POST' })).status).toBe(502);
    expect(await request(main, 'post.test', '/p')).toMatchObject({ status: 200, body: 'live GET /p' });
    // The only upstream starts 400 ms after the request: tried again until it answers.
    const pending = request(main, 'later.test', '/boot');
    await new Promise((r) => setTimeout(r, 400));
    await upstream('late', late);
    expect(await pending).toMatchObject({ status: 200, body: 'late GET /boot' });
  });

  it('spreads by weight, and sticks a client to its upstream with a cookie', async () => {
    const { http: main, global } = await mainPorts();
    const a = await upstream('a');
    const b = await upstream('b');
    await serve(`${global}
http://weighted.test {
	reverse_proxy 127.0.0.1:${a} 127.0.0.1:${b} {
		lb_policy weighted_round_robin 3 1
	}
}

http://sticky.test {
	reverse_proxy 127.0.0.1:${a} 127.0.0.1:${b} {
		lb_policy cookie srv s3cret
	}
}
`);
    const names: string[] = [];
    for (let i = 0; i < 8; i++) names.push((await request(main, 'weighted.test')).body.split(' ')[0] as string);
    expect(names.filter((n) => n === 'a').length).toBe(6);
    expect(names.filter((n) => n === 'b').length).toBe(2);
    const first = await request(main, 'sticky.test');
    const cookie = String(first.headers['set-cookie']).split(';')[0] as string;
    expect(cookie).toMatch(/^srv=[0-9a-f]{32}$/);
    const who = first.body.split(' ')[0];
    for (let i = 0; i < 4; i++) {
      const again = await request(main, 'sticky.test', '/', { headers: { cookie: `x=1; ${cookie}` } });
      expect(again.body.split(' ')[0]).toBe(who);
      // Already stuck: no new cookie.
      expect(again.headers['set-cookie']).toBeUndefined();
    }
    // Without the cookie, round robin: the next client lands on the other upstream and gets its own cookie.
    const other = await request(main, 'sticky.test');
    expect(other.body.split(' ')[0]).not.toBe(who);
    expect(String(other.headers['set-cookie'])).not.toContain(cookie);
  });
});

describe("Caddy's inline matcher tokens (issue 34)", () => {
  it('routes reverse_proxy /api/*, respond /secret/* and reverse_proxy * as Caddy does', async () => {
    const { http: main, global } = await mainPorts();
    const api = await upstream('api');
    const web = await upstream('web');
    await serve(`${global}
http://inline.test {
	reverse_proxy /api/* 127.0.0.1:${api}
	respond /secret/* 403
	reverse_proxy * 127.0.0.1:${web}
}
`);
    expect((await request(main, 'inline.test', '/api/x')).body).toBe('api GET /api/x');
    expect((await request(main, 'inline.test', '/secret/k')).status).toBe(403);
    expect((await request(main, 'inline.test', '/page')).body).toBe('web GET /page');
  });
});

describe('forward_auth refusals and handle_errors (issue 34)', () => {
  it("sends oauth2-proxy's 401 to handle_errors 401 when the site has it, and relays others", async () => {
    const { http: main, global } = await mainPorts();
    const authServer = http.createServer((req, res) => {
      res.writeHead(req.url === '/oauth2/auth' && req.headers.cookie === 'ok=1' ? 202 : 401).end('no');
    });
    servers.push(authServer);
    await new Promise<void>((r) => authServer.listen(0, '127.0.0.1', r));
    const authPort = (authServer.address() as net.AddressInfo).port;
    const app = await upstream('app');
    await serve(`${global}
http://o2p.test {
	forward_auth 127.0.0.1:${authPort} {
		uri /oauth2/auth
	}
	reverse_proxy 127.0.0.1:${app}
	handle_errors 401 {
		redir * /oauth2/sign_in?rd={scheme}://{host}{uri} 302
	}
}

http://plain401.test {
	forward_auth 127.0.0.1:${authPort} {
		uri /oauth2/auth
	}
	reverse_proxy 127.0.0.1:${app}
}
`);
    const refused = await request(main, 'o2p.test', '/page?x=1');
    expect(refused.status).toBe(302);
    expect(refused.headers.location).toBe('/oauth2/sign_in?rd=http://o2p.test/page?x=1');
    expect(await request(main, 'plain401.test', '/page')).toMatchObject({ status: 401, body: 'no' });
    expect(await request(main, 'o2p.test', '/page', { headers: { cookie: 'ok=1' } })).toMatchObject({
      status: 200,
      body: 'app GET /page',
    });
  });
});

describe('HTTP/2 upstreams (issue 34)', () => {
  it('forwards to an h2c upstream and relays its trailers to an HTTP/1.1 client', async () => {
    const { http: main, global } = await mainPorts();
    const http2 = await import('node:http2');
    const h2 = http2.createServer((req, res) => {
      res.setHeader('content-type', 'text/plain');
      res.write(`h2 ${req.method} ${req.url} te=${req.headers.te ?? '-'} via=${req.headers['x-forwarded-host']}`);
      res.addTrailers({ 'x-checksum': 'abc123' });
      res.end();
    });
    await new Promise<void>((r) => h2.listen(0, '127.0.0.1', r));
    const port = (h2.address() as net.AddressInfo).port;
    await serve(`${global}
http://h2c.test {
	reverse_proxy h2c://127.0.0.1:${port}
}
`);
    const got = await new Promise<{ body: string; trailers: NodeJS.Dict<string> }>((resolve, reject) => {
      const req = http.request(
        { host: '127.0.0.1', port: main, path: '/x?y=1', headers: { host: 'h2c.test', te: 'trailers' }, agent: false },
        (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => {
            body += c;
          });
          res.on('end', () => resolve({ body, trailers: res.trailers }));
        },
      );
      req.on('error', reject);
      req.end();
    });
    h2.close();
    expect(got.body).toBe('h2 GET /x?y=1 te=trailers via=h2c.test');
    expect(got.trailers['x-checksum']).toBe('abc123');
  });
});
