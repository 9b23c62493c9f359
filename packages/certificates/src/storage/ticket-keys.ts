import { randomBytes } from 'node:crypto';
import type { CertificateLogger } from '../manager/entry.js';
import type { RedisFleet } from './redis-fleet.js';
import type { RedisStorage } from './redis-storage.js';

/** The storage key of the fleet's session-ticket keys (sealed like every value when encryption is on). */
export const TICKET_KEYS_KEY = 'tls/session-ticket-keys.json';

/** How often the fleet's session-ticket keys are replaced by default: 12 hours. */
export const TICKET_KEY_ROTATION_MS = 12 * 60 * 60 * 1000;

/** What {@link TICKET_KEYS_KEY} holds. */
interface StoredTicketKeys {
  /** The 48 bytes Node's `setTicketKeys` takes (16 name, 16 HMAC, 16 AES), base64. */
  keys: string;
  /** When they were made, ms since the epoch. */
  created: number;
}

/** Options of {@link SharedTicketKeys}. */
export interface SharedTicketKeysOptions {
  storage: RedisStorage;
  fleet: RedisFleet;
  /** Gives the keys to every TLS listener of this node (its workers included). */
  apply(keys: Buffer): Promise<void>;
  /** How long one set of keys lives, ms (default {@link TICKET_KEY_ROTATION_MS}). */
  rotationMs?: number;
  /** How often storage is checked for keys made elsewhere or due, ms (default 1/12 of `rotationMs`, at least 1 s). */
  checkMs?: number;
  now?: () => number;
  log: CertificateLogger;
}

/**
 * TLS session-ticket keys shared by a fleet, so that a session started on
 * one node resumes on another. The keys live in storage; the node that
 * finds none, or finds them older than `rotationMs`, makes new ones under
 * the lock `tls-session-ticket-keys` (re-reading inside it, so one node
 * makes them) and tells the others, which apply them at once; every node
 * also re-reads every `checkMs` (a missed message, or Redis away).
 *
 * Node keeps one ticket key set per server (`setTicketKeys`: 48 bytes), so
 * a rotation cannot keep the previous keys for decryption as Caddy does: a
 * ticket issued before a rotation is not accepted after it, and that one
 * client makes a full handshake (and gets a new ticket). With 12-hour
 * rotation that is one full handshake per client per 12 hours.
 */
export class SharedTicketKeys {
  readonly #options: SharedTicketKeysOptions;
  readonly #rotationMs: number;
  readonly #now: () => number;
  #applied: string | null = null;
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<void> | null = null;

  constructor(options: SharedTicketKeysOptions) {
    this.#options = options;
    this.#rotationMs = options.rotationMs ?? TICKET_KEY_ROTATION_MS;
    this.#now = options.now ?? Date.now;
  }

  /** Starts: reads (or makes) the keys now, then every `checkMs`. */
  start(): void {
    const checkMs = this.#options.checkMs ?? Math.max(1_000, Math.floor(this.#rotationMs / 12));
    this.#timer = setInterval(() => void this.refresh(), checkMs);
    this.#timer.unref();
    void this.refresh();
  }

  /**
   * Reads the stored keys, makes new ones when there are none or they are
   * due, and applies them when they changed. Concurrent calls share one
   * run; never rejects (a failure is logged, the keys in use stay).
   */
  refresh(): Promise<void> {
    this.#running ??= this.#refresh().finally(() => {
      this.#running = null;
    });
    return this.#running;
  }

  stop(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
  }

  async #refresh(): Promise<void> {
    const { storage, fleet, log } = this.#options;
    try {
      let stored = await this.#read();
      if (stored === null || this.#due(stored)) {
        const lock = await storage.lock('tls-session-ticket-keys', { timeoutMs: 30_000 });
        try {
          stored = await this.#read();
          if (stored === null || this.#due(stored)) {
            stored = { keys: randomBytes(48).toString('base64'), created: this.#now() };
            await storage.store(TICKET_KEYS_KEY, JSON.stringify(stored), { secret: true });
            await fleet.ticketKeysChanged().catch(() => {});
            log.info({ storage: 'redis' }, 'TLS session-ticket keys made for the fleet');
          }
        } finally {
          await lock.release().catch(() => {});
        }
      }
      if (stored.keys === this.#applied) return;
      await this.#options.apply(Buffer.from(stored.keys, 'base64'));
      this.#applied = stored.keys;
    } catch (err) {
      log.warn(
        { storage: 'redis', error: (err as Error).message },
        `TLS session-ticket keys not refreshed: ${(err as Error).message}`,
      );
    }
  }

  #due(stored: StoredTicketKeys): boolean {
    return this.#now() - stored.created >= this.#rotationMs;
  }

  async #read(): Promise<StoredTicketKeys | null> {
    const value = await this.#options.storage.load(TICKET_KEYS_KEY);
    if (value === null) return null;
    const parsed = JSON.parse(value.toString('utf8')) as Partial<StoredTicketKeys>;
    if (typeof parsed.keys !== 'string' || Buffer.from(parsed.keys, 'base64').length !== 48) return null;
    return { keys: parsed.keys, created: Number(parsed.created) || 0 };
  }
}
