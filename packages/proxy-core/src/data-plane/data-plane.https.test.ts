import { readFileSync } from 'node:fs';
import http2 from 'node:http2';
import { createSecureContext, type SecureContext, type SecureVersion } from 'node:tls';
import { type Config, defaultGlobalOptions, emptySite, type RouteSpec, type Site } from '@proxyd/model';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ChallengeResponder } from '../challenge.js';
import { get, selfSigned, until } from '../loopback.test-helpers.js';
import type { CertificateStore } from '../tls/certificate-store.js';
import { ACME_TLS_1, type AlpnChallengeResponder } from '../tls/handshake.js';
import { alertOf, fingerprintOf, getOver, h2Request, handshake } from '../tls/tls-client.test-helpers.js';
import { DataPlane, type DataPlaneOptions } from './data-plane.js';

type Files = { cert: string; key: string };

const HANDSHAKE_FAILURE = 40;

const contextOf = (files: Files): SecureContext =>
  createSecureContext({ cert: readFileSync(files.cert), key: readFileSync(files.key) });

/**
 * A stand-in for the certificates manager (the external store the daemon
 * passes): its certificates appear, are renewed and go away while the data
 * plane runs.
 */
class FakeManager implements CertificateStore {
  readonly contexts = new Map<string, SecureContext>();
  contextFor(serverName: string): SecureContext | null {
    return this.contexts.get(serverName) ?? null;
  }
  has(host: string): boolean {
    return this.contexts.has(host);
  }
}

/** `<address> { respond "<body>" }` for each entry, http_port and https_port 0: the config and its routes. */
function sites(entries: [address: 'http' | null, host: string, body: string][]): {
  config: Config;
  routes: RouteSpec[];
} {
  const list: Site[] = entries.map(([scheme, host, body]) => {
    const site = emptySite([{ scheme, host, port: null }]);
    site.handler = { kind: 'respond', status: 200, body };
    return site;
  });
  const global = defaultGlobalOptions();
  global.http_port = 0;
  global.https_port = 0;
  const routes = list.map(
    (site): RouteSpec => ({ domain: site.addresses[0]?.host ?? '', origin: 'api', source: null, site }),
  );
  return { config: { global, sites: [] }, routes };
}

