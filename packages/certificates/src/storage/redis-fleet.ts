import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { PresentedChallenge } from '../acme/challenge-solver.js';
import { ioError } from './redis-lock.js';
import type { RedisStorage } from './redis-storage.js';
import { open, seal } from './sealed-value.js';

/**
 * What one node tells the others on `<prefix>:events`. A challenge goes as
 * JSON, or, with an encryption key, `sealed` (base64 of the sealed JSON):
 * a TLS-ALPN-01 challenge carries a private key.
 */
type FleetMessage =
  | { kind: 'present'; from: string; id: string; challenge?: PresentedChallenge; sealed?: string }
  | { kind: 'clean-up'; from: string; id: string }
  | { kind: 'certificate'; from: string; name: string; version: number }
  | { kind: 'ticket-keys'; from: string };

/** What a node does with what the others tell it (the daemon's wiring). */
export interface RedisFleetHandlers {
  /** Answer a challenge another node presented (resolves once every data plane of this node answers it). */
  present(challenge: PresentedChallenge): Promise<void>;
  /** Stop answering it. */
  cleanUp(challenge: PresentedChallenge): Promise<void>;
  /** Another node stored a certificate for `name`; null: some may have been missed (Redis was away). */
  certificate(name: string | null): void;
  /** Another node rotated the TLS session-ticket keys. */
  ticketKeys(): void;
}

/** Options of {@link RedisFleet}. */
export interface RedisFleetOptions {
  /** How long a presenting node waits for the others to answer a challenge, ms (default 5,000). */
  ackTimeoutMs?: number;
  /** How long a challenge stays in Redis when its clean-up never comes (its node died), ms (default 10 min). */
  challengeTtlMs?: number;
  /** The clock, ms since the epoch (default `Date.now`). */
  now?: () => number;
}

/** The id of a challenge in Redis and in messages. */
export function challengeId(challenge: PresentedChallenge): string {
  return `${challenge.type}:${challenge.identifier.toLowerCase()}:${challenge.token}`;
}

/**
 * What the nodes of a fleet sharing one {@link RedisStorage} tell each
 * other, on the channel `<prefix>:events` (one subscriber connection per
 * node, a duplicate of the storage's client):
 *
 * - **Challenges.** {@link present} writes the challenge to
 *   `<prefix>:challenge:<id>` (expiring after `challengeTtlMs`, indexed in
 *   the sorted set `<prefix>:challenges` by expiry) and publishes it; every
 *   other node answers it from its own table and then counts itself in
 *   `<prefix>:challenge-acks:<id>`. `present` resolves once as many nodes
 *   as `PUBLISH` reached have counted themselves (or after `ackTimeoutMs`),
 *   so the CA is told to validate only once every node answers, whichever
 *   node its request reaches; a node's workers included, as they are
 *   answered before the node counts itself. {@link cleanUp} deletes and
 *   publishes. With an encryption key (`encryption_key_file`) the
 *   challenge is sealed as storage values are, in the key and in the
 *   message: a TLS-ALPN-01 challenge carries its certificate's private key.
 * - **Certificates.** {@link certificateStored} increments
 *   `<prefix>:certificates-version` and publishes the name; the others
 *   reload it from storage.
 * - **Reconnection.** Each time the subscriber connects again (the first
 *   time included), the node reads every challenge still stored (answering
 *   the ones it misses, dropping the ones cleaned up meanwhile) and compares
 *   the certificates version with the last one it saw: when it moved, every
 *   name is reloaded (`certificate(null)`), and the session-ticket keys
 *   are read again (`ticketKeys()`). Pub/sub delivers nothing sent while a
 *   node was away; these reads make up for it.
 */
export class RedisFleet {
  /** This node's id in messages (random per process): a node ignores what it published itself. */
  readonly nodeId = randomBytes(8).toString('hex');
  readonly #client: Redis;
  readonly #prefix: string;
  readonly #key: Buffer | null;
  readonly #ackTimeoutMs: number;
  readonly #challengeTtlMs: number;
  readonly #now: () => number;
  /** Challenges this node presented and has not cleaned up. */
  readonly #own = new Set<string>();
  /** Challenges other nodes presented that this node answers now. */
  readonly #answering = new Map<string, PresentedChallenge>();
  #subscriber: Redis | null = null;
  #handlers: RedisFleetHandlers | null = null;
  #version: string | null = null;
  #connectedOnce = false;

