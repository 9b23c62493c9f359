import { createPrivateKey, randomBytes } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import tls from 'node:tls';
import { freePort, type StartedPebble as Pebble, startPebble } from '@proxyd/test-peers';
import { crypto as acmeCrypto } from 'acme-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CertificatesError } from '../errors.js';
import { AcmeIssuer, type AcmeIssuerOptions, type IssuedCertificate } from './acme-issuer.js';
import type { ChallengeSolver, PresentedChallenge } from './challenge-solver.js';
import { MemoryStorage } from './memory-storage.test-helpers.js';
import { acmeProblemOf } from './problem.js';

/** Serves HTTP-01 and TLS-ALPN-01 answers on loopback, as the daemon's listeners will. */
class TestSolver implements ChallengeSolver {
  readonly tokens = new Map<string, string>();
  readonly alpn = new Map<string, tls.SecureContext>();
  readonly cleaned: PresentedChallenge[] = [];
  /** When set, HTTP-01 answers this instead of the key authorization. */
  wrongAnswer: string | undefined;

  present(challenge: PresentedChallenge): void {
    if (challenge.type === 'http-01') this.tokens.set(challenge.token, challenge.keyAuthorization);
    else if (challenge.type === 'tls-alpn-01')
      this.alpn.set(
        challenge.identifier,
        tls.createSecureContext({ cert: challenge.certificatePem, key: challenge.privateKeyPem }),
      );
  }

  cleanUp(challenge: PresentedChallenge): void {
    this.cleaned.push(challenge);
    if (challenge.type === 'http-01') this.tokens.delete(challenge.token);
    else this.alpn.delete(challenge.identifier);
  }
}

const solver = new TestSolver();
const httpResponder = http.createServer((req, res) => {
  const token = /^\/\.well-known\/acme-challenge\/([\w-]+)$/.exec(req.url ?? '')?.[1];
  const answer = token === undefined ? undefined : solver.tokens.get(token);
  if (answer === undefined) return res.writeHead(404).end();
  res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(solver.wrongAnswer ?? answer);
});
const tlsResponder = tls.createServer(
  {
    ALPNProtocols: ['acme-tls/1'],
    SNICallback: (name, cb) => {
      const context = solver.alpn.get(name);
      if (context === undefined) cb(new Error(`no challenge for ${name}`));
      else cb(null, context);
    },
  },
  (socket) => socket.end(),
);
tlsResponder.on('tlsClientError', () => {});

let pebble: Pebble;
const issuers: AcmeIssuer[] = [];
function issuer(options: Partial<AcmeIssuerOptions> & { storage: MemoryStorage }): AcmeIssuer {
  const created = new AcmeIssuer({
    directoryUrl: pebble.directoryUrl,
    caRootPem: pebble.apiCaPem,
    solver,
    pollIntervalMs: 50,
    ...options,
  });
  issuers.push(created);
  return created;
}

/** Serves `issued` over HTTPS and connects trusting only `rootPem`: resolves when the handshake verifies for `name`. */
async function verifyServed(issued: IssuedCertificate, name: string, rootPem: string): Promise<void> {
  const server = https.createServer({ cert: issued.certificatePem, key: issued.privateKeyPem }, (_req, res) =>
    res.end(),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((resolve, reject) => {
      const socket = tls.connect({ host: '127.0.0.1', port, servername: name, ca: rootPem }, () => {
        socket.end();
        resolve();
      });
      socket.on('error', reject);
    });
  } finally {
    server.close();
  }
}

async function failure(promise: Promise<unknown>): Promise<CertificatesError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(CertificatesError);
  return err as CertificatesError;
}

beforeAll(async () => {
  await new Promise<void>((resolve) => httpResponder.listen(0, '127.0.0.1', resolve));
  await new Promise<void>((resolve) => tlsResponder.listen(0, '127.0.0.1', resolve));
  pebble = await startPebble({
    httpPort: (httpResponder.address() as AddressInfo).port,
    tlsPort: (tlsResponder.address() as AddressInfo).port,
  });
});

afterAll(async () => {
  for (const created of issuers) created.close();
  await pebble?.stop();
  httpResponder.close();
  tlsResponder.close();
});