describe('automatic HTTPS on the data plane (real loopback listeners)', () => {
  let plane: DataPlane | undefined;
  afterEach(async () => {
    await plane?.close();
    plane = undefined;
  });
  const start = async (entries: Parameters<typeof sites>[0], options: DataPlaneOptions) => {
    const { config, routes } = sites(entries);
    plane = await DataPlane.start(config, routes, {}, { bindHost: '127.0.0.1', ...options });
    return plane;
  };

  it('opens the https_port at start for TLS-ALPN-01 before any certificate; the site is served over HTTP meanwhile', async () => {
    const challenge = selfSigned(['a.test']);
    const alpnChallenges: AlpnChallengeResponder = {
      contextFor: (name) => (name === 'a.test' ? contextOf(challenge) : null),
    };
    const dp = await start([[null, 'a.test', 'site']], { certificates: new FakeManager(), alpnChallenges });
    const https = dp.httpsAddress;
    expect(https).not.toBeNull();
    const port = https?.port ?? 0;
    const acme = await handshake(port, { servername: 'a.test', alpn: [ACME_TLS_1] });
    expect(acme.fingerprint).toBe(fingerprintOf(challenge.cert));
    // Until a certificate exists: HTTP served, not redirected; HTTPS handshake_failure.
    const reply = await get(dp.httpAddress.port, 'a.test', '/p');
    expect(reply).toMatchObject({ status: 200, body: 'site' });
    expect(reply.headers['strict-transport-security']).toBeUndefined();
    expect(await alertOf(handshake(port, { servername: 'a.test', alpn: ['http/1.1'] }))).toBe(HANDSHAKE_FAILURE);
  });

  it("sets TCP_NODELAY on the HTTPS listener's connections, as on the HTTP one (issue 30)", async () => {
    // tls.Server leaves Nagle on by default: a response written in two parts then waited for the client's
    // delayed ACK (~40 ms). net.Server applies `noDelay` to every connection it accepts.
    const created = vi.spyOn(http2, 'createSecureServer');
    try {
      const challenge = selfSigned(['a.test']);
      const alpnChallenges: AlpnChallengeResponder = {
        contextFor: (name) => (name === 'a.test' ? contextOf(challenge) : null),
      };
      const dp = await start([[null, 'a.test', 'site']], { certificates: new FakeManager(), alpnChallenges });
      expect(dp.httpsAddress).not.toBeNull();
      expect(created).toHaveBeenCalledTimes(1);
      const server = created.mock.results[0]?.value as { noDelay?: boolean } | undefined;
      expect(server?.noDelay).toBe(true);
    } finally {
      created.mockRestore();
    }
  });

  it('without alpnChallenges and without a certificate, opens no https_port', async () => {
    const dp = await start([[null, 'a.test', 'site']], { certificates: new FakeManager() });
    expect(dp.httpsAddress).toBeNull();
    expect(await get(dp.httpAddress.port, 'a.test')).toMatchObject({ status: 200, body: 'site' });
  });

  it('opens the https_port at start for an on-demand site with an external store', async () => {
    const { config, routes } = sites([[null, 'a.test', 'site']]);
    (routes[0] as RouteSpec).site.tls.on_demand = true;
    plane = await DataPlane.start(config, routes, {}, { bindHost: '127.0.0.1', certificates: new FakeManager() });
    expect(plane.httpsAddress).not.toBeNull();
    const bare = sites([[null, 'a.test', 'site']]);
    (bare.routes[0] as RouteSpec).site.tls.on_demand = true;
    const manualOnly = await DataPlane.start(bare.config, bare.routes, {}, { bindHost: '127.0.0.1' });
    try {
      expect(manualOnly.httpsAddress).toBeNull();
    } finally {
      await manualOnly.close();
    }
  });

  it('opens the https_port on the setRoutes that adds the first HTTPS site (with alpnChallenges)', async () => {
    const alpnChallenges: AlpnChallengeResponder = { contextFor: () => null };
    const dp = await start([['http', 'plain.test', 'plain']], { certificates: new FakeManager(), alpnChallenges });
    expect(dp.httpsAddress).toBeNull();
    dp.setRoutes({ routes: sites([['http', 'plain.test', 'plain']]).routes, version: 2, changes: null });
    expect(dp.httpsAddress).toBeNull();
    dp.setRoutes({ routes: sites([[null, 'a.test', 'site']]).routes, version: 3, changes: null });
    await until(() => dp.httpsAddress !== null);
  });

  it('redirects HTTP to HTTPS once the store has the certificate, serves HTTPS with HSTS, and serves a renewal', async () => {
    const manager = new FakeManager();
    // A responder that knows no token: an unanswered challenge path.
    const challenges: ChallengeResponder = { respond: () => null };
    const dp = await start(
      [
        [null, 'a.test', 'site'],
        ['http', 'plain.test', 'plain'],
      ],
      { certificates: manager, challenges },
    );
    const httpPort = dp.httpAddress.port;
    expect(dp.httpsAddress).toBeNull();
    expect(await get(httpPort, 'a.test', '/p?q=1')).toMatchObject({ status: 200, body: 'site' });

    const first = selfSigned(['a.test']);
    manager.contexts.set('a.test', contextOf(first));
    dp.certificatesChanged();
    await until(() => dp.httpsAddress !== null);
    const httpsPort = dp.httpsAddress?.port ?? 0;

    const redirect = await get(httpPort, 'a.test', '/p?q=1');
    expect(redirect.status).toBe(308);
    expect(redirect.headers.location).toBe(`https://a.test:${httpsPort}/p?q=1`);
    expect(redirect.headers['strict-transport-security']).toBeUndefined();
    // The HTTP-01 path is never redirected, answered or not; nor is an http:// site.
    expect(await get(httpPort, 'a.test', '/.well-known/acme-challenge/unknown')).toMatchObject({
      status: 200,
      body: 'site',
    });
    expect(await get(httpPort, 'plain.test')).toMatchObject({ status: 200, body: 'plain' });

    const kept = await handshake(httpsPort, { servername: 'a.test', alpn: ['http/1.1'] });
    expect(kept.fingerprint).toBe(fingerprintOf(first.cert));
    const answer = await getOver(kept.socket, 'a.test');
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(answer).toMatch(/\r\nstrict-transport-security: max-age=31536000\r\n/i);
    // The same listener over HTTP/2.
    const h2 = await h2Request(httpsPort, { servername: 'a.test' });
    expect(h2).toMatchObject({ status: 200, body: 'site', alpn: 'h2' });
    expect(h2.headers['strict-transport-security']).toBe('max-age=31536000');

    // Renewed: new handshakes get the new certificate, the open keep-alive connection goes on.
    const renewed = selfSigned(['a.test']);
    manager.contexts.set('a.test', contextOf(renewed));
    dp.certificatesChanged();
    const fresh = await handshake(httpsPort, { servername: 'a.test', alpn: ['http/1.1'] });
    expect(fresh.fingerprint).toBe(fingerprintOf(renewed.cert));
    expect(await getOver(fresh.socket, 'a.test')).toMatch(/^HTTP\/1\.1 200 /);
    expect(await h2Request(httpsPort, { servername: 'a.test' })).toMatchObject({ status: 200, body: 'site' });
    expect(await getOver(kept.socket, 'a.test', '/again')).toMatch(/^HTTP\/1\.1 200 /);
    expect(kept.socket.getPeerCertificate().fingerprint256).toBe(fingerprintOf(first.cert));

    // Dropped: HTTP is served again, not redirected to a failing handshake.
    manager.contexts.delete('a.test');
    dp.certificatesChanged();
    expect(await get(httpPort, 'a.test')).toMatchObject({ status: 200, body: 'site' });
    expect(await alertOf(handshake(httpsPort, { servername: 'a.test' }))).toBe(HANDSHAKE_FAILURE);
    expect(await alertOf(handshake(httpsPort, { servername: 'a.test', alpn: ['h2'] }))).toBe(HANDSHAKE_FAILURE);
  });

  it('serves HTTP without redirecting when redirects is false (auto_https disable_redirects)', async () => {
    const manager = new FakeManager();
    const files = selfSigned(['a.test']);
    manager.contexts.set('a.test', contextOf(files));
    const dp = await start([[null, 'a.test', 'site']], { certificates: manager, redirects: false });
    const httpsPort = dp.httpsAddress?.port ?? 0;
    expect(httpsPort).not.toBe(0);
    const reply = await get(dp.httpAddress.port, 'a.test', '/p');
    expect(reply).toMatchObject({ status: 200, body: 'site' });
    expect(reply.headers['strict-transport-security']).toBeUndefined();
    const shake = await handshake(httpsPort, { servername: 'a.test' });
    expect(await getOver(shake.socket, 'a.test')).toMatch(/\r\nstrict-transport-security: max-age=31536000\r\n/i);
  });

  it.each(['TLSv1.3', 'TLSv1.2'] as const)(
    'resumes %s sessions with certificates from the store (SNI contexts)',
    async (version: SecureVersion) => {
      const manager = new FakeManager();
      const files = selfSigned(['a.test']);
      manager.contexts.set('a.test', contextOf(files));
      const dp = await start([[null, 'a.test', 'site']], { certificates: manager });
      const port = dp.httpsAddress?.port ?? 0;
      const first = await handshake(port, { servername: 'a.test', version });
      // TLS 1.3 sends its ticket after the handshake: an answer read first.
      await getOver(first.socket, 'a.test');
      expect(first.reused).toBe(false);
      const second = await handshake(port, { servername: 'a.test', version, session: await first.session });
      expect([second.version, second.reused]).toEqual([version, true]);
      expect(await getOver(second.socket, 'a.test')).toMatch(/^HTTP\/1\.1 200 /);
    },
  );

  it('setTicketKeys: a session from one data plane resumes on another given the same keys, not after a rotation', async () => {
    const manager = new FakeManager();
    manager.contexts.set('a.test', contextOf(selfSigned(['a.test'])));
    const { config, routes } = sites([[null, 'a.test', 'site']]);
    const other = await DataPlane.start(config, routes, {}, { bindHost: '127.0.0.1', certificates: manager });
    try {
      const dp = await start([[null, 'a.test', 'site']], { certificates: manager });
      const keys = Buffer.alloc(48, 7);
      // Given after the listeners opened, as a fleet's shared keys arrive.
      dp.setTicketKeys(keys);
      other.setTicketKeys(Buffer.from(keys));
      const first = await handshake(dp.httpsAddress?.port ?? 0, { servername: 'a.test' });
      await getOver(first.socket, 'a.test');
      const session = await first.session;
      const otherPort = other.httpsAddress?.port ?? 0;
      const resumed = await handshake(otherPort, { servername: 'a.test', session });
      resumed.socket.destroy();
      first.socket.destroy();
      expect(resumed.reused).toBe(true);
      // One key set per listener: after a rotation the old ticket gets a full handshake, which still succeeds.
      other.setTicketKeys(Buffer.alloc(48, 9));
      const full = await handshake(otherPort, { servername: 'a.test', session });
      const answer = await getOver(full.socket, 'a.test');
      full.socket.destroy();
      expect(full.reused).toBe(false);
      expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    } finally {
      await other.close();
    }
  });
});
