import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  defaultReverseProxy,
  emptySite,
  type HandleBlock,
  type RouteSpec,
  type Site,
  type UpstreamAddress,
} from '@proxyd/model';
import bcrypt from 'bcryptjs';
import { describe, expect, it } from 'vitest';
import {
  upstream as loopbackUpstream,
  onCleanup,
  type Reply,
  get as request,
  siteProxy,
  type TestSiteDeps,
} from './loopback.test-helpers.js';
import { RateLimiter } from './middleware/rate-limiter.js';
import { CHALLENGE_PATH, CLEARANCE_COOKIE, leadingZeroBits } from './middleware/under-attack.js';

interface Upstream {
  address: UpstreamAddress;
  /** URLs the upstream saw, in order. */
  seen: string[];
}

/** A real loopback upstream that answers `up <url>` and records what it saw. */
async function upstream(): Promise<Upstream> {
  const up = await loopbackUpstream((req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain', 'x-upstream': 'yes' }).end(`up ${req.url}`);
  });
  return { address: { host: '127.0.0.1', port: up.port }, seen: up.urls };
}

function block(kind: HandleBlock['kind'], path: string | null, edit?: (b: HandleBlock) => void): HandleBlock {
  const b: HandleBlock = { kind, path, header: [], basic_auth: null, redirects: [], handler: null };
  edit?.(b);
  return b;
}

/** Starts the real ProxyServer with compileSite for one site on `app.test`. */
async function serve(site: Site, deps: TestSiteDeps = {}): Promise<number> {
  const route: RouteSpec = { domain: 'app.test', origin: 'proxyfile', source: null, site };
  const { port } = await siteProxy([route], {}, deps);
  return port;
}

function newSite(edit: (s: Site) => void): Site {
  const s = emptySite([{ scheme: 'http', host: 'app.test', port: null }]);
  edit(s);
  return s;
}

