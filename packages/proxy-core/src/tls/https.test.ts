import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { defaultReverseProxy, emptySite, type RouteSpec } from '@proxyd/model';
import { describe, expect, it } from 'vitest';
import { onCleanup, proxy, selfSigned, upstream } from '../loopback.test-helpers.js';
import { loadManualCertificates, MemoryCertificateStore } from './certificate-store.js';

function request(
  mod: typeof http | typeof https,
  options: https.RequestOptions,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = mod.request({ agent: false, ...options }, (res) => {
      let body = '';
      res.on('data', (c) => {
        body += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function tlsUpstream(files: { cert: string; key: string }): Promise<number> {
  const server = https.createServer({ cert: readFileSync(files.cert), key: readFileSync(files.key) }, (req, res) =>
    res.end(`tls upstream saw ${req.headers['x-forwarded-proto']}`),
  );
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  onCleanup(
    () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  );
  return (server.address() as AddressInfo).port;
}

describe('upstream TLS', () => {
  it('verifies the upstream certificate by default and trusts ca_file', async () => {
    const files = selfSigned(['upstream.internal', '127.0.0.1']);
    const port = await tlsUpstream(files);
    const site = (domain: string, ca: string | null, serverName: string | null = null): RouteSpec => {
      const s = emptySite([{ scheme: 'http', host: domain, port: null }]);
      const handler = defaultReverseProxy([{ host: '127.0.0.1', port }]);
      handler.tls = { enabled: true, insecure_skip_verify: false, server_name: serverName, ca_file: ca };
      s.handler = handler;
      return { domain, origin: 'proxyfile', source: null, site: s };
    };
    const skip = site('skip.test', null);
    if (skip.site.handler?.kind === 'reverse_proxy') skip.site.handler.tls.insecure_skip_verify = true;
    const { port: proxyPort } = await proxy([
      site('untrusted.test', null),
      site('trusted.test', files.cert, 'upstream.internal'),
      skip,
    ]);
    const untrusted = await request(http, { port: proxyPort, headers: { host: 'untrusted.test' } });
    expect(untrusted.status).toBe(502);
    const trusted = await request(http, { port: proxyPort, headers: { host: 'trusted.test' } });
    expect(trusted.status).toBe(200);
    expect(trusted.body).toBe('tls upstream saw http');
    const skipped = await request(http, { port: proxyPort, headers: { host: 'skip.test' } });
    expect(skipped.status).toBe(200);
  });
});

describe('HTTPS listener', () => {
  it('serves each host its own certificate by SNI and redirects HTTP to HTTPS', async () => {
    const a = selfSigned(['a.test']);
    const b = selfSigned(['b.test']);
    const up = await upstream((req, res) => res.end(`hello ${req.headers['x-forwarded-proto']}`));
    const route = (domain: string, files: { cert: string; key: string } | null): RouteSpec => {
      const s = emptySite([{ scheme: null, host: domain, port: null }]);
      s.tls = files
        ? { mode: 'manual', cert_file: files.cert, key_file: files.key, on_demand: false }
        : { mode: 'auto', cert_file: null, key_file: null, on_demand: false };
      s.handler = defaultReverseProxy([{ host: '127.0.0.1', port: up.port }]);
      return { domain, origin: 'proxyfile', source: null, site: s };
    };
    const routes = [route('a.test', a), route('b.test', b), route('nocert.test', null)];
    const store = new MemoryCertificateStore();
    const { errors } = loadManualCertificates(store, routes);
    expect(errors).toEqual([]);
    const { server, port: httpPort } = await proxy(routes, { certificates: store, httpsPort: 8443 });
    const { port: httpsPort } = await server.listenHttps(0);

    for (const [host, files] of [
      ['a.test', a],
      ['b.test', b],
    ] as const) {
      const reply = await request(https, {
        port: httpsPort,
        servername: host,
        headers: { host },
        ca: readFileSync(files.cert),
      });
      expect(reply.status).toBe(200);
      expect(reply.body).toBe('hello https');
      expect(reply.headers['strict-transport-security']).toMatch(/max-age=/);
    }
    await expect(
      request(https, {
        port: httpsPort,
        servername: 'unknown.test',
        headers: { host: 'unknown.test' },
        rejectUnauthorized: false,
      }),
    ).rejects.toThrow();

    const redirect = await request(http, { port: httpPort, path: '/p?q=1', headers: { host: 'a.test' } });
    expect(redirect.status).toBe(308);
    expect(redirect.headers.location).toBe('https://a.test:8443/p?q=1');
    const challenge = await request(http, {
      port: httpPort,
      path: '/.well-known/acme-challenge/x',
      headers: { host: 'a.test' },
    });
    expect(challenge.status).toBe(200);
    const noCert = await request(http, { port: httpPort, headers: { host: 'nocert.test' } });
    expect(noCert.status).toBe(200);
    expect(noCert.body).toBe('hello http');
  });
});
