import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Transform } from 'node:stream';
import { emptySite, type HandleBlock, type RouteSpec, type Site } from '@proxyd/model';
import bcrypt from 'bcryptjs';
import { describe, expect, it } from 'vitest';
import type { DataPlaneHooks } from '../hooks.js';
import { onCleanup, selfSigned, site, siteProxy, upstream } from '../loopback.test-helpers.js';
import { MemoryCertificateStore } from '../tls/certificate-store.js';
import { h2Request, h2Session } from '../tls/tls-client.test-helpers.js';

// The site steps answer the same over HTTP/2 as over HTTPS/1.1 (issue 18):
// every scenario below runs with both clients on one TLS listener.

type Protocol = 'h1' | 'h2';

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

interface Ask {
  path?: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
}

function h1Request(port: number, host: string, ask: Ask): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: '127.0.0.1',
        port,
        servername: host,
        rejectUnauthorized: false,
        agent: false,
        method: ask.method ?? 'GET',
        path: ask.path ?? '/',
        headers: { host, ...ask.headers },
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
    req.end(ask.body);
  });
}

async function over(protocol: Protocol, port: number, host: string, ask: Ask = {}): Promise<Answer> {
  if (protocol === 'h1') return h1Request(port, host, ask);
  const reply = await h2Request(port, {
    servername: host,
    authority: host,
    session: h2Session(port, host),
    ...(ask.path !== undefined ? { path: ask.path } : {}),
    ...(ask.method !== undefined ? { method: ask.method } : {}),
    ...(ask.headers !== undefined ? { headers: ask.headers } : {}),
    ...(ask.body !== undefined ? { body: ask.body } : {}),
  });
  expect(reply.alpn).toBe('h2');
  return reply;
}

function route(domain: string, edit: (s: Site) => void): RouteSpec {
  const s = emptySite([{ scheme: null, host: domain, port: null }]);
  edit(s);
  return { domain, origin: 'proxyfile', source: null, site: s };
}

function block(kind: HandleBlock['kind'], path: string | null, edit: (b: HandleBlock) => void): HandleBlock {
  const b: HandleBlock = { kind, path, header: [], basic_auth: null, redirects: [], handler: null };
  edit(b);
  return b;
}

/** Appends a marker script to HTML bodies, as analytics' injection does. */
const injecting: DataPlaneHooks = {
  rewriteBody: (_ctx, _req, _status, headers) =>
    String(headers['content-type']).startsWith('text/html')
      ? (body) => Buffer.concat([body, Buffer.from('<script src="/_proxyd/a.js"></script>')])
      : null,
  transformResponse: (_ctx, _req, _status, headers) => {
    if (!String(headers['content-type']).startsWith('text/html')) return null;
    delete headers['content-length'];
    return new Transform({
      transform: (chunk, _enc, done) => done(null, chunk),
      flush: (done) => done(null, Buffer.from('<script src="/_proxyd/b.js"></script>')),
    });
  },
};

async function start(routes: RouteSpec[]) {
  const store = new MemoryCertificateStore();
  for (const r of routes) {
    const files = selfSigned([r.domain]);
    store.set(r.domain, { cert: readFileSync(files.cert), key: readFileSync(files.key) });
  }
  const { server } = await siteProxy(routes, { certificates: store, hooks: injecting });
  return (await server.listenHttps(0)).port;
}

