import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import tls, { createSecureContext, type SecureContext, type SecureVersion } from 'node:tls';
import { emptySite, type RouteSpec } from '@proxyd/model';
import { describe, expect, it } from 'vitest';
import { onCleanup, proxy, selfSigned } from '../loopback.test-helpers.js';
import type { CertificateStore } from './certificate-store.js';
import { ACME_TLS_1, type AlpnChallengeResponder } from './handshake.js';
import {
  alertOf,
  closedByPeer,
  fingerprintOf,
  getOver,
  h2Request,
  handshake,
  opensslClient,
} from './tls-client.test-helpers.js';

type Files = { cert: string; key: string };

/** TLS alerts (RFC 8446 §6). */
const HANDSHAKE_FAILURE = 40;
const NO_APPLICATION_PROTOCOL = 120;

const contextOf = (files: Files): SecureContext =>
  createSecureContext({ cert: readFileSync(files.cert), key: readFileSync(files.key) });

/** A store holding `name → context` (a stand-in for the certificates manager), optionally answering async. */
function storeOf(entries: Record<string, SecureContext>, async = false): CertificateStore {
  return {
    contextFor(name) {
      const ctx = entries[name] ?? null;
      return async ? new Promise((resolve) => setTimeout(() => resolve(ctx), 20)) : ctx;
    },
    has: (host) => entries[host] !== undefined,
  };
}

/** A responder with one pending TLS-ALPN-01 challenge, counting questions. */
function responderFor(name: string, ctx: SecureContext): AlpnChallengeResponder & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    contextFor(serverName) {
      asked.push(serverName);
      return serverName === name ? ctx : null;
    },
  };
}

/** `a.test { respond "site" }`: an HTTPS site. */
function respondRoute(domain: string): RouteSpec {
  const site = emptySite([{ scheme: null, host: domain, port: null }]);
  site.handler = { kind: 'respond', status: 200, body: 'site' };
  return { domain, origin: 'proxyfile', source: null, site };
}

/**
 * An HTTPS listener for `a.test` with its own certificate and a pending
 * TLS-ALPN-01 challenge for `a.test` (a renewal in progress), plus
 * `pending.test` with a challenge and no certificate yet.
 */
async function challengeListener(options: { async?: boolean } = {}) {
  const site = selfSigned(['a.test']);
  const challenge = selfSigned(['a.test']);
  const pending = selfSigned(['pending.test']);
  const challenges: AlpnChallengeResponder & { asked: string[] } = {
    asked: [],
    contextFor(name) {
      this.asked.push(name);
      if (name === 'a.test') return contextOf(challenge);
      if (name === 'pending.test') return contextOf(pending);
      return null;
    },
  };
  const { server } = await proxy([respondRoute('a.test'), respondRoute('pending.test')], {
    certificates: storeOf({ 'a.test': contextOf(site) }, options.async ?? false),
    alpnChallenges: challenges,
  });
  const { port } = await server.listenHttps(0);
  return { port, site, challenge, pending, challenges };
}

