import { mkdtemp } from 'node:fs/promises';
import type http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningProxyd, request, startProxyd, startUpstream } from './support/proxyd.js';

const FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking'];

/**
 * An auth server with Authelia's forward-auth contract (Authelia, Authentik
 * and oauth2-proxy are Go programs not installed here, so the test plays
 * the part with the same HTTP exchange): `GET /api/authz/forward-auth`
 * answers 200 with `Remote-User` for a session cookie, else 302 to its
 * login portal with `rd=` built from the X-Forwarded-* headers; the portal
 * (`/auth/login`) sets the cookie and sends the browser back to `rd`.
 */
function authServer(seen: http.IncomingHttpHeaders[]): http.RequestListener {
  return (req, res) => {
    const url = new URL(req.url ?? '/', 'http://auth');
    if (url.pathname === '/api/authz/forward-auth') {
      seen.push(req.headers);
      if ((req.headers.cookie ?? '').includes('session=alice-token')) {
        res.writeHead(200, { 'remote-user': 'alice', 'remote-groups': 'admins' }).end();
        return;
      }
      const back = `${req.headers['x-forwarded-proto']}://${req.headers['x-forwarded-host']}${req.headers['x-forwarded-uri']}`;
      res.writeHead(302, { location: `/auth/login?rd=${encodeURIComponent(back)}`, 'content-type': 'text/html' });
      res.end('<a href="/auth/login">login</a>');
      return;
    }
    if (url.pathname === '/auth/login' && req.method === 'GET') {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(`<form method="post" action="/auth/login?rd=${encodeURIComponent(url.searchParams.get('rd') ?? '/')}">
<input name="user" id="user"><input name="password" id="password" type="password"><button id="go">sign in</button></form>`);
      return;
    }
    if (url.pathname === '/auth/login' && req.method === 'POST') {
      let body = '';
      req.on('data', (c: Buffer) => {
        body += c.toString();
      });
      req.on('end', () => {
        const form = new URLSearchParams(body);
        if (form.get('user') !== 'alice' || form.get('password') !== 'wonderland') {
          res.writeHead(401, { 'content-type': 'text/plain' }).end('bad credentials');
          return;
        }
        res.writeHead(302, {
          'set-cookie': 'session=alice-token; Path=/; HttpOnly',
          location: url.searchParams.get('rd') ?? '/',
        });
        res.end();
      });
      return;
    }
    res.writeHead(404).end();
  };
}

// Issue 34, group 3: forward_auth through the built daemon, with Chromium
// following the auth server's redirect to its login page and back.
describe('forward_auth login redirect (built daemon, Chromium)', () => {
  let proxyd: RunningProxyd;
  let auth: Awaited<ReturnType<typeof startUpstream>>;
  let app: Awaited<ReturnType<typeof startUpstream>>;
  let context: BrowserContext;
  const seen: http.IncomingHttpHeaders[] = [];

  beforeAll(async () => {
    auth = await startUpstream(authServer(seen));
    app = await startUpstream((req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(
        `<p id="who">hello ${req.headers['remote-user'] ?? 'nobody'} (${req.headers['remote-groups'] ?? '-'}) at ${req.url}</p>`,
      );
    });
    proxyd = await startProxyd({
      sites: `http://app.localhost:HTTP_PORT {
	@protected not path /auth/*
	forward_auth @protected 127.0.0.1:${auth.port} {
		uri /api/authz/forward-auth
		copy_headers Remote-User Remote-Groups
	}
	handle /auth/* {
		reverse_proxy 127.0.0.1:${auth.port}
	}
	reverse_proxy 127.0.0.1:${app.port}
}
`,
    });
    context = await chromium.launchPersistentContext(await mkdtemp(path.join(tmpdir(), 'proxyd-chromium-')), {
      executablePath: '/usr/bin/chromium',
      headless: true,
      args: FLAGS,
    });
  });

  afterAll(async () => {
    await context?.close();
    await proxyd?.stop();
    await auth?.close();
    await app?.close();
  });

  it('sends an anonymous browser to the login page, and back to the page it asked for once signed in', async () => {
    const page = await context.newPage();
    const base = `http://app.localhost:${proxyd.httpPort}`;
    await page.goto(`${base}/dashboard?tab=2`);
    // The auth server's 302 was relayed: the browser is on its login page.
    expect(new URL(page.url()).pathname).toBe('/auth/login');
    expect(new URL(page.url()).searchParams.get('rd')).toBe(`${base}/dashboard?tab=2`);
    await page.fill('#user', 'alice');
    await page.fill('#password', 'wonderland');
    await Promise.all([page.waitForURL(`${base}/dashboard?tab=2`), page.click('#go')]);
    expect(await page.textContent('#who')).toBe('hello alice (admins) at /dashboard?tab=2');
    // What the auth server was told about the original request (Chromium also asks for /favicon.ico).
    const asked = seen.filter((h) => h['x-forwarded-uri'] === '/dashboard?tab=2');
    expect(asked.length).toBe(2);
    expect(asked.at(-1)).toMatchObject({
      'x-forwarded-method': 'GET',
      'x-forwarded-proto': 'http',
      'x-forwarded-host': `app.localhost:${proxyd.httpPort}`,
      'x-forwarded-uri': '/dashboard?tab=2',
      'x-forwarded-for': '127.0.0.1',
    });
    await page.close();
  });

  it('never lets a client send its own Remote-User', async () => {
    const anonymous = await request(proxyd.httpPort, {
      path: '/x',
      headers: { host: 'app.localhost', 'remote-user': 'mallory' },
    });
    expect(anonymous.status).toBe(302);
    const signedIn = await request(proxyd.httpPort, {
      path: '/x',
      headers: { host: 'app.localhost', cookie: 'session=alice-token', 'remote-user': 'mallory', 'remote-groups': 'x' },
    });
    expect(signedIn).toMatchObject({ status: 200, body: '<p id="who">hello alice (admins) at /x</p>' });
  });
});