  constructor(storage: RedisStorage, options: RedisFleetOptions = {}) {
    const { client, keyPrefix, encryptionKey } = storage.connection();
    this.#client = client;
    this.#prefix = keyPrefix;
    this.#key = encryptionKey;
    this.#ackTimeoutMs = options.ackTimeoutMs ?? 5_000;
    this.#challengeTtlMs = options.challengeTtlMs ?? 600_000;
    this.#now = options.now ?? Date.now;
  }

  /** The pub/sub channel. */
  get channel(): string {
    return `${this.#prefix}:events`;
  }

  /**
   * Subscribes (in the background: a Redis that does not answer yet is
   * subscribed to once it does) and calls `handlers` from then on.
   */
  start(handlers: RedisFleetHandlers): void {
    this.#handlers = handlers;
    const subscriber = this.#client.duplicate({ maxRetriesPerRequest: null });
    this.#subscriber = subscriber;
    subscriber.on('error', () => {}); // the storage's client reports the connection state
    subscriber.on('message', (channel: string, text: string) => {
      if (channel === this.channel) void this.#receive(text);
    });
    subscriber.on('ready', () => {
      subscriber.subscribe(this.channel).then(
        () => this.#resync(),
        () => {},
      );
    });
  }

  /** Writes `challenge` to Redis, publishes it, and resolves once every node that got it answers it (or after the timeout). */
  async present(challenge: PresentedChallenge): Promise<void> {
    const id = challengeId(challenge);
    this.#own.add(id);
    const expires = this.#now() + this.#challengeTtlMs;
    let reached: number;
    try {
      const stored = this.#seal(id, challenge);
      await this.#client
        .multi()
        .set(this.#challengeKey(id), stored, 'PX', this.#challengeTtlMs)
        .zadd(this.#indexKey(), expires, id)
        .exec();
      const body = this.#key === null ? { challenge } : { sealed: stored };
      reached = await this.#client.publish(this.channel, this.#message({ kind: 'present', id, ...body }));
    } catch (err) {
      throw ioError(`present challenge ${id}`, err);
    }
    // This node's own subscriber is among those reached and does not count itself.
    const others = reached - (this.#subscriber?.status === 'ready' ? 1 : 0);
    const deadline = this.#now() + this.#ackTimeoutMs;
    while (others > 0 && this.#now() < deadline) {
      const acks = Number((await this.#client.get(this.#ackKey(id)).catch(() => null)) ?? 0);
      if (acks >= others) return;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  /** Deletes `challenge` from Redis and tells the others to stop answering it. */
  async cleanUp(challenge: PresentedChallenge): Promise<void> {
    const id = challengeId(challenge);
    this.#own.delete(id);
    try {
      await this.#client.multi().del(this.#challengeKey(id), this.#ackKey(id)).zrem(this.#indexKey(), id).exec();
      await this.#client.publish(this.channel, this.#message({ kind: 'clean-up', id }));
    } catch (err) {
      throw ioError(`clean up challenge ${id}`, err);
    }
  }

  /** Tells the others that a certificate for `name` was stored. Rejects with `CERT_STORAGE_IO` when Redis fails. */
  async certificateStored(name: string): Promise<void> {
    try {
      const version = await this.#client.incr(this.#versionKey());
      this.#version = String(version);
      await this.#client.publish(this.channel, this.#message({ kind: 'certificate', name, version }));
    } catch (err) {
      throw ioError(`announce the certificate of ${name}`, err);
    }
  }

  /** Tells the others that the session-ticket keys changed. */
  async ticketKeysChanged(): Promise<void> {
    try {
      await this.#client.publish(this.channel, this.#message({ kind: 'ticket-keys' }));
    } catch (err) {
      throw ioError('announce new session-ticket keys', err);
    }
  }

  /** Unsubscribes and closes the subscriber connection. */
  close(): void {
    this.#subscriber?.disconnect();
    this.#subscriber = null;
    this.#handlers = null;
  }

  #message(body: DistributiveOmit<FleetMessage, 'from'>): string {
    return JSON.stringify({ ...body, from: this.nodeId });
  }

  async #receive(text: string): Promise<void> {
    const handlers = this.#handlers;
    let message: FleetMessage;
    try {
      message = JSON.parse(text) as FleetMessage;
    } catch {
      return;
    }
    if (handlers === null || message.from === this.nodeId) return;
    switch (message.kind) {
      case 'present': {
        const challenge = message.challenge ?? this.#unseal(message.id, message.sealed ?? '');
        if (challenge === null) return;
        await this.#answer(message.id, challenge);
        try {
          await this.#client.multi().incr(this.#ackKey(message.id)).pexpire(this.#ackKey(message.id), 60_000).exec();
        } catch {
          // The presenting node stops waiting after its timeout.
        }
        return;
      }
      case 'clean-up':
        await this.#forget(message.id);
        return;
      case 'certificate':
        this.#version = String(message.version);
        handlers.certificate(message.name);
        return;
      case 'ticket-keys':
        handlers.ticketKeys();
        return;
    }
  }

  async #answer(id: string, challenge: PresentedChallenge): Promise<void> {
    if (this.#own.has(id) || this.#answering.has(id) || this.#handlers === null) return;
    this.#answering.set(id, challenge);
    await this.#handlers.present(challenge).catch(() => {});
  }

  async #forget(id: string): Promise<void> {
    const challenge = this.#answering.get(id);
    if (challenge === undefined || this.#handlers === null) return;
    this.#answering.delete(id);
    await this.#handlers.cleanUp(challenge).catch(() => {});
  }

  /** After (re)subscribing: the challenges and certificates announced while this node was not listening. */
  async #resync(): Promise<void> {
    const handlers = this.#handlers;
    if (handlers === null) return;
    try {
      await this.#client.zremrangebyscore(this.#indexKey(), '-inf', String(this.#now()));
      const ids = await this.#client.zrange(this.#indexKey(), '0', '-1');
      const values = ids.length === 0 ? [] : await this.#client.mget(ids.map((id) => this.#challengeKey(id)));
      const stored = new Set<string>();
      await Promise.all(
        ids.map((id, i) => {
          const challenge = values[i] == null ? null : this.#unseal(id, values[i] as string);
          if (challenge === null) return undefined;
          stored.add(id);
          return this.#answer(id, challenge);
        }),
      );
      await Promise.all([...this.#answering.keys()].filter((id) => !stored.has(id)).map((id) => this.#forget(id)));
      const version = await this.#client.get(this.#versionKey());
      const missed = this.#connectedOnce && version !== this.#version;
      this.#version = version;
      this.#connectedOnce = true;
      if (missed) handlers.certificate(null);
      // Keys made or rotated while this node was not listening (or not connected at its start).
      handlers.ticketKeys();
    } catch {
      // Redis went away again: the next `ready` reads again.
    }
  }

  /** A challenge as stored and sent: JSON, or with an encryption key its sealed JSON in base64. */
  #seal(id: string, challenge: PresentedChallenge): string {
    const json = JSON.stringify(challenge);
    if (this.#key === null) return json;
    return seal(this.#key, `challenge/${id}`, Buffer.from(json, 'utf8')).toString('base64');
  }

  /** The challenge in `text` ({@link #seal}'s form); null when it does not open (another key: not this fleet's). */
  #unseal(id: string, text: string): PresentedChallenge | null {
    try {
      if (text.startsWith('{')) return JSON.parse(text) as PresentedChallenge;
      return JSON.parse(open(this.#key, `challenge/${id}`, Buffer.from(text, 'base64')).toString('utf8'));
    } catch {
      return null;
    }
  }

  #challengeKey(id: string): string {
    return `${this.#prefix}:challenge:${id}`;
  }

  #ackKey(id: string): string {
    return `${this.#prefix}:challenge-acks:${id}`;
  }

  #indexKey(): string {
    return `${this.#prefix}:challenges`;
  }

  #versionKey(): string {
    return `${this.#prefix}:certificates-version`;
  }
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
