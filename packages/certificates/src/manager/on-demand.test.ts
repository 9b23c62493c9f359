import { X509Certificate } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { SecureContext } from 'node:tls';
import { freePort } from '@proxyd/test-peers';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CertificatesErrorCode } from '../errors.js';
import { LocalCa } from '../local-ca/local-ca.js';
import { MemoryStorage } from '../local-ca/memory-storage.test-helpers.js';
import { CertificateManager, type CertificateManagerOptions } from './certificate-manager.js';
import { FakeAcmeIssuer, FakeTime, MemoryLogger, MINUTE } from './manager.test-helpers.js';
import { askEndpoint, isOnDemandCandidate, type OnDemandIssuer } from './on-demand.js';
import { certificateKeys } from './stored-certificate.js';

/** A real ask endpoint on loopback: allows one name, denies another, redirects one, never answers one. */
const asked: string[] = [];
const askServer = http.createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://127.0.0.1');
  if (url.pathname === '/ok') {
    asked.push(`ok:${url.searchParams.get('domain')}`);
    return res.writeHead(200).end();
  }
  const domain = url.searchParams.get('domain') ?? '';
  asked.push(domain);
  if (domain.startsWith('allowed') || domain.startsWith('internal')) return res.writeHead(200).end('yes');
  if (domain.startsWith('redirect')) return res.writeHead(302, { location: `/ok?domain=${domain}` }).end();
  if (domain.startsWith('slow')) return; // never answers: the client times out
  res.writeHead(403).end('no');
});
let ask: string;

beforeAll(async () => {
  await new Promise<void>((resolve) => askServer.listen(0, '127.0.0.1', resolve));
  ask = `http://127.0.0.1:${(askServer.address() as AddressInfo).port}/ask`;
});
afterAll(() => {
  askServer.closeAllConnections();
  askServer.close();
});

const managers: CertificateManager[] = [];
afterEach(async () => {
  for (const manager of managers.splice(0)) {
    manager.close();
    await manager.whenIdle();
  }
  asked.length = 0;
});

/** Routes with `tls { on_demand }` for `*.example.com` (ACME) and `*.example.net` (`tls internal`). */
const routes = (name: string): OnDemandIssuer | null =>
  name.endsWith('.example.com') ? 'acme' : name.endsWith('.example.net') ? 'internal' : null;

async function setup(options: Partial<CertificateManagerOptions> = {}) {
  const time = new FakeTime();
  const log = new MemoryLogger();
  const storage = new MemoryStorage();
  // A fake CA: on-demand's gate is the point here; real orders are the pebble tests'.
  const ca = new FakeAcmeIssuer('ca1', time);
  const manager = new CertificateManager({
    storage,
    acmeIssuers: [ca],
    localCa: await LocalCa.open(storage, { now: time.clock }),
    now: time.clock,
    scheduler: time,
    logger: log,
    onDemand: { ask, allowed: routes, fetchTimeoutMs: 300 },
    ...options,
  });
  managers.push(manager);
  return { time, log, storage, ca, manager };
}

describe('askEndpoint', () => {
  it('allows on 2xx; refuses a redirect without following it, other statuses, timeouts and errors', async () => {
    expect(await askEndpoint(ask, 'allowed.example.com', 1000)).toEqual({ allowed: true });
    expect(await askEndpoint(ask, 'denied.example.com', 1000)).toEqual({
      allowed: false,
      reason: `ask endpoint ${ask} answered status 403`,
    });
    expect(await askEndpoint(ask, 'redirect.example.com', 1000)).toEqual({
      allowed: false,
      reason: `ask endpoint ${ask} answered a redirect (not followed) 302`,
    });
    expect(asked.filter((a) => a.startsWith('ok:'))).toEqual([]);
    expect(await askEndpoint(ask, 'slow.example.com', 100)).toEqual({
      allowed: false,
      reason: `ask endpoint ${ask} failed: timed out after 100 ms`,
    });
    const closed = await askEndpoint(`http://127.0.0.1:${await freePort()}/ask`, 'a.example.com', 1000);
    expect(closed.allowed).toBe(false);
    expect((closed as { reason: string }).reason).toContain('ECONNREFUSED');
  });

  it('sends the name as ?domain=, keeping the query the URL has', async () => {
    await askEndpoint(`${ask}?token=x`, 'allowed.example.com', 1000);
    expect(asked).toEqual(['allowed.example.com']);
  });

  it('only names a CA could certify are candidates', () => {
    expect(isOnDemandCandidate('a.example.com')).toBe(true);
    for (const name of [
      '',
      'localhost',
      '127.0.0.1',
      '::1',
      '-a.example.com',
      'a..b',
      'a_b.example.com',
      `${'a'.repeat(64)}.com`,
    ]) {
      expect(isOnDemandCandidate(name), name).toBe(false);
    }
  });
});