describe.each(['h1', 'h2'] as const)('site steps over HTTPS (%s)', (protocol) => {
  it('reverse_proxy, headers, body both ways and injection into HTML', async () => {
    const up = await upstream((req, res) => {
      let body = '';
      req.on('data', (c) => {
        body += c;
      });
      req.on('end', () => {
        if (req.url === '/stream') {
          res.writeHead(200, { 'content-type': 'text/html' });
          res.write('<p>one</p>');
          setTimeout(() => res.end('<p>two</p>'), 10);
          return;
        }
        if (req.url === '/page') {
          res.writeHead(200, { 'content-type': 'text/html', 'content-length': '9' }).end('<p>hi</p>');
          return;
        }
        res.end(`${req.method} ${req.url} ${req.headers.host} ${body}`);
      });
    });
    const port = await start([
      site('proxy.test', [up.port], (s) => (s.addresses[0] = { scheme: null, host: 'proxy.test', port: null })),
    ]);
    const got = await over(protocol, port, 'proxy.test', { path: '/x?y=1' });
    expect(got).toMatchObject({ status: 200, body: 'GET /x?y=1 proxy.test ' });
    expect(got.headers['x-content-type-options']).toBe('nosniff');
    expect(got.headers['strict-transport-security']).toBe('max-age=31536000');
    const posted = await over(protocol, port, 'proxy.test', { method: 'POST', path: '/p', body: 'data' });
    expect(posted.body).toBe('POST /p proxy.test data');
    const page = await over(protocol, port, 'proxy.test', { path: '/page' });
    expect(page.body).toBe('<p>hi</p><script src="/_proxyd/a.js"></script>');
    expect(page.headers['content-length']).toBe(String(page.body.length));
    const streamed = await over(protocol, port, 'proxy.test', { path: '/stream' });
    expect(streamed.body).toBe('<p>one</p><p>two</p><script src="/_proxyd/b.js"></script>');
  });

  it('basic_auth, redir, handle_path, rate_limit and respond', async () => {
    const hash = bcrypt.hashSync('pw', 4);
    const up = await upstream((req, res) => res.end(`up ${req.url}`));
    const port = await start([
      route('auth.test', (s) => {
        s.basic_auth = { realm: 'staff', users: [{ user: 'ann', hash }] };
        s.handler = { kind: 'respond', status: 200, body: 'secret' };
      }),
      route('redir.test', (s) => {
        s.redirects = [{ from: '/old/*', to: '/new/{http.request.uri.path.remainder}', status: 308 }];
        s.handles = [
          block('handle_path', '/api/*', (b) => {
            b.handler = site('x', [up.port]).site.handler;
          }),
        ];
        s.handler = { kind: 'respond', status: 410, body: 'gone' };
      }),
      route('rate.test', (s) => {
        s.rate_limit = 2;
        s.handler = { kind: 'respond', status: 200, body: 'ok' };
      }),
    ]);
    const denied = await over(protocol, port, 'auth.test');
    expect(denied.status).toBe(401);
    expect(denied.headers['www-authenticate']).toBe('Basic realm="staff"');
    const allowed = await over(protocol, port, 'auth.test', {
      headers: { authorization: `Basic ${Buffer.from('ann:pw').toString('base64')}` },
    });
    expect(allowed).toMatchObject({ status: 200, body: 'secret' });
    const moved = await over(protocol, port, 'redir.test', { path: '/old/a/b' });
    expect([moved.status, moved.headers.location]).toEqual([308, '/new/a/b']);
    expect(await over(protocol, port, 'redir.test', { path: '/api/users?id=3' })).toMatchObject({
      status: 200,
      body: 'up /users?id=3',
    });
    expect(await over(protocol, port, 'redir.test', { path: '/else' })).toMatchObject({ status: 410, body: 'gone' });
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await over(protocol, port, 'rate.test')).status);
    expect(statuses).toEqual([200, 200, 429]);
  });

  it('file_server, cache and under_attack', async () => {
    const root = mkdtempSync(join(tmpdir(), 'proxyd-h2-'));
    onCleanup(() => rmSync(root, { recursive: true, force: true }));
    writeFileSync(join(root, 'index.html'), '<h1>files</h1>');
    let hits = 0;
    const up = await upstream((_req, res) => {
      hits++;
      res.writeHead(200, { 'cache-control': 'max-age=60', 'content-type': 'text/plain' }).end('cached body');
    });
    const port = await start([
      route('files.test', (s) => {
        s.handler = { kind: 'file_server', root };
      }),
      route('cache.test', (s) => {
        s.cache = { max_size_bytes: 1024 * 1024, ttl_ms: 60_000 };
        s.handler = site('x', [up.port]).site.handler;
      }),
      route('attack.test', (s) => {
        s.under_attack = { enabled: true, difficulty: 8 };
        s.handler = { kind: 'respond', status: 200, body: 'protected' };
      }),
    ]);
    const file = await over(protocol, port, 'files.test', { path: '/' });
    expect(file.status).toBe(200);
    expect(file.body).toContain('<h1>files</h1>');
    const head = await over(protocol, port, 'files.test', { path: '/index.html', method: 'HEAD' });
    expect([head.status, head.body]).toEqual([200, '']);
    const first = await over(protocol, port, 'cache.test');
    const second = await over(protocol, port, 'cache.test');
    expect([first.body, second.body, second.headers['x-cache'], hits]).toEqual([
      'cached body',
      'cached body',
      'HIT',
      1,
    ]);
    const challenge = await over(protocol, port, 'attack.test');
    expect(challenge.status).toBe(503);
    expect(challenge.body).not.toContain('protected');
  });
});