describe('callback order of Node (the reason for the TLS 1.3 rule)', () => {
  // handshakeOptions relies on it: TLS 1.3 selects ALPN before the certificate, TLS 1.2 after.
  it.each([
    ['TLSv1.3', ['ALPN', 'SNI']],
    ['TLSv1.2', ['SNI', 'ALPN']],
  ] as const)('%s calls %s', async (version: SecureVersion, order) => {
    const files = selfSigned(['a.test']);
    const ctx = contextOf(files);
    const calls: string[] = [];
    const server = tls.createServer(
      {
        SNICallback: (_name, done) => {
          calls.push('SNI');
          done(null, ctx);
        },
        ALPNCallback: ({ protocols }) => {
          calls.push('ALPN');
          return protocols[0];
        },
      },
      (socket) => socket.end(),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    onCleanup(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const { port } = server.address() as AddressInfo;
    await handshake(port, { servername: 'a.test', alpn: ['http/1.1'], version });
    expect(calls).toEqual(order);
  });
});

describe('TLS-ALPN-01 on the HTTPS listener (real loopback clients)', () => {
  it('answers acme-tls/1 in TLS 1.3 with the challenge certificate, then closes the connection', async () => {
    const { port, challenge } = await challengeListener();
    const shake = await handshake(port, { servername: 'a.test', alpn: [ACME_TLS_1], version: 'TLSv1.3' });
    expect(shake.alpn).toBe(ACME_TLS_1);
    expect(shake.version).toBe('TLSv1.3');
    expect(shake.fingerprint).toBe(fingerprintOf(challenge.cert));
    await closedByPeer(shake.socket);
  });

  it('serves a name that has a challenge and no certificate yet', async () => {
    const { port, pending } = await challengeListener();
    const shake = await handshake(port, { servername: 'pending.test', alpn: [ACME_TLS_1] });
    expect([shake.alpn, shake.version, shake.fingerprint]).toEqual([
      ACME_TLS_1,
      'TLSv1.3',
      fingerprintOf(pending.cert),
    ]);
    await closedByPeer(shake.socket);
    // An HTTP client for that name meanwhile: no certificate, handshake_failure.
    expect(await alertOf(handshake(port, { servername: 'pending.test', alpn: ['http/1.1'] }))).toBe(HANDSHAKE_FAILURE);
  });

  it('gives an http/1.1 client for the same name the site certificate meanwhile, and HTTP', async () => {
    const { port, site } = await challengeListener();
    const shake = await handshake(port, { servername: 'a.test', alpn: ['http/1.1'] });
    expect([shake.alpn, shake.fingerprint]).toEqual(['http/1.1', fingerprintOf(site.cert)]);
    expect(await getOver(shake.socket, 'a.test')).toMatch(/^HTTP\/1\.1 200 .*\r\nsite\r\n/s);
  });

  it('picks h2 over http/1.1 whatever the client order (server preference), and serves HTTP/2', async () => {
    const { port, site } = await challengeListener();
    for (const alpn of [['http/1.1', 'h2'], ['h2', 'http/1.1'], ['h2']]) {
      const shake = await handshake(port, { servername: 'a.test', alpn });
      expect([shake.alpn, shake.fingerprint]).toEqual(['h2', fingerprintOf(site.cert)]);
    }
    expect(await h2Request(port, { servername: 'a.test' })).toMatchObject({ status: 200, body: 'site', alpn: 'h2' });
  });

  it('gives a client offering no ALPN the site certificate and HTTP', async () => {
    const { port, site, challenges } = await challengeListener();
    const shake = await handshake(port, { servername: 'a.test' });
    expect([shake.alpn, shake.fingerprint]).toEqual([false, fingerprintOf(site.cert)]);
    expect(await getOver(shake.socket, 'a.test')).toMatch(/^HTTP\/1\.1 200 .*\r\nsite\r\n/s);
    expect(challenges.asked).toEqual([]);
  });

  it('fails acme-tls/1 for a name without a pending challenge (no_application_protocol)', async () => {
    const { port } = await challengeListener();
    for (const servername of ['other.test', 'A.test.example']) {
      expect(await alertOf(handshake(port, { servername, alpn: [ACME_TLS_1] }))).toBe(NO_APPLICATION_PROTOCOL);
    }
  });

  it('fails acme-tls/1 in TLS 1.2 rather than present the site certificate (no_application_protocol)', async () => {
    const { port } = await challengeListener();
    expect(await alertOf(handshake(port, { servername: 'a.test', alpn: [ACME_TLS_1], version: 'TLSv1.2' }))).toBe(
      NO_APPLICATION_PROTOCOL,
    );
    // A TLS 1.2 client offering both gets the site and HTTP.
    const both = await handshake(port, { servername: 'a.test', alpn: [ACME_TLS_1, 'http/1.1'], version: 'TLSv1.2' });
    expect(both.alpn).toBe('http/1.1');
  });

  it('fails acme-tls/1 on a resumed session, which would send no certificate', async () => {
    const { port, site } = await challengeListener();
    const first = await handshake(port, { servername: 'a.test', alpn: ['http/1.1'], version: 'TLSv1.3' });
    await getOver(first.socket, 'a.test');
    expect(first.fingerprint).toBe(fingerprintOf(site.cert));
    expect(
      await alertOf(
        handshake(port, { servername: 'a.test', alpn: [ACME_TLS_1], version: 'TLSv1.3', session: await first.session }),
      ),
    ).toBe(NO_APPLICATION_PROTOCOL);
  });

  it('takes an async store answer (on-demand) for the site certificate', async () => {
    const { port, site, challenge } = await challengeListener({ async: true });
    const shake = await handshake(port, { servername: 'a.test', alpn: ['http/1.1'] });
    expect(shake.fingerprint).toBe(fingerprintOf(site.cert));
    expect(await getOver(shake.socket, 'a.test')).toMatch(/^HTTP\/1\.1 200 /);
    // The challenge context is synchronous and wins over the store.
    const acme = await handshake(port, { servername: 'a.test', alpn: [ACME_TLS_1] });
    expect(acme.fingerprint).toBe(fingerprintOf(challenge.cert));
  });

  it('matches the server name case-insensitively', async () => {
    const { port, challenge, challenges } = await challengeListener();
    const shake = await handshake(port, { servername: 'A.Test', alpn: [ACME_TLS_1] });
    expect(shake.fingerprint).toBe(fingerprintOf(challenge.cert));
    expect(challenges.asked).toContain('a.test');
  });

  it('answers openssl s_client -alpn acme-tls/1 in TLS 1.3 and refuses it in TLS 1.2', async () => {
    const { port, challenge } = await challengeListener();
    const tls13 = await opensslClient(port, ['-servername', 'a.test', '-alpn', ACME_TLS_1, '-tls1_3']);
    expect(tls13).toContain(`ALPN protocol: ${ACME_TLS_1}`);
    expect(tls13.replace(/\r/g, '')).toContain(readFileSync(challenge.cert, 'utf8').trim());
    const tls12 = await opensslClient(port, ['-servername', 'a.test', '-alpn', ACME_TLS_1, '-tls1_2']);
    expect(tls12).toContain('alert no application protocol');
    expect(tls12).not.toContain('BEGIN CERTIFICATE');
  });
});

describe('handshakes without TLS-ALPN-01', () => {
  it('refuses acme-tls/1 when no responder is set', async () => {
    const files = selfSigned(['a.test']);
    const { server } = await proxy([respondRoute('a.test')], { certificates: storeOf({ 'a.test': contextOf(files) }) });
    const { port } = await server.listenHttps(0);
    expect(await alertOf(handshake(port, { servername: 'a.test', alpn: [ACME_TLS_1] }))).toBe(NO_APPLICATION_PROTOCOL);
    const shake = await handshake(port, { servername: 'a.test', alpn: ['http/1.1'] });
    expect(shake.fingerprint).toBe(fingerprintOf(files.cert));
    const h2 = await handshake(port, { servername: 'a.test', alpn: ['http/1.1', 'h2'] });
    expect(h2.alpn).toBe('h2');
  });

  it.each([
    ['TLSv1.3', false],
    ['TLSv1.2', false],
    ['TLSv1.3', true],
  ] as const)(
    'fails a name without a certificate with handshake_failure (%s, with responder: %s)',
    async (version: SecureVersion, withResponder) => {
      const files = selfSigned(['a.test']);
      const rejecting: CertificateStore = {
        contextFor: (name) => (name === 'broken.test' ? Promise.reject(new Error('store down')) : null),
        has: () => false,
      };
      const { server } = await proxy([respondRoute('a.test')], {
        certificates: rejecting,
        ...(withResponder ? { alpnChallenges: responderFor('a.test', contextOf(files)) } : {}),
      });
      const { port } = await server.listenHttps(0);
      for (const request of [
        { servername: 'nocert.test', alpn: ['http/1.1'] },
        { servername: 'broken.test', alpn: ['http/1.1'] },
        { servername: 'nocert.test' },
        { alpn: ['http/1.1'] },
      ]) {
        expect(await alertOf(handshake(port, { ...request, version }))).toBe(HANDSHAKE_FAILURE);
      }
      const output = await opensslClient(port, ['-servername', 'nocert.test']);
      expect(output).toContain('alert handshake failure');
    },
  );
});

describe('cipher suites', () => {
  it('prefers TLS_AES_128_GCM_SHA256 over a client that lists AES-256 first, and still speaks TLS 1.2', async () => {
    const files = selfSigned(['a.test']);
    const { server } = await proxy([respondRoute('a.test')], { certificates: storeOf({ 'a.test': contextOf(files) }) });
    const { port } = await server.listenHttps(0);
    // Node's client offers TLS_AES_256_GCM_SHA384 first (tls.DEFAULT_CIPHERS).
    const modern = await handshake(port, { servername: 'a.test', alpn: ['http/1.1'] });
    expect(modern.socket.getCipher().standardName).toBe('TLS_AES_128_GCM_SHA256');
    const legacy = await handshake(port, { servername: 'a.test', alpn: ['http/1.1'], version: 'TLSv1.2' });
    expect(legacy.socket.getCipher().standardName).toBe('TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256');
  });

  // Issue 28: TLS 1.2 as Mozilla's "intermediate" profile, ECDHE only: CBC, static-RSA and DHE suites fail.
  it.each([
    {
      key: 'ec',
      refused: ['ECDHE-ECDSA-AES128-SHA', 'ECDHE-ECDSA-AES256-SHA', 'ECDHE-ECDSA-AES128-SHA256'],
      accepted: ['ECDHE-ECDSA-AES128-GCM-SHA256', 'ECDHE-ECDSA-AES256-GCM-SHA384', 'ECDHE-ECDSA-CHACHA20-POLY1305'],
    },
    {
      key: 'rsa',
      refused: [
        'ECDHE-RSA-AES128-SHA',
        'ECDHE-RSA-AES128-SHA256',
        'ECDHE-RSA-AES256-SHA384',
        'AES128-GCM-SHA256',
        'AES256-SHA',
        'DHE-RSA-AES128-GCM-SHA256',
      ],
      accepted: ['ECDHE-RSA-AES128-GCM-SHA256', 'ECDHE-RSA-AES256-GCM-SHA384', 'ECDHE-RSA-CHACHA20-POLY1305'],
    },
  ] as const)('TLS 1.2 with an $key certificate: AEAD suites with ECDHE only', async ({ key, refused, accepted }) => {
    const files = selfSigned(['a.test'], { key });
    const { server } = await proxy([respondRoute('a.test')], { certificates: storeOf({ 'a.test': contextOf(files) }) });
    const { port } = await server.listenHttps(0);
    const over12 = { servername: 'a.test', alpn: ['http/1.1'], version: 'TLSv1.2' as const };
    for (const suite of refused) {
      expect(await alertOf(handshake(port, { ...over12, ciphers: suite })), suite).toBe(HANDSHAKE_FAILURE);
    }
    for (const suite of accepted) {
      const shake = await handshake(port, { ...over12, ciphers: suite });
      expect(shake.socket.getCipher().name, suite).toBe(suite);
      expect(await getOver(shake.socket, 'a.test')).toMatch(/^HTTP\/1\.1 200 /);
    }
    // TLS 1.3 is unchanged: its three suites, whichever a client offers alone.
    for (const suite of ['TLS_AES_128_GCM_SHA256', 'TLS_AES_256_GCM_SHA384', 'TLS_CHACHA20_POLY1305_SHA256']) {
      const shake = await handshake(port, {
        servername: 'a.test',
        alpn: ['http/1.1'],
        version: 'TLSv1.3',
        ciphers: suite,
      });
      expect(shake.socket.getCipher().standardName, suite).toBe(suite);
    }
    // OpenSSL's own client, as an operator would check.
    const cbc = key === 'ec' ? 'ECDHE-ECDSA-AES128-SHA' : 'ECDHE-RSA-AES128-SHA';
    const output = await opensslClient(port, ['-servername', 'a.test', '-tls1_2', '-cipher', cbc]);
    expect(output).toContain('alert handshake failure');
    const gcm = key === 'ec' ? 'ECDHE-ECDSA-AES128-GCM-SHA256' : 'ECDHE-RSA-AES128-GCM-SHA256';
    expect(await opensslClient(port, ['-servername', 'a.test', '-tls1_2', '-cipher', gcm])).toContain(
      `Cipher is ${gcm}`,
    );
  });
});