describe('CertificateManager on demand', () => {
  it('obtains an allowed name at its first handshake and keeps it across setNames', async () => {
    const { manager, ca, storage } = await setup();
    const pending = manager.contextFor('allowed.example.com');
    expect(pending).toBeInstanceOf(Promise);
    const context = await pending;
    expect(context).not.toBeNull();
    expect(asked).toEqual(['allowed.example.com']);
    expect(ca.orders.map((o) => o.names)).toEqual([['allowed.example.com']]);
    expect(manager.contextFor('allowed.example.com')).toBe(context);
    expect(await storage.load(certificateKeys('ca1', 'allowed.example.com').cert)).not.toBeNull();

    await manager.setNames([{ name: 'listed.example.org', issuer: 'acme' }]);
    await manager.setNames([]);
    expect(manager.contextFor('allowed.example.com')).toBe(context);
    expect(manager.status().map((s) => s.name)).toEqual(['allowed.example.com']);
  });

  it('concurrent handshakes for one name share one ask and one order', async () => {
    const { manager, ca } = await setup();
    const results = await Promise.all(Array.from({ length: 8 }, () => manager.contextFor('allowed-2.example.com')));
    expect(new Set(results).size).toBe(1);
    expect(results[0]).not.toBeNull();
    expect(asked).toEqual(['allowed-2.example.com']);
    expect(ca.orders).toHaveLength(1);
  });

  it('a refused name gets no certificate; the refusal is remembered a minute and logged once', async () => {
    const { manager, ca, log, time } = await setup();
    expect(await manager.contextFor('denied.example.com')).toBeNull();
    expect(await manager.contextFor('denied.example.com')).toBeNull();
    expect(asked).toEqual(['denied.example.com']);
    time.now += MINUTE;
    expect(await manager.contextFor('denied.example.com')).toBeNull();
    expect(asked).toEqual(['denied.example.com', 'denied.example.com']);
    expect(ca.orders).toHaveLength(0);
    const refused = log.lines.filter((l) => l.obj.code === CertificatesErrorCode.ON_DEMAND_REFUSED);
    expect(refused).toHaveLength(1);
    expect(refused[0]?.msg).toBe(
      `on-demand certificate for denied.example.com refused: ask endpoint ${ask} answered status 403`,
    );
    expect(manager.status()).toEqual([]);
  });

  it('a redirect refuses (not followed), and so does an endpoint that times out', async () => {
    const { manager, ca, log } = await setup();
    expect(await manager.contextFor('redirect.example.com')).toBeNull();
    expect(await manager.contextFor('slow.example.com')).toBeNull();
    expect(asked).toEqual(['redirect.example.com', 'slow.example.com']);
    expect(ca.orders).toHaveLength(0);
    expect(log.matching('timed out after 300 ms')).toHaveLength(1);
  });

  it('asks nothing for names no on-demand route matches, or that no CA could certify', async () => {
    const { manager } = await setup();
    expect(manager.contextFor('allowed.example.org')).toBeNull();
    expect(manager.contextFor('localhost')).toBeNull();
    expect(manager.contextFor('127.0.0.1')).toBeNull();
    expect(asked).toEqual([]);
  });

  it('uses the local CA for `tls internal { on_demand }` routes', async () => {
    const { manager, ca, storage } = await setup();
    const context: SecureContext | null = await manager.contextFor('internal.example.net');
    expect(context).not.toBeNull();
    expect(ca.orders).toHaveLength(0);
    const pem = (await storage.load(certificateKeys('local', 'internal.example.net').cert))?.toString() as string;
    expect(new X509Certificate(pem).subjectAltName).toBe('DNS:internal.example.net');
  });

  it('a failed order answers null and is retried in the background with backoff, not at every handshake', async () => {
    const { manager, ca } = await setup();
    ca.outcome = () => new Error('CA down');
    expect(await manager.contextFor('allowed-3.example.com')).toBeNull();
    expect(manager.contextFor('allowed-3.example.com')).toBeNull();
    expect(asked).toEqual(['allowed-3.example.com']);
    expect(ca.orders).toHaveLength(1);
    expect(manager.status()[0]).toMatchObject({ name: 'allowed-3.example.com', status: 'failing' });
  });

  it('without onDemand, an unknown name is simply null', async () => {
    const { manager } = await setup({ onDemand: undefined as never });
    expect(manager.contextFor('allowed.example.com')).toBeNull();
  });
});