/** One request to `app.test` (a `host` header overrides it). */
function get(
  port: number,
  path: string,
  headers: http.OutgoingHttpHeaders = {},
  method = 'GET',
  body?: string,
): Promise<Reply> {
  return request(port, 'app.test', path, headers, false, method, body);
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

  it('sends no body nor Content-Length with 204', async () => {
    const port = await serve(newSite((s) => (s.handler = { kind: 'respond', body: 'ignored', status: 204 })));
    const r = await get(port, '/');
    expect(r.status).toBe(204);
    expect(r.headers['content-length']).toBeUndefined();
    expect(r.body).toBe('');
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

function basic(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
}

describe('basic_auth', () => {
  const hash = bcrypt.hashSync('s3cret', 4);

  it('answers 401 with the realm until the right password, then reaches the upstream; bcrypt once', async () => {
    const up = await upstream();
    let verifications = 0;
    const port = await serve(
      newSite((s) => {
        s.handler = defaultReverseProxy([up.address]);
        s.basic_auth = { realm: 'Staff "only"', users: [{ user: 'ann', hash }] };
      }),
      {
        verifyPassword: (password, h) => {
          verifications++;
          return bcrypt.compare(password, h);
        },
      },
    );
    const none = await get(port, '/');
    expect(none.status).toBe(401);
    expect(none.headers['www-authenticate']).toBe('Basic realm="Staff \\"only\\""');
    expect(none.headers['x-frame-options']).toBe('SAMEORIGIN');
    expect((await get(port, '/', { authorization: basic('ann', 'nope') })).status).toBe(401);
    expect((await get(port, '/', { authorization: basic('bob', 's3cret') })).status).toBe(401);
    expect(up.seen).toEqual([]);
    const ok = await get(port, '/in', { authorization: basic('ann', 's3cret') });
    expect(ok.status).toBe(200);
    expect(ok.body).toBe('up /in');
    const before = verifications;
    expect((await get(port, '/again', { authorization: basic('ann', 's3cret') })).status).toBe(200);
    expect(verifications).toBe(before);
  });

  it('guards only its handle block, and an encoded path cannot slip past it', async () => {
    const port = await serve(
      newSite((s) => {
        s.handles = [
          block('handle', '/admin/*', (b) => {
            b.basic_auth = { realm: 'admin', users: [{ user: 'ann', hash }] };
            b.handler = { kind: 'respond', body: 'admin area', status: 200 };
          }),
          block('handle', null, (b) => (b.handler = { kind: 'respond', body: 'public', status: 200 })),
        ];
      }),
    );
    expect((await get(port, '/')).body).toBe('public');
    for (const path of ['/admin/x', '/%61dmin/x', '/ADMIN/x', '//admin/x', '/./admin/x']) {
      const r = await get(port, path);
      expect(r.status, path).toBe(401);
      expect(r.headers['www-authenticate']).toBe('Basic realm="admin"');
    }
    expect((await get(port, '/admin/x', { authorization: basic('ann', 's3cret') })).body).toBe('admin area');
  });
});

describe('rate_limit', () => {
  it('answers 429 with Retry-After: 1 over the limit, per client IP and per domain', async () => {
    const up = await upstream();
    const clock = { t: 5_000 };
    const s = newSite((x) => {
      x.handler = defaultReverseProxy([up.address]);
      x.rate_limit = 3;
    });
    const routes: RouteSpec[] = ['app.test', 'other.test'].map((domain) => ({
      domain,
      origin: 'proxyfile',
      source: null,
      site: s,
    }));
    const { port } = await siteProxy(routes, {}, { now: () => clock.t });
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await get(port, '/')).status);
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
    const limited = await get(port, '/');
    expect(limited.headers['retry-after']).toBe('1');
    expect(limited.headers['x-content-type-options']).toBe('nosniff');
    expect(limited.body).toBe('rate limit exceeded\n');
    expect(up.seen).toHaveLength(3);
    expect((await get(port, '/', { host: 'other.test' })).status).toBe(200);
    clock.t = 7_000;
    expect((await get(port, '/')).status).toBe(200);
  });

  it('counts in a counter that answers later (workers counting in one place); a failed answer admits', async () => {
    const up = await upstream();
    const clock = { t: 5_000 };
    // One limiter behind an asynchronous answer, as a multi-core daemon's primary answers its workers.
    const shared = new RateLimiter({ limit: 2, now: () => clock.t });
    const asked: number[] = [];
    let failing = false;
    const port = await serve(
      newSite((x) => {
        x.handler = defaultReverseProxy([up.address]);
        x.rate_limit = 2;
      }),
      {
        rateLimitCounter: (limit) => {
          asked.push(limit);
          return {
            admit: (domain, ip) =>
              new Promise((resolve, reject) =>
                setTimeout(() => (failing ? reject(new Error('primary gone')) : resolve(shared.admit(domain, ip))), 5),
              ),
          };
        },
      },
    );
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await get(port, '/')).status);
    expect(statuses).toEqual([200, 200, 429, 429]);
    expect(asked).toEqual([2]);
    expect(up.seen).toHaveLength(2);
    failing = true;
    expect((await get(port, '/')).status).toBe(200);
  });
});

