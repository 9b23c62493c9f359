import { defaultReverseProxy, emptySite, type RouteSpec } from '@proxyd/model';
import bcrypt from 'bcryptjs';
import { describe, expect, it } from 'vitest';
import type { ChallengeResponder } from './challenge.js';
import type { RequestRecord } from './hooks.js';
import { get, selfSigned, site, siteProxy, until, upstream } from './loopback.test-helpers.js';
import { loadManualCertificates, MemoryCertificateStore } from './tls/certificate-store.js';

/** Answers `token` for `host` only, and remembers every question. */
function fakeResponder(host: string, token: string, answer: string): ChallengeResponder & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    respond(t, h) {
      asked.push(`${h} ${t}`);
      return h === host && t === token ? answer : null;
    },
  };
}

/** An HTTPS site (no `http://`) with a manual certificate: plain HTTP to it is redirected. */
function httpsRoute(domain: string, files: { cert: string; key: string }, port: number): RouteSpec {
  const s = emptySite([{ scheme: null, host: domain, port: null }]);
  s.tls = { mode: 'manual', cert_file: files.cert, key_file: files.key, on_demand: false };
  s.handler = defaultReverseProxy([{ host: '127.0.0.1', port }]);
  return { domain, origin: 'proxyfile', source: null, site: s };
}

describe('ChallengeResponder', () => {
  it('answers a challenge before host matching, redirects and basic_auth', async () => {
    const up = await upstream();
    const files = selfSigned(['secure.test']);
    const hash = bcrypt.hashSync('pw', 4);
    const routes = [
      httpsRoute('secure.test', files, up.port),
      site('locked.test', [up.port], (s) => {
        s.basic_auth = { realm: 'r', users: [{ user: 'ann', hash }] };
      }),
    ];
    const certificates = new MemoryCertificateStore();
    expect(loadManualCertificates(certificates, routes).errors).toEqual([]);
    const responders = {
      'nobody.test': fakeResponder('nobody.test', 'tok-1', 'tok-1.key-a'),
      'secure.test': fakeResponder('secure.test', 'tok-2', 'tok-2.key-b'),
      'locked.test': fakeResponder('locked.test', 'tok-3', 'tok-3.key-c'),
    };
    const challenges: ChallengeResponder = {
      respond: (token, host) => responders[host as keyof typeof responders]?.respond(token, host) ?? null,
    };
    const records: RequestRecord[] = [];
    const { server, port } = await siteProxy(routes, {
      certificates,
      challenges,
      hooks: { onRequest: (r) => records.push(r) },
    });
    await server.listenHttps(0);

    // Today's behaviour first, for the same hosts outside the challenge path.
    expect((await get(port, 'nobody.test', '/x')).status).toBe(404);
    expect((await get(port, 'secure.test', '/x')).status).toBe(308);
    expect((await get(port, 'locked.test', '/x')).status).toBe(401);

    for (const [host, token, answer] of [
      ['nobody.test', 'tok-1', 'tok-1.key-a'],
      ['secure.test', 'tok-2', 'tok-2.key-b'],
      ['locked.test', 'tok-3', 'tok-3.key-c'],
    ] as const) {
      const reply = await get(port, `${host.toUpperCase()}:80`, `/.well-known/acme-challenge/${token}?x=1`);
      expect(reply.status).toBe(200);
      expect(reply.body).toBe(answer);
      expect(reply.headers['content-type']).toBe('text/plain; charset=utf-8');
      expect(responders[host].asked).toEqual([`${host} ${token}`]);
    }
    expect(up.seen).toHaveLength(0);
    await until(() => records.length === 6);
    expect(records[3]).toMatchObject({ host: 'nobody.test', domain: null, status: 200, bytesSent: 11 });
  });

  it('lets a challenge the responder does not know go on as any request', async () => {
    const up = await upstream((req, res) => res.end(`upstream ${req.url}`));
    const files = selfSigned(['secure.test']);
    const routes = [httpsRoute('secure.test', files, up.port)];
    const certificates = new MemoryCertificateStore();
    loadManualCertificates(certificates, routes);
    const responder = fakeResponder('secure.test', 'known', 'known.key');
    const { server, port } = await siteProxy(routes, { certificates, challenges: responder });
    await server.listenHttps(0);
    // Not redirected (as without a responder): the site answers.
    const reply = await get(port, 'secure.test', '/.well-known/acme-challenge/unknown');
    expect(reply.status).toBe(200);
    expect(reply.body).toBe('upstream /.well-known/acme-challenge/unknown');
    expect((await get(port, 'nobody.test', '/.well-known/acme-challenge/unknown')).status).toBe(404);
    expect(responder.asked).toEqual(['secure.test unknown', 'nobody.test unknown']);
  });
});
