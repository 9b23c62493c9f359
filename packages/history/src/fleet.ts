import { randomBytes } from 'node:crypto';
import type { MinuteRollup } from '@proxyd/analytics';
import { decodeFleetBatch, encodeFleetBatch } from './fleet-codec.js';
import type { HistoryStore } from './store.js';

/** How long a published batch stays in the exchange, ms: a node away from Redis longer misses the others' batches of that time. */
export const FLEET_RETENTION_MS = 60 * 60_000;
/** How long a node keeps its own batches it could not publish (Redis away), ms; older ones are dropped, with a warning. */
export const FLEET_OUTBOX_MS = 24 * 60 * 60_000;
/** Batches read from the exchange in one call at most. */
const READ_CHUNK = 200;

/**
 * Where the nodes of a fleet (`storage redis`) exchange their minute
 * rollups: apps/proxyd implements it over Redis. Every call rejects while
 * the exchange is unreachable; nothing is lost by that (see {@link FleetHistory}).
 */
export interface FleetRollups {
  /** Publishes batch `id` (JSON text), at `at` (ms); kept {@link FLEET_RETENTION_MS} from then. */
  publish(id: string, payload: string, at: number): Promise<void>;
  /** Ids of the batches published at `since` (ms) or later, oldest first. */
  list(since: number): Promise<string[]>;
  /** The payload of each id (null: expired since it was listed). */
  read(ids: readonly string[]): Promise<(string | null)[]>;
  /** The fleet's visitor salt of the UTC day starting at `day` (ms): the first one proposed wins. */
  salt(day: number, proposal: Buffer): Promise<Buffer>;
}

/** What {@link FleetHistory} logs to. */
export interface FleetLog {
  warn(fields: Record<string, unknown>, message: string): void;
  debug(fields: Record<string, unknown>, message: string): void;
}

/** One of this node's batches. */
export interface Outgoing {
  id: string;
  payload: string;
  at: number;
}

/**
 * This node's history as one of a fleet's: its own rollups go out, the
 * others' come in.
 *
 * - **Out.** Each flush's own rollups are one batch with a new id
 *   (`<node>.<ms>.<random>`), written here with the id marked in the same
 *   transaction ({@link HistoryStore.write}), then published. A batch that
 *   cannot be published (Redis away) waits in memory, in order, for the
 *   next flush, up to {@link FLEET_OUTBOX_MS}; a restart loses the batches
 *   still waiting (the node's own history has them).
 * - **In.** Each flush lists the batches published in the last
 *   {@link FLEET_RETENTION_MS}, reads those not marked here and writes them
 *   with their ids marked, in one transaction: a batch counts once here,
 *   whatever repeats, restarts or nodes publish late. Counts add up;
 *   visitor sketches merge by register max (HyperLogLog union), so a visitor
 *   seen by two nodes in a minute counts once, like the breakdowns' keys.
 * - **Salt.** Visitors are the same across nodes only under one salt: the
 *   UTC day's salt is the fleet's (the first a node proposed), kept in the
 *   store; while Redis cannot be asked, this node's own.
 */
export class FleetHistory {
  readonly #store: HistoryStore;
  readonly #exchange: FleetRollups;
  readonly #node: string;
  readonly #log: FleetLog;
  #outbox: Outgoing[] = [];
  /** The UTC day whose salt the fleet confirmed (-1: none yet). */
  #saltDay = -1;

  /** @param node this node's name in batch ids (letters, digits, `-`, `_`; made unique per process by the ids) */
  constructor(store: HistoryStore, exchange: FleetRollups, options: { node: string; log: FleetLog }) {
    this.#store = store;
    this.#exchange = exchange;
    this.#node = options.node.replace(/[^A-Za-z0-9_-]/g, '_');
    this.#log = options.log;
  }

  /** Own batches waiting to be published. */
  get waiting(): number {
    return this.#outbox.length;
  }

  /**
   * A batch of this node's rollups, encoded now (before the store's write,
   * which may merge rollups into one another), with a new id; null when
   * there are none. Give it to {@link written} once the store wrote it.
   */
  batch(rollups: readonly MinuteRollup[], now: number): Outgoing | null {
    if (rollups.length === 0) return null;
    return {
      id: `${this.#node}.${now}.${randomBytes(6).toString('hex')}`,
      payload: encodeFleetBatch(rollups),
      at: now,
    };
  }

  /** Queues this node's batch (written here with its id marked) for publication. */
  written(batch: Outgoing): void {
    this.#outbox.push(batch);
  }

  /** Publishes the waiting batches, oldest first; stops at the first failure (they wait for the next flush). */
  async publish(now: number): Promise<void> {
    const stale = this.#outbox.findIndex((b) => b.at >= now - FLEET_OUTBOX_MS);
    const drop = stale < 0 ? this.#outbox.length : stale;
    if (drop > 0) {
      this.#log.warn({ dropped: drop }, `history: ${drop} batches of this node were never published (Redis away)`);
      this.#outbox = this.#outbox.slice(drop);
    }
    while (this.#outbox.length > 0) {
      const next = this.#outbox[0] as Outgoing;
      await this.#exchange.publish(next.id, next.payload, now);
      this.#outbox.shift();
    }
  }

  /**
   * Writes every batch of the other nodes published in the last
   * {@link FLEET_RETENTION_MS} and not yet written here; returns how many.
   * A batch that does not decode is marked (it will not decode next time
   * either) and logged.
   */
  async gather(now: number): Promise<number> {
    const own = new Set(this.#outbox.map((b) => b.id));
    const ids = (await this.#exchange.list(now - FLEET_RETENTION_MS)).filter(
      (id) => !own.has(id) && !this.#store.hasBatch(id),
    );
    let written = 0;
    for (let i = 0; i < ids.length; i += READ_CHUNK) {
      const chunk = ids.slice(i, i + READ_CHUNK);
      const payloads = await this.#exchange.read(chunk);
      const rollups: MinuteRollup[] = [];
      const marked: string[] = [];
      payloads.forEach((payload, j) => {
        const id = chunk[j] as string;
        if (payload === null) return;
        marked.push(id);
        try {
          rollups.push(...decodeFleetBatch(payload));
        } catch (err) {
          this.#log.warn({ batch: id, error: (err as Error).message }, `history: fleet batch ${id} left out`);
        }
      });
      if (marked.length === 0) continue;
      this.#store.write(rollups, now, marked);
      written += marked.length;
    }
    if (written > 0) this.#log.debug({ batches: written }, 'history: the fleet’s rollups written');
    return written;
  }

  /**
   * The visitor salt of the UTC day of `now` this node should hash with:
   * the fleet's once Redis answered that day (stored here too), else this
   * node's own (a RangeError when Redis cannot be asked: the caller keeps it).
   */
  async salt(now: number): Promise<Buffer> {
    const day = now - (now % 86_400_000);
    const local = this.#store.visitorSalt(now);
    if (this.#saltDay === day) return local;
    const fleet = await this.#exchange.salt(day, local);
    this.#saltDay = day;
    if (!fleet.equals(local)) this.#store.adoptVisitorSalt(fleet, now);
    return fleet;
  }

  /** Whether the fleet's salt of `now`'s UTC day is known. */
  saltKnown(now: number): boolean {
    return this.#saltDay === now - (now % 86_400_000);
  }
}