describe('file_server', () => {
  function tree(): { base: string; root: string } {
    const base = mkdtempSync(join(tmpdir(), 'proxyd-fs-'));
    onCleanup(() => rmSync(base, { recursive: true, force: true }));
    const root = join(base, 'www');
    mkdirSync(join(root, 'sub'), { recursive: true });
    mkdirSync(join(root, 'empty'));
    writeFileSync(join(root, 'index.html'), '<h1>home</h1>');
    writeFileSync(join(root, 'a.txt'), '0123456789');
    writeFileSync(join(root, 'style.css'), 'body{}');
    writeFileSync(join(root, 'sub', 'index.html'), 'sub home');
    writeFileSync(join(base, 'secret.txt'), 'TOP SECRET');
    symlinkSync(join(base, 'secret.txt'), join(root, 'link-out'));
    symlinkSync(base, join(root, 'dir-out'));
    symlinkSync(join(root, 'a.txt'), join(root, 'link-in'));
    return { base, root };
  }

  async function fileSite(root: string): Promise<number> {
    return serve(newSite((s) => (s.handler = { kind: 'file_server', root })));
  }

  it('serves files with content types, index.html and the directory redirect', async () => {
    const { root } = tree();
    const port = await fileSite(root);
    const home = await get(port, '/');
    expect(home.status).toBe(200);
    expect(home.body).toBe('<h1>home</h1>');
    expect(home.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(home.headers['x-content-type-options']).toBe('nosniff');
    expect((await get(port, '/style.css')).headers['content-type']).toBe('text/css; charset=utf-8');
    expect((await get(port, '/a.txt')).body).toBe('0123456789');
    expect((await get(port, '/link-in')).body).toBe('0123456789');
    const dir = await get(port, '/sub?x=1');
    expect(dir.status).toBe(308);
    expect(dir.headers.location).toBe('/sub/?x=1');
    expect((await get(port, '/sub/')).body).toBe('sub home');
    expect((await get(port, '/empty/')).status).toBe(404);
    expect((await get(port, '/missing.txt')).status).toBe(404);
  });

  it('refuses every traversal attempt and never serves what is outside the root', async () => {
    const { root } = tree();
    const port = await fileSite(root);
    const attempts = [
      '/../secret.txt',
      '/sub/../../secret.txt',
      '/%2e%2e/secret.txt',
      '/%2E%2E/secret.txt',
      '/..%2fsecret.txt',
      '/sub%2f..%2f..%2fsecret.txt',
      '/..%5csecret.txt',
      '/a.txt%00.html',
      '/%00',
      '/link-out',
      '/dir-out/secret.txt',
      '/%zz',
    ];
    for (const path of attempts) {
      const r = await get(port, path);
      expect(r.body, path).not.toContain('SECRET');
      expect([400, 403, 404], path).toContain(r.status);
    }
    expect((await get(port, '/../secret.txt')).status).toBe(403);
    expect((await get(port, '/a.txt%00.html')).status).toBe(400);
    expect((await get(port, '/link-out')).status).toBe(403);
  });

  it('answers 304 to If-None-Match and If-Modified-Since', async () => {
    const { root } = tree();
    const port = await fileSite(root);
    const first = await get(port, '/a.txt');
    const etag = first.headers.etag as string;
    expect(etag).toMatch(/^"[0-9a-f]+-[0-9a-f]+"$/);
    const byTag = await get(port, '/a.txt', { 'if-none-match': `"nope", ${etag}` });
    expect(byTag.status).toBe(304);
    expect(byTag.body).toBe('');
    expect(byTag.headers.etag).toBe(etag);
    const lastModified = first.headers['last-modified'] as string;
    expect((await get(port, '/a.txt', { 'if-modified-since': lastModified })).status).toBe(304);
    expect((await get(port, '/a.txt', { 'if-modified-since': 'Thu, 01 Jan 1970 00:00:00 GMT' })).status).toBe(200);
    expect((await get(port, '/a.txt', { 'if-none-match': '"other"' })).status).toBe(200);
  });

  it('serves one Range with 206, an unsatisfiable one with 416, several as the whole file', async () => {
    const { root } = tree();
    const port = await fileSite(root);
    const mid = await get(port, '/a.txt', { range: 'bytes=2-5' });
    expect(mid.status).toBe(206);
    expect(mid.body).toBe('2345');
    expect(mid.headers['content-range']).toBe('bytes 2-5/10');
    expect(mid.headers['content-length']).toBe('4');
    expect((await get(port, '/a.txt', { range: 'bytes=7-' })).body).toBe('789');
    expect((await get(port, '/a.txt', { range: 'bytes=-3' })).body).toBe('789');
    const bad = await get(port, '/a.txt', { range: 'bytes=10-20' });
    expect(bad.status).toBe(416);
    expect(bad.headers['content-range']).toBe('bytes */10');
    const multi = await get(port, '/a.txt', { range: 'bytes=0-1,4-5' });
    expect(multi.status).toBe(200);
    expect(multi.body).toBe('0123456789');
    const stale = await get(port, '/a.txt', { range: 'bytes=0-1', 'if-range': '"old"' });
    expect(stale.status).toBe(200);
  });

  it('answers HEAD without a body and 405 to other methods', async () => {
    const { root } = tree();
    const port = await fileSite(root);
    const head = await get(port, '/a.txt', {}, 'HEAD');
    expect(head.status).toBe(200);
    expect(head.headers['content-length']).toBe('10');
    expect(head.body).toBe('');
    const post = await get(port, '/a.txt', {}, 'POST');
    expect(post.status).toBe(405);
    expect(post.headers.allow).toBe('GET, HEAD');
  });

  it('serves below a handle_path prefix', async () => {
    const { root } = tree();
    const port = await serve(
      newSite((s) => {
        s.handles = [block('handle_path', '/static/*', (b) => (b.handler = { kind: 'file_server', root }))];
      }),
    );
    expect((await get(port, '/static/a.txt')).body).toBe('0123456789');
    expect((await get(port, '/static/sub/')).body).toBe('sub home');
    const redirect = await get(port, '/static/sub');
    expect(redirect.headers.location).toBe('/static/sub/');
    expect((await get(port, '/static/%2e%2e/secret.txt')).body).not.toContain('SECRET');
  });
});

describe('under_attack', () => {
  async function attacked(difficulty: number) {
    const up = await upstream();
    const s = newSite((x) => {
      x.handler = defaultReverseProxy([up.address]);
      x.under_attack = { enabled: true, difficulty };
      x.header = [{ op: 'set', name: 'X-Site', value: 'guarded' }];
    });
    const routes: RouteSpec[] = ['app.test', 'other.test'].map((domain) => ({
      domain,
      origin: 'proxyfile',
      source: null,
      site: s,
    }));
    const { port } = await siteProxy(routes, { trustedProxies: ['127.0.0.1/32'] });
    return { up, port };
  }

  function solveFrom(page: string): { token: string; counter: string; difficulty: number } {
    const token = /var T="([^"]+)",D=(\d+)/.exec(page);
    if (token === null) throw new Error('no challenge in the page');
    const t = token[1] as string;
    const difficulty = Number(token[2]);
    for (let n = 0; ; n++) {
      if (leadingZeroBits(createHash('sha256').update(`${t}:${n}`).digest()) >= difficulty) {
        return { token: t, counter: String(n), difficulty };
      }
    }
  }

  const form = 'application/x-www-form-urlencoded';

  it('shows the challenge to a plain client, which never reaches the upstream', async () => {
    const { up, port } = await attacked(10);
    for (const method of ['GET', 'POST', 'HEAD']) {
      const r = await get(port, '/page', {}, method);
      expect(r.status).toBe(503);
      expect(r.headers['cache-control']).toBe('no-store');
      expect(r.headers['x-site']).toBe('guarded');
    }
    const page = await get(port, '/page');
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.body).toContain('crypto.subtle');
    expect(page.body).toContain(CHALLENGE_PATH);
    expect((await get(port, '/', { cookie: `${CLEARANCE_COOKIE}=99999999999.forged` })).status).toBe(503);
    expect(up.seen).toEqual([]);
  });

  it('sets a cookie for a solved challenge that lets this client, on this domain only, through', async () => {
    const { up, port } = await attacked(10);
    const { token, counter } = solveFrom((await get(port, '/page')).body);
    const body = `token=${encodeURIComponent(token)}&counter=${counter}`;
    expect((await get(port, CHALLENGE_PATH, { 'content-type': form }, 'POST', 'token=x&counter=1')).status).toBe(403);
    expect((await get(port, CHALLENGE_PATH, { 'content-type': form }, 'POST', 'nothing=1')).status).toBe(400);
    expect((await get(port, CHALLENGE_PATH)).status).toBe(405);
    // Solved for 127.0.0.1 on app.test: not valid when posted from another client IP.
    const elsewhere = await get(
      port,
      CHALLENGE_PATH,
      { 'content-type': form, 'x-forwarded-for': '198.51.100.4' },
      'POST',
      body,
    );
    expect(elsewhere.status).toBe(403);
    const solved = await get(port, CHALLENGE_PATH, { 'content-type': form }, 'POST', body);
    expect(solved.status).toBe(204);
    const setCookie = (solved.headers['set-cookie'] ?? [])[0] as string;
    expect(setCookie).toContain('HttpOnly');
    expect(setCookie).toContain('SameSite=Lax');
    expect(setCookie).not.toContain('Secure');
    const cookie = setCookie.slice(0, setCookie.indexOf(';'));
    const through = await get(port, '/page?q=1', { cookie });
    expect(through.status).toBe(200);
    expect(through.body).toBe('up /page?q=1');
    expect(through.headers['x-site']).toBe('guarded');
    expect((await get(port, '/page', { cookie, 'x-forwarded-for': '198.51.100.4' })).status).toBe(503);
    expect((await get(port, '/page', { cookie, host: 'other.test' })).status).toBe(503);
    expect(up.seen).toEqual(['/page?q=1']);
  });
});

