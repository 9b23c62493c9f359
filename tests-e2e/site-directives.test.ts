import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import type http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningProxyd, request, startProxyd, startUpstream } from './support/proxyd.js';

// bcrypt (cost 4) of "s3cret".
const HASH = '$2b$04$383.IHhlMSk7hl.myS0P7OCdZvsajNYkTMufF7KwecNQCj3cVwIiq';

describe('site directives through the built daemon (Proxyfile → compileSite)', () => {
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  let proxyd: RunningProxyd;
  let dir: string;
  const hits: string[] = [];

  beforeAll(async () => {
    upstream = await startUpstream((req: http.IncomingMessage, res: http.ServerResponse) => {
      hits.push(req.url ?? '');
      res.writeHead(200, { 'content-type': 'text/plain' }).end(`upstream ${req.url}`);
    });
    dir = await mkdtemp(path.join(tmpdir(), 'proxyd-site-'));
    await writeFile(path.join(dir, 'secret.txt'), 'TOP SECRET');
    const www = path.join(dir, 'www');
    await mkdir(www);
    await writeFile(path.join(www, 'hello.txt'), 'static hello');
    await symlink(path.join(dir, 'secret.txt'), path.join(www, 'escape'));
    const up = `127.0.0.1:${upstream.port}`;
    proxyd = await startProxyd({
      sites: `http://site.test {
	header {
		X-Custom hello
		-X-Frame-Options
	}
	redir /old/* /new/{http.request.uri.path.remainder} 301
	handle /admin/* {
		basic_auth "Admin area" {
			ann ${HASH}
		}
		respond "admin ok" 200
	}
	handle_path /api/* {
		reverse_proxy ${up}
	}
	handle_path /static/* {
		root ${www}
		file_server
	}
	handle {
		reverse_proxy ${up}
	}
}

http://limited.test {
	rate_limit 3/s
	reverse_proxy ${up}
}
`,
    });
  });

  afterAll(async () => {
    await proxyd?.stop();
    await upstream?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const get = (host: string, p: string, headers: http.OutgoingHttpHeaders = {}) =>
    request(proxyd.httpPort, { path: p, headers: { host, ...headers } });

  it('applies the default security headers and the header block to proxied responses', async () => {
    const r = await get('site.test', '/page');
    expect(r.body).toBe('upstream /page');
    expect(r.headers['x-content-type-options']).toBe('nosniff');
    expect(r.headers['x-frame-options']).toBeUndefined();
    expect(r.headers['x-custom']).toBe('hello');
    expect(r.headers['strict-transport-security']).toBeUndefined();
  });

  it('redirects with the path remainder', async () => {
    const r = await get('site.test', '/old/a/b');
    expect(r.status).toBe(301);
    expect(r.headers.location).toBe('/new/a/b');
  });

  it('routes by the most specific handle, strips handle_path prefixes, serves files', async () => {
    expect((await get('site.test', '/api/users?id=1')).body).toBe('upstream /users?id=1');
    expect((await get('site.test', '/static/hello.txt')).body).toBe('static hello');
    const escaped = await get('site.test', '/static/escape');
    expect(escaped.status).toBe(403);
    expect(escaped.body).not.toContain('SECRET');
    expect((await get('site.test', '/static/%2e%2e/secret.txt')).body).not.toContain('SECRET');
  });

  it('asks for credentials on the admin block only', async () => {
    const denied = await get('site.test', '/admin/panel');
    expect(denied.status).toBe(401);
    expect(denied.headers['www-authenticate']).toBe('Basic realm="Admin area"');
    expect(denied.headers['x-custom']).toBe('hello');
    const auth = `Basic ${Buffer.from('ann:s3cret').toString('base64')}`;
    const ok = await get('site.test', '/admin/panel', { authorization: auth });
    expect(ok.status).toBe(200);
    expect(ok.body).toBe('admin ok');
    expect(hits).not.toContain('/admin/panel');
  });

  it('limits a client to n requests a second with 429 and Retry-After: 1', async () => {
    const statuses: number[] = [];
    let retryAfter: string | undefined;
    for (let i = 0; i < 8; i++) {
      const r = await get('limited.test', `/burst-${i}`);
      statuses.push(r.status);
      if (r.status === 429) retryAfter = r.headers['retry-after'] as string;
    }
    expect(statuses.slice(0, 3)).toEqual([200, 200, 200]);
    expect(statuses.filter((s) => s === 200)).toHaveLength(3);
    expect(retryAfter).toBe('1');
    await new Promise((r) => setTimeout(r, 2_100));
    expect((await get('limited.test', '/after')).status).toBe(200);
  });
});
