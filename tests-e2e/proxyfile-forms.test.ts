import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, adminCall } from './support/admin.js';
import { freePort, proxydCommand, type RunningProxyd, request, startProxyd, startUpstream } from './support/proxyd.js';

// Issue 21: the Proxyfile forms Caddy users write, against the built daemon
// and with curl as the client.

const FIXTURES = fileURLToPath(new URL('../packages/proxyfile/test/fixtures/', import.meta.url));

function run(file: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(file, args, { timeout: 30_000 }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === 'number' ? err.code : 1;
      resolve({ code, stdout, stderr });
    });
  });
}

/** `curl -s -i` against 127.0.0.1:port with a Host header; status, lowercase headers and body. */
async function curl(
  port: number,
  host: string,
  pathAndQuery = '/',
  extra: string[] = [],
): Promise<{ status: number; headers: Record<string, string>; body: string }> {
  const r = await run('curl', [
    '-s',
    '-i',
    '--max-time',
    '10',
    '-H',
    `Host: ${host}`,
    ...extra,
    `http://127.0.0.1:${port}${pathAndQuery}`,
  ]);
  expect(r.code, r.stderr).toBe(0);
  const at = r.stdout.indexOf('\r\n\r\n');
  const head = r.stdout.slice(0, at).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of head.slice(1)) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(head[0]?.split(' ')[1]), headers, body: r.stdout.slice(at + 4) };
}

describe("proxyd validate: Debian's default Caddyfile", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'proxyd-e2e-forms-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('validates the text verbatim (caddy 2.6.2-5, /etc/caddy/Caddyfile)', async () => {
    const golden = await readFile(path.join(FIXTURES, 'caddy-debian-default.txt'), 'utf8');
    const file = path.join(dir, 'Caddyfile');
    await writeFile(file, golden.slice(0, golden.indexOf('----------\n')));
    const command = proxydCommand(['validate', '--config', file]);
    expect(await run(command.file, command.args)).toEqual({
      code: 0,
      stdout: 'Valid configuration: 1 site, 0 upstreams\n',
      stderr: '',
    });
  });

  it('names the position of an unknown matcher', async () => {
    const file = path.join(dir, 'Proxyfile');
    await writeFile(file, 'a.test {\n\t@api path /api/*\n\treverse_proxy @apii 127.0.0.1:9000\n}\n');
    const command = proxydCommand(['validate', '--config', file]);
    const r = await run(command.file, command.args);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`${file}:3:16: unknown matcher "@apii", did you mean "@api"?`);
  });
});

describe('catch-all sites, matchers and placeholders (built daemon, curl)', () => {
  let proxyd: RunningProxyd;
  let site: Awaited<ReturnType<typeof startUpstream>>;
  let api: Awaited<ReturnType<typeof startUpstream>>;
  let root: string;
  let sitePort: number;

  beforeAll(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'proxyd-e2e-forms-root-'));
    await writeFile(path.join(root, 'index.html'), '<p>caddy default page</p>\n');
    site = await startUpstream((req, res) => res.end(`site ${req.method} ${req.url} ${req.headers['x-up-host']}`));
    api = await startUpstream((req, res) => res.end(`api ${req.method} ${req.url}`));
    sitePort = await freePort();
    proxyd = await startProxyd({
      env: { PROXY_ADMIN_TOKEN: ADMIN_TOKEN },
      sites: `:HTTP_PORT {
\troot * ${root}
\tfile_server
}

http://app.localhost {
\t@api {
\t\tpath /api/*
\t\tmethod GET POST
\t}
\t@legacy header X-Legacy *
\tredir @legacy https://new.localhost{uri} 301
\theader X-Seen-Path {path}
\treverse_proxy @api :${api.port}
\treverse_proxy localhost:${site.port} {
\t\theader_up X-Up-Host {host}
\t}
}

:${sitePort} {
\trespond "any host on ${sitePort}: {host} asked {uri}"
}
`,
    });
  });
  afterAll(async () => {
    await proxyd?.stop();
    await site?.close();
    await api?.close();
    await rm(root, { recursive: true, force: true });
  });

  it('the catch-all on the http_port serves any host that no named site takes', async () => {
    const page = await curl(proxyd.httpPort, 'unknown.example');
    expect(page.status).toBe(200);
    expect(page.body).toBe('<p>caddy default page</p>\n');
    expect((await curl(proxyd.httpPort, '192.0.2.10')).body).toBe('<p>caddy default page</p>\n');
    // The named site still answers its own host.
    expect((await curl(proxyd.httpPort, 'app.localhost', '/x')).body).toBe('site GET /x app.localhost');
  });

  it('the catch-all on a site port answers every host there, with placeholders', async () => {
    const r = await curl(sitePort, 'App.Localhost:1', '/p?q=1');
    expect(r).toMatchObject({ status: 200, body: `any host on ${sitePort}: app.localhost asked /p?q=1` });
  });

  it('named matchers route reverse_proxy and redir; header values take placeholders', async () => {
    const apiAnswer = await curl(proxyd.httpPort, 'app.localhost', '/api/v', ['-X', 'POST']);
    expect(apiAnswer.body).toBe('api POST /api/v');
    expect(apiAnswer.headers['x-seen-path']).toBe('/api/v');
    // DELETE is not in @api: the site's own upstream answers.
    expect((await curl(proxyd.httpPort, 'app.localhost', '/api/v', ['-X', 'DELETE'])).body).toBe(
      'site DELETE /api/v app.localhost',
    );
    const moved = await curl(proxyd.httpPort, 'app.localhost', '/a?b=1', ['-H', 'X-Legacy: 1']);
    expect(moved.status).toBe(301);
    expect(moved.headers.location).toBe('https://new.localhost/a?b=1');
  });

  it('GET /routes lists the catch-alls in the documented route shape', async () => {
    const r = await adminCall(proxyd.adminPort, 'GET', '/routes');
    expect(r.status).toBe(200);
    const routes = JSON.parse(r.body) as { domain: string; upstream: string | null }[];
    const byDomain = new Map(routes.map((route) => [route.domain, route]));
    expect(byDomain.get(`*:${proxyd.httpPort}`)).toEqual({
      domain: `*:${proxyd.httpPort}`,
      upstream: null,
      tls: false,
      rate_limit_rps: null,
      under_attack: false,
      source: null,
    });
    expect(byDomain.get(`*:${sitePort}`)?.upstream).toBeNull();
    expect(byDomain.get('app.localhost')?.upstream).toBe(`localhost:${site.port}`);
  });

  it('keeps serving after a reload (POST /reload re-reads the same forms)', async () => {
    const r = await adminCall(proxyd.adminPort, 'POST', '/reload');
    expect(r.status).toBe(200);
    expect((await request(proxyd.httpPort, { headers: { host: 'other.example' } })).status).toBe(200);
  });
});