describe('WebSocket upgrades', () => {
  /** An upstream that accepts every upgrade and records its URL. */
  async function wsUpstream(): Promise<{ address: UpstreamAddress; seen: string[] }> {
    const seen: string[] = [];
    const up = await loopbackUpstream((_q, s) => s.end('plain'));
    up.server.on('upgrade', (req, socket: Socket) => {
      seen.push(req.url ?? '');
      socket.on('error', () => {});
      socket.write('HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\n\r\n');
    });
    return { address: { host: '127.0.0.1', port: up.port }, seen };
  }

  /** Sends an upgrade request; resolves the status (101 when upgraded). */
  function upgrade(port: number, path: string, headers: http.OutgoingHttpHeaders = {}): Promise<number> {
    return new Promise((resolve, reject) => {
      const req = http.request({
        host: '127.0.0.1',
        port,
        path,
        agent: false,
        headers: { host: 'app.test', connection: 'Upgrade', upgrade: 'websocket', ...headers },
      });
      req.on('upgrade', (res, socket: Socket) => {
        socket.destroy();
        resolve(res.statusCode ?? 0);
      });
      req.on('response', (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end();
    });
  }

  it('checks basic_auth before forwarding, and strips a handle_path prefix', async () => {
    const up = await wsUpstream();
    const hash = bcrypt.hashSync('pw', 4);
    const port = await serve(
      newSite((s) => {
        s.basic_auth = { realm: 'ws', users: [{ user: 'u', hash }] };
        s.handles = [block('handle_path', '/ws/*', (b) => (b.handler = defaultReverseProxy([up.address])))];
      }),
    );
    expect(await upgrade(port, '/ws/chat')).toBe(401);
    expect(await upgrade(port, '/ws/chat', { authorization: basic('u', 'bad') })).toBe(401);
    expect(up.seen).toEqual([]);
    expect(await upgrade(port, '/ws/chat?room=1', { authorization: basic('u', 'pw') })).toBe(101);
    expect(up.seen).toEqual(['/chat?room=1']);
    expect(await upgrade(port, '/other', { authorization: basic('u', 'pw') })).toBe(403);
  });

  it('counts upgrades in a counter that answers later: over the limit, 429', async () => {
    const up = await wsUpstream();
    const shared = new RateLimiter({ limit: 1, now: () => 5_000 });
    const port = await serve(
      newSite((s) => {
        s.handler = defaultReverseProxy([up.address]);
        s.rate_limit = 1;
      }),
      {
        rateLimitCounter: () => ({ admit: (d, ip) => new Promise((r) => setTimeout(() => r(shared.admit(d, ip)), 5)) }),
      },
    );
    expect(await upgrade(port, '/socket')).toBe(101);
    expect(await upgrade(port, '/socket')).toBe(429);
    expect(up.seen).toEqual(['/socket']);
  });

  it('routes an upgrade by a named matcher: handle @name and reverse_proxy @name (issue 21)', async () => {
    const [chat, live] = [await wsUpstream(), await wsUpstream()];
    const port = await serve(
      newSite((s) => {
        s.matchers = {
          chat: { path: ['/chat/*'], method: null, header: [] },
          live: { path: null, method: null, header: [{ name: 'X-Live', values: ['1'] }] },
        };
        s.handles = [block('handle', null, (b) => (b.handler = defaultReverseProxy([chat.address])))];
        (s.handles[0] as HandleBlock).matcher = 'chat';
        s.matched_proxies = [{ matcher: 'live', handler: defaultReverseProxy([live.address]) }];
        s.handler = { kind: 'respond', body: 'no sockets here', status: 200 };
      }),
    );
    expect(await upgrade(port, '/chat/room')).toBe(101);
    expect(await upgrade(port, '/feed', { 'x-live': '1' })).toBe(101);
    // Neither matcher: the site's own handler is not reverse_proxy, so the upgrade is refused.
    expect(await upgrade(port, '/feed')).toBe(403);
    expect(chat.seen).toEqual(['/chat/room']);
    expect(live.seen).toEqual(['/feed']);
  });

  it('refuses an upgrade without the under_attack clearance', async () => {
    const up = await wsUpstream();
    const port = await serve(
      newSite((s) => {
        s.handler = defaultReverseProxy([up.address]);
        s.under_attack = { enabled: true, difficulty: 8 };
      }),
    );
    expect(await upgrade(port, '/socket')).toBe(403);
    expect(up.seen).toEqual([]);
  });
});
