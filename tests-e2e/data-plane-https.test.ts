import { appendFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selfSigned } from './support/certs.js';
import { type RunningProxyd, request, startProxyd, startUpstream } from './support/proxyd.js';

/** GET / over HTTPS on 127.0.0.1:`port` with SNI and Host `host`, trusting only `caFile`. */
function httpsGet(
  port: number,
  host: string,
  caFile: string,
): Promise<{ status: number; body: string; hsts: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      { host: '127.0.0.1', port, servername: host, headers: { host }, ca: readFileSync(caFile), agent: false },
      (res) => {
        let body = '';
        res.on('data', (c) => {
          body += c;
        });
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            body,
            hsts: res.headers['strict-transport-security'] as string | undefined,
          }),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

// The built daemon serving a site with `tls <cert> <key>` (a self-signed
// certificate made with openssl): HTTPS by SNI on https_port, HTTP → HTTPS
// redirect, HSTS on HTTPS responses.
describe('data plane HTTPS (built daemon)', () => {
  let proxyd: RunningProxyd;
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  let dir = '';
  let httpsPort = 0;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'proxyd-e2e-tls-'));
    selfSigned(dir, ['secure.test']);
    upstream = await startUpstream((req, res) => res.end(`proto=${req.headers['x-forwarded-proto']}`));
    proxyd = await startProxyd({
      autoHttps: 'on',
      sites: `secure.test {
\ttls ${path.join(dir, 'cert.pem')} ${path.join(dir, 'key.pem')}
\treverse_proxy 127.0.0.1:${upstream.port}
}
`,
    });
    const proxyfile = readFileSync(proxyd.configPath, 'utf8');
    httpsPort = Number(/https_port (\d+)/.exec(proxyfile)?.[1]);
  });

  afterAll(async () => {
    await proxyd?.stop();
    await upstream?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves the manual certificate by SNI and forwards with X-Forwarded-Proto https', async () => {
    const reply = await httpsGet(httpsPort, 'secure.test', path.join(dir, 'cert.pem'));
    expect(reply.status).toBe(200);
    expect(reply.body).toBe('proto=https');
    expect(reply.hsts).toMatch(/max-age=\d+/);
  });

  it('redirects plain HTTP to HTTPS with 308 and the https_port', async () => {
    const res = await request(proxyd.httpPort, { path: '/a?b=1', headers: { host: 'secure.test' } });
    expect(res.status).toBe(308);
    expect(res.headers.location).toBe(`https://secure.test:${httpsPort}/a?b=1`);
  });
});

describe('HTTPS added by a reload (built daemon)', () => {
  it('opens the https_port listener when a reload brings the first certificate, then redirects to it', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'proxyd-e2e-tls-reload-'));
    selfSigned(dir, ['later.test']);
    const upstream = await startUpstream((req, res) => res.end(`proto=${req.headers['x-forwarded-proto']}`));
    const proxyd = await startProxyd({
      autoHttps: 'on',
      sites: `http://plain.test {\n\treverse_proxy 127.0.0.1:${upstream.port}\n}\n`,
    });
    try {
      const httpsPort = Number(/https_port (\d+)/.exec(readFileSync(proxyd.configPath, 'utf8'))?.[1]);
      expect(proxyd.output()).not.toContain(`:${httpsPort}`);
      appendFileSync(
        proxyd.configPath,
        `\nlater.test {\n\ttls ${path.join(dir, 'cert.pem')} ${path.join(dir, 'key.pem')}\n\treverse_proxy 127.0.0.1:${upstream.port}\n}\n`,
      );
      proxyd.child.kill('SIGHUP');
      let redirect = await request(proxyd.httpPort, { path: '/x', headers: { host: 'later.test' } });
      for (let i = 0; i < 100 && redirect.status !== 308; i++) {
        await new Promise((r) => setTimeout(r, 50));
        redirect = await request(proxyd.httpPort, { path: '/x', headers: { host: 'later.test' } });
      }
      expect(redirect.status).toBe(308);
      expect(redirect.headers.location).toBe(`https://later.test:${httpsPort}/x`);
      const { body } = await httpsGet(httpsPort, 'later.test', path.join(dir, 'cert.pem'));
      expect(body).toBe('proto=https');
      expect((await request(proxyd.httpPort, { headers: { host: 'plain.test' } })).body).toBe('proto=http');
    } finally {
      await proxyd.stop();
      await upstream.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