describe('AcmeIssuer against pebble on loopback', () => {
  it('obtains a certificate with HTTP-01 that verifies against the CA root', async () => {
    const storage = new MemoryStorage();
    const issued = await issuer({ storage, email: 'ops@example.com' }).obtain(['app.test', 'www.app.test'], {
      challenge: 'http-01',
    });

    await verifyServed(issued, 'www.app.test', pebble.rootPem);
    expect(createPrivateKey(issued.privateKeyPem).asymmetricKeyDetails?.namedCurve).toBe('prime256v1');
    expect(issued.names).toEqual(['app.test', 'www.app.test']);
    expect(issued.notAfter).toBeGreaterThan(Date.now());
    expect(issued.notBefore).toBeLessThanOrEqual(Date.now());
    const folder = `acme/127.0.0.1-${new URL(pebble.directoryUrl).port}-dir/ops@example.com`;
    expect([...storage.values.keys()].sort()).toEqual([`${folder}/account.json`, `${folder}/account.key`]);
    expect(storage.secrets).toEqual(new Set([`${folder}/account.key`]));
    expect(solver.tokens.size).toBe(0);
  });

  it('obtains a certificate with TLS-ALPN-01 that verifies against the CA root', async () => {
    const issued = await issuer({ storage: new MemoryStorage() }).obtain(['alpn.test'], { challenge: 'tls-alpn-01' });

    await verifyServed(issued, 'alpn.test', pebble.rootPem);
    expect(solver.cleaned.some((c) => c.type === 'tls-alpn-01' && c.identifier === 'alpn.test')).toBe(true);
    expect(solver.alpn.size).toBe(0);
  });

  it('reuses the stored account on the next run and honours keyType rsa', async () => {
    const storage = new MemoryStorage();
    const first = issuer({ storage, email: 'reuse@example.com' });
    await first.obtain(['reuse.test']);
    const stored = new Map(storage.values);

    const second = issuer({ storage, email: 'reuse@example.com' });
    const issued = await second.obtain(['reuse2.test'], { keyType: 'rsa' });

    expect(await second.accountUrl()).toBe(await first.accountUrl());
    expect(storage.values).toEqual(stored);
    expect(createPrivateKey(issued.privateKeyPem).asymmetricKeyType).toBe('rsa');
    await verifyServed(issued, 'reuse2.test', pebble.rootPem);
  });

  it('registers the stored key again when the CA no longer knows the account', async () => {
    const storage = new MemoryStorage();
    const forgotten = issuer({ storage, email: 'lost@example.com' });
    const folder = forgotten.accountFolder;
    const key = await acmeCrypto.createPrivateEcdsaKey('P-256');
    await storage.store(`${folder}/account.key`, key, { secret: true });
    const lostUrl = `${new URL(pebble.directoryUrl).origin}/my-account/999999`;
    await storage.store(`${folder}/account.json`, JSON.stringify({ url: lostUrl, directoryUrl: pebble.directoryUrl }));

    const issued = await forgotten.obtain(['lost.test']);

    await verifyServed(issued, 'lost.test', pebble.rootPem);
    const stored = JSON.parse((await storage.load(`${folder}/account.json`))?.toString() ?? '{}') as { url: string };
    expect(stored.url).not.toBe(lostUrl);
    expect(await forgotten.accountUrl()).toBe(stored.url);
    expect((await storage.load(`${folder}/account.key`))?.equals(key)).toBe(true);
  });

  it("reports the CA's problem document when validation fails", async () => {
    solver.wrongAnswer = 'not-the-key-authorization';
    try {
      const err = await failure(issuer({ storage: new MemoryStorage() }).obtain(['refused.test']));

      expect(err.code).toBe('CERT_ACME_VALIDATION_FAILED');
      expect(err.message).toContain('refused.test');
      expect(err.message).toContain('urn:ietf:params:acme:error:unauthorized');
      expect(acmeProblemOf(err)?.status).toBe(403);
      expect(solver.tokens.size).toBe(0);
    } finally {
      solver.wrongAnswer = undefined;
    }
  });

  it('names the refused connection when the CA is down', async () => {
    const port = await freePort();
    const err = await failure(
      issuer({ storage: new MemoryStorage(), directoryUrl: `https://127.0.0.1:${port}/dir` }).obtain(['down.test']),
    );

    expect(err.code).toBe('CERT_ACME_UNREACHABLE');
    expect(err.message).toContain(`connect ECONNREFUSED 127.0.0.1:${port}`);
    expect(err.message).not.toContain("reading 'config'");
  });

  it("names the TLS failure when the CA's API certificate is not trusted", async () => {
    const storage = new MemoryStorage();
    const untrusting = new AcmeIssuer({ directoryUrl: pebble.directoryUrl, storage, solver });
    issuers.push(untrusting);
    const err = await failure(untrusting.obtain(['untrusted.test']));

    expect(err.code).toBe('CERT_ACME_UNREACHABLE');
    expect(err.message).toMatch(/self-signed certificate|unable to (verify|get)/);
    expect(err.message).toMatch(/SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_(VERIFY_LEAF_SIGNATURE|GET_ISSUER_CERT_LOCALLY)/);
    expect(storage.values.size).toBe(1); // the new account key only: no account was registered
  });
});

describe('AcmeIssuer with external account binding', () => {
  let eabPebble: Pebble;
  const hmacKey = randomBytes(32).toString('base64url');

  beforeAll(async () => {
    eabPebble = await startPebble({
      httpPort: (httpResponder.address() as AddressInfo).port,
      tlsPort: (tlsResponder.address() as AddressInfo).port,
      externalAccountMACKeys: { 'kid-1': hmacKey },
    });
  });
  afterAll(async () => {
    await eabPebble?.stop();
  });

  it('registers with the binding, and a CA that requires one says so without it', async () => {
    const base = { directoryUrl: eabPebble.directoryUrl, caRootPem: eabPebble.apiCaPem };
    const bound = issuer({
      ...base,
      storage: new MemoryStorage(),
      externalAccountBinding: { keyId: 'kid-1', hmacKey },
    });
    expect(await bound.accountUrl()).toMatch(/^https:\/\/127\.0\.0\.1:\d+\//);

    const err = await failure(issuer({ ...base, storage: new MemoryStorage() }).accountUrl());
    expect(err.code).toBe('CERT_ACME_PROBLEM');
    expect(err.message).toContain('urn:ietf:params:acme:error:externalAccountRequired');
  });
});
