import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  defaultReverseProxy,
  emptySite,
  type HandleBlock,
  type RouteSpec,
  type Site,
  type UpstreamAddress,
} from './model/index.js';
import { ProxyServer } from './proxy-server.js';
import { compileSite, type SiteDeps } from './site-handler.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

interface Upstream {
  address: UpstreamAddress;
  /** URLs the upstream saw, in order. */
  seen: string[];
}

/** A real loopback upstream that answers `up <url>` and records what it saw. */
async function upstream(): Promise<Upstream> {
  const seen: string[] = [];
  const sockets = new Set<Socket>();
  const server = http.createServer((req, res) => {
    seen.push(req.url ?? '');
    res.writeHead(200, { 'content-type': 'text/plain', 'x-upstream': 'yes' }).end(`up ${req.url}`);
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(
    () =>
      new Promise<void>((r) => {
        server.close(() => r());
        for (const s of sockets) s.destroy();
      }),
  );
  return { address: { host: '127.0.0.1', port: (server.address() as AddressInfo).port }, seen };
}

function block(kind: HandleBlock['kind'], path: string | null, edit?: (b: HandleBlock) => void): HandleBlock {
  const b: HandleBlock = { kind, path, header: [], basic_auth: null, redirects: [], handler: null };
  edit?.(b);
  return b;
}

/** Starts the real ProxyServer with compileSite for one site on `app.test`. */
async function serve(site: Site, deps: Partial<Omit<SiteDeps, 'forwarder'>> = {}): Promise<number> {
  const route: RouteSpec = { domain: 'app.test', origin: 'proxyfile', source: null, site };
  const server = new ProxyServer({
    routes: [route],
    compileSite: (s, forwarder) => compileSite(s, { secret: randomBytes(32), ...deps, forwarder }),
  });
  const { port } = await server.listen(0, '127.0.0.1');
  cleanups.push(() => server.close());
  return port;
}

function newSite(edit: (s: Site) => void): Site {
  const s = emptySite([{ scheme: 'http', host: 'app.test', port: null }]);
  edit(s);
  return s;
}

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

function get(port: number, path: string, headers: http.OutgoingHttpHeaders = {}, method = 'GET'): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, path, method, headers: { host: 'app.test', ...headers }, agent: false },
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

describe('security headers and header ops', () => {
  it('adds the defaults to proxied responses, HSTS only on HTTPS', async () => {
    const up = await upstream();
    const port = await serve(newSite((s) => (s.handler = defaultReverseProxy([up.address]))));
    const r = await get(port, '/x');
    expect(r.body).toBe('up /x');
    expect(r.headers['x-content-type-options']).toBe('nosniff');
    expect(r.headers['x-frame-options']).toBe('SAMEORIGIN');
    expect(r.headers['strict-transport-security']).toBeUndefined();
    expect(r.headers['x-upstream']).toBe('yes');
  });

  it('lets `header` set, add and delete, a default included, on every kind of response', async () => {
    const up = await upstream();
    const port = await serve(
      newSite((s) => {
        s.handler = defaultReverseProxy([up.address]);
        s.header = [
          { op: 'set', name: 'X-Frame-Options', value: 'DENY' },
          { op: 'delete', name: 'X-Content-Type-Options' },
          { op: 'add', name: 'X-Upstream', value: 'proxy' },
          { op: 'set', name: 'X-Site', value: 'a' },
        ];
        s.redirects = [{ from: '/old', to: '/new', status: 301 }];
        s.handles = [
          block('handle', '/r', (b) => {
            b.handler = { kind: 'respond', body: 'hi', status: 200 };
            b.header = [{ op: 'set', name: 'X-Site', value: 'b' }];
          }),
          block('handle', '/none'),
          block('handle', null, (b) => (b.handler = defaultReverseProxy([up.address]))),
        ];
      }),
    );
    const proxied = await get(port, '/');
    expect(proxied.headers['x-frame-options']).toBe('DENY');
    expect(proxied.headers['x-content-type-options']).toBeUndefined();
    expect(proxied.headers['x-upstream']).toBe('yes, proxy');
    expect(proxied.headers['x-site']).toBe('a');
    const responded = await get(port, '/r');
    expect(responded.body).toBe('hi');
    expect(responded.headers['x-site']).toBe('b');
    expect(responded.headers['x-frame-options']).toBe('DENY');
    const redirected = await get(port, '/old');
    expect(redirected.status).toBe(301);
    expect(redirected.headers['x-frame-options']).toBe('DENY');
    const missing = await get(port, '/none');
    expect(missing.status).toBe(404);
    expect(missing.headers['x-site']).toBe('a');
    expect(missing.headers['x-content-type-options']).toBeUndefined();
  });
});

describe('respond', () => {
  it('answers the body and status, with no upstream', async () => {
    const port = await serve(newSite((s) => (s.handler = { kind: 'respond', body: 'gone\n', status: 410 })));
    const r = await get(port, '/anything');
    expect(r.status).toBe(410);
    expect(r.body).toBe('gone\n');
    expect(r.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(r.headers['x-content-type-options']).toBe('nosniff');
    const head = await get(port, '/', {}, 'HEAD');
    expect(head.status).toBe(410);
    expect(head.body).toBe('');
  });

  it('answers 404 for a site without a handler', async () => {
    const r = await get(await serve(newSite(() => {})), '/');
    expect(r.status).toBe(404);
  });
});

describe('redir', () => {
  it('expands the path remainder and other placeholders, with the given status', async () => {
    const up = await upstream();
    const port = await serve(
      newSite((s) => {
        s.handler = defaultReverseProxy([up.address]);
        s.redirects = [
          { from: '/old/*', to: '/new/{http.request.uri.path.remainder}', status: 308 },
          { from: '/exact', to: 'https://{host}{uri}', status: 302 },
          { from: '/p', to: '/q?was={path}&{query}', status: 307 },
        ];
      }),
    );
    const a = await get(port, '/old/a/b?x=1');
    expect(a.status).toBe(308);
    expect(a.headers.location).toBe('/new/a/b');
    const b = await get(port, '/exact?k=v');
    expect(b.status).toBe(302);
    expect(b.headers.location).toBe('https://app.test/exact?k=v');
    const c = await get(port, '/p?z=9');
    expect(c.status).toBe(307);
    expect(c.headers.location).toBe('/q?was=/p&z=9');
    expect((await get(port, '/old')).status).toBe(200);
    expect(up.seen).toEqual(['/old']);
  });
});

describe('handle / handle_path', () => {
  it('picks the most specific pattern whatever the file order, and the fallback last', async () => {
    const respond = (body: string) => (b: HandleBlock) => (b.handler = { kind: 'respond', body, status: 200 });
    const port = await serve(
      newSite((s) => {
        s.handles = [
          block('handle', null, respond('fallback')),
          block('handle', '*.php', respond('suffix')),
          block('handle', '/api/*', respond('short')),
          block('handle', '/api/v1/*', respond('long')),
          block('handle', '/api/v1/exact', respond('exact')),
        ];
      }),
    );
    expect((await get(port, '/api/v1/exact')).body).toBe('exact');
    expect((await get(port, '/api/v1/x')).body).toBe('long');
    expect((await get(port, '/api/x')).body).toBe('short');
    expect((await get(port, '/api/x.php')).body).toBe('short');
    expect((await get(port, '/index.php')).body).toBe('suffix');
    expect((await get(port, '/api')).body).toBe('fallback');
    expect((await get(port, '/API/V1/X')).body).toBe('long');
    expect((await get(port, '/%61pi/v1/x')).body).toBe('long');
    expect((await get(port, '//api/./v1/x')).body).toBe('long');
  });

  it('handle_path strips the matched prefix (keeping a leading / and the query); handle does not', async () => {
    const up = await upstream();
    const port = await serve(
      newSite((s) => {
        s.handles = [
          block('handle_path', '/api/*', (b) => (b.handler = defaultReverseProxy([up.address]))),
          block('handle', '/keep/*', (b) => (b.handler = defaultReverseProxy([up.address]))),
        ];
      }),
    );
    expect((await get(port, '/api/users?id=3')).body).toBe('up /users?id=3');
    expect((await get(port, '/api/')).body).toBe('up /');
    expect((await get(port, '/keep/x')).body).toBe('up /keep/x');
    expect((await get(port, '/elsewhere')).status).toBe(404);
    expect(up.seen).toEqual(['/users?id=3', '/', '/keep/x']);
  });
});
