import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { type StartedRedis, startRedis } from '@proxyd/test-peers';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Http01Challenge, PresentedChallenge } from '../acme/challenge-solver.js';
import { ChallengeTable } from '../manager/challenge-table.js';
import { silentLogger } from '../manager/entry.js';
import { FleetChallenges } from '../manager/fleet-challenges.js';
import { RedisFleet } from './redis-fleet.js';
import { RedisStorage } from './redis-storage.js';
import { SharedTicketKeys, TICKET_KEYS_KEY } from './ticket-keys.js';

let redis: StartedRedis;
const cleanups: (() => unknown)[] = [];
beforeAll(async () => {
  redis = await startRedis();
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(async () => {
  await redis?.stop();
});

/** Resolves once `check` holds (polled every 10 ms), or rejects after `ms`. */
async function until(check: () => boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** One node: its own Redis connection, storage, fleet, and challenge table relayed through the fleet. */
function node(prefix: string, port = redis.port, encryptionKey?: Buffer) {
  const storage = new RedisStorage(new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 2 }), {
    keyPrefix: prefix,
    ...(encryptionKey === undefined ? {} : { encryptionKey }),
  });
  const fleet = new RedisFleet(storage, { ackTimeoutMs: 3_000 });
  const local: PresentedChallenge[] = [];
  const relay = new FleetChallenges(
    {
      present: (challenge) => {
        local.push(challenge);
      },
      cleanUp: (challenge) => {
        local.splice(local.indexOf(challenge), 1);
      },
    },
    fleet,
  );
  const table = new ChallengeTable(relay);
  const certificates: (string | null)[] = [];
  let ticketKeyMessages = 0;
  fleet.start({
    present: (challenge) => relay.answer(table, challenge, true),
    cleanUp: (challenge) => relay.answer(table, challenge, false),
    certificate: (name) => certificates.push(name),
    ticketKeys: () => {
      ticketKeyMessages++;
    },
  });
  cleanups.push(async () => {
    fleet.close();
    await storage.close();
  });
  return { storage, fleet, table, local, certificates, ticketKeyMessages: () => ticketKeyMessages };
}

const prefix = () => `f${randomBytes(6).toString('hex')}`;

const challenge = (token: string): Http01Challenge => ({
  type: 'http-01',
  identifier: 'shared.test',
  token,
  keyAuthorization: `${token}.thumbprint`,
});

/** A self-signed P-256 certificate for `name` and its key, PEM (openssl). */
function selfSigned(name: string): { key: string; cert: string } {
  const both = execFileSync('openssl', [
    ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'],
    ...['-keyout', '-', '-subj', `/CN=${name}`, '-days', '1'],
  ]).toString();
  return {
    key: /-----BEGIN PRIVATE KEY-----[\s\S]*?-----END PRIVATE KEY-----\n/.exec(both)?.[0] ?? '',
    cert: /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----\n/.exec(both)?.[0] ?? '',
  };
}

/** Resolves once `fleet`'s subscriber has subscribed (PUBSUB NUMSUB counts it). */
async function subscribed(channel: string, count: number, server = redis): Promise<void> {
  await until(() => Number(server.cli('PUBSUB', 'NUMSUB', channel).split('\n')[1]) >= count);
}

describe('RedisFleet: challenges', () => {
  it('a challenge presented on one node is answered by every other node before present resolves, and cleaned up everywhere', async () => {
    const p = prefix();
    const [a, b, c] = [node(p), node(p), node(p)];
    await subscribed(a.fleet.channel, 3);
    await a.table.present(challenge('tok1'));
    // No waiting here: present resolved only once b and c answered (and their own data planes had it).
    expect(b.table.respond('tok1', 'shared.test')).toBe('tok1.thumbprint');
    expect(c.table.respond('tok1', 'shared.test')).toBe('tok1.thumbprint');
    expect(c.table.respond('tok1', 'other.test')).toBeNull();
    expect(b.local.map((x) => x.token)).toEqual(['tok1']);
    expect(redis.cli('EXISTS', `${p}:challenge:http-01:shared.test:tok1`)).toBe('1');
    const ttl = Number(redis.cli('PTTL', `${p}:challenge:http-01:shared.test:tok1`));
    expect(ttl).toBeGreaterThan(0);

    await a.table.cleanUp(challenge('tok1'));
    await until(() => b.table.size === 0 && c.table.size === 0);
    expect(b.local).toEqual([]);
    expect(redis.cli('EXISTS', `${p}:challenge:http-01:shared.test:tok1`)).toBe('0');
    // A node that answered for another never wrote the challenge back (one key, cleaned up by its owner).
    expect(redis.cli('ZCARD', `${p}:challenges`)).toBe('0');
  });

  it('a node that subscribes during an order answers the challenges already stored', async () => {
    const p = prefix();
    const a = node(p);
    await subscribed(a.fleet.channel, 1);
    await a.table.present(challenge('early'));
    const late = node(p);
    await until(() => late.table.respond('early', 'shared.test') !== null);
    await a.table.cleanUp(challenge('early'));
    await until(() => late.table.size === 0);
  });

  it('TLS-ALPN-01: the challenge certificate reaches the other nodes', async () => {
    const p = prefix();
    const [a, b] = [node(p), node(p)];
    await subscribed(a.fleet.channel, 2);
    const { key, cert } = selfSigned('alpn.test');
    await a.table.present({
      type: 'tls-alpn-01',
      identifier: 'alpn.test',
      token: 't',
      keyAuthorization: 'k',
      certificatePem: cert,
      privateKeyPem: key,
    });
    expect(b.table.alpnContextFor('alpn.test')).not.toBeNull();
  });

  it('with an encryption key, the challenge is sealed in Redis and on the channel, and still answered', async () => {
    const p = prefix();
    const key = randomBytes(32);
    const [a, b] = [node(p, redis.port, key), node(p, redis.port, key)];
    await subscribed(a.fleet.channel, 2);
    // What crosses the channel, as another client of this Redis sees it.
    const spy = new Redis({ host: '127.0.0.1', port: redis.port });
    const seen: string[] = [];
    spy.on('message', (_channel: string, text: string) => seen.push(text));
    await spy.subscribe(a.fleet.channel);
    cleanups.push(() => spy.disconnect());
    const secret = 'alpn-key-authorization-secret';
    const { key: privateKeyPem, cert: certificatePem } = selfSigned('sealed.test');
    await a.table.present({
      type: 'tls-alpn-01',
      identifier: 'sealed.test',
      token: 'sealedtok',
      keyAuthorization: secret,
      certificatePem,
      privateKeyPem,
    });
    expect(b.table.alpnContextFor('sealed.test')).not.toBeNull();
    expect(b.local.map((x) => x.keyAuthorization)).toEqual([secret]);
    const stored = redis.cli('GET', `${p}:challenge:tls-alpn-01:sealed.test:sealedtok`);
    await until(() => seen.length > 0);
    for (const text of [stored, ...seen]) {
      expect(text).not.toContain(secret);
      expect(text).not.toContain('PRIVATE KEY');
    }
    await a.table.cleanUp({
      type: 'tls-alpn-01',
      identifier: 'sealed.test',
      token: 'sealedtok',
      keyAuthorization: secret,
      certificatePem,
      privateKeyPem,
    });
    await until(() => b.local.length === 0);
  });
});

describe('RedisFleet: certificates', () => {
  it('a stored certificate is announced to the other nodes, not to itself', async () => {
    const p = prefix();
    const [a, b] = [node(p), node(p)];
    await subscribed(a.fleet.channel, 2);
    await a.fleet.certificateStored('shared.test');
    await until(() => b.certificates.length === 1);
    expect(b.certificates).toEqual(['shared.test']);
    expect(a.certificates).toEqual([]);
  });

  it('after Redis comes back, a node that missed an announcement reloads every name', async () => {
    const own = await startRedis();
    cleanups.push(() => own.stop());
    const p = prefix();
    const a = node(p, own.port);
    await subscribed(a.fleet.channel, 1, own);
    // Its first read after subscribing is done (it ends with the ticket keys).
    await until(() => a.ticketKeyMessages() >= 1);
    const before = a.certificates.length;
    // Another node stored a certificate whose announcement `a` never got (the version moved, no message),
    // then `a`'s subscriber loses its connection and makes a new one.
    own.cli('INCR', `${p}:certificates-version`);
    const keyReads = a.ticketKeyMessages();
    own.cli('CLIENT', 'KILL', 'TYPE', 'pubsub');
    await until(() => a.certificates.length > before);
    expect(a.certificates.at(-1)).toBeNull();
    // The ticket keys are read again too (a rotation announced meanwhile was missed as well).
    expect(a.ticketKeyMessages()).toBeGreaterThan(keyReads);
  });
});

describe('SharedTicketKeys', () => {
  it('one node makes the keys, every node applies the same 48 bytes; a rotation reaches every node', async () => {
    const p = prefix();
    let now = 1_000_000;
    const nodes = [node(p), node(p), node(p)];
    await subscribed(nodes[0]?.fleet.channel ?? '', 3);
    const applied: Buffer[][] = nodes.map(() => []);
    const keys = nodes.map(
      (n, i) =>
        new SharedTicketKeys({
          storage: n.storage,
          fleet: n.fleet,
          apply: async (k) => {
            applied[i]?.push(k);
          },
          rotationMs: 60_000,
          now: () => now,
          log: silentLogger,
        }),
    );
    await Promise.all(keys.map((k) => k.refresh()));
    const first = applied.map((list) => list.at(-1)?.toString('hex'));
    expect(first[0]).toMatch(/^[0-9a-f]{96}$/);
    expect(new Set(first).size).toBe(1);
    const stored = redis.cli('GET', `${p}:value:${TICKET_KEYS_KEY}`);
    expect(JSON.parse(stored).keys).toBe(Buffer.from(first[0] ?? '', 'hex').toString('base64'));

    // Not due: nothing changes.
    now += 30_000;
    await Promise.all(keys.map((k) => k.refresh()));
    expect(applied.map((list) => list.length)).toEqual([1, 1, 1]);

    // Due: the first node to look makes new keys and tells the others.
    now += 31_000;
    const messages = nodes.map((n) => n.ticketKeyMessages());
    await keys[1]?.refresh();
    await until(() => [0, 2].every((i) => (nodes[i]?.ticketKeyMessages() ?? 0) > (messages[i] ?? 0)));
    await Promise.all([keys[0]?.refresh(), keys[2]?.refresh()]);
    const second = applied.map((list) => list.at(-1)?.toString('hex'));
    expect(new Set(second).size).toBe(1);
    expect(second[0]).not.toBe(first[0]);
    expect(applied.map((list) => list.length)).toEqual([2, 2, 2]);
  });
});
