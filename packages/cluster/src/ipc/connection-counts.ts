import type { Channel } from '../channel.js';

/** The request a worker sends with a turn's new connections: their per-address keys. */
export const CONNECTIONS_ACQUIRE = 'connections.acquire';
/** The one-way message a worker sends with a turn's closed connections (those the primary admitted): their keys. */
export const CONNECTIONS_RELEASE = 'connections.release';

/**
 * The primary's side, for the worker of slot `index` on `channel`: its
 * acquisitions and releases go to the fleet (`FleetPort`), which counts
 * every node's.
 */
export function serveConnectionCounts(
  channel: Channel,
  index: number,
  fleet: {
    acquireConnections(from: number, keys: readonly string[]): Uint8Array;
    releaseConnections(from: number, keys: readonly string[]): void;
  },
): void {
  channel.handle<string[]>(CONNECTIONS_ACQUIRE, (keys) => fleet.acquireConnections(index, keys));
  channel.handle<string[]>(CONNECTIONS_RELEASE, (keys) => fleet.releaseConnections(index, keys));
}

interface Waiting {
  resolve(admitted: boolean): void;
  reject(error: Error): void;
}

/**
 * A worker's side of `max_connections_per_ip` with several workers (proxy-core's
 * `ConnectionCounter`): each new capped connection is asked of the primary,
 * whose fleet counts every worker's, so one address holds the cap on the node,
 * not per worker (the kernel spreads one client's connections over the
 * workers by a hash of each). The connections of one event-loop turn go in
 * one request, their closes in one notification. An answer that does not
 * come within `timeoutMs` (the primary is stuck or gone) rejects, and the
 * worker admits on its own count.
 */
export class RemoteConnectionCounter {
  readonly #channel: Channel;
  readonly #timeoutMs: number;
  #acquire: string[] = [];
  #waiting: Waiting[] = [];
  #release: string[] = [];
  #scheduled = false;
  readonly #flush = (): void => this.#send();

  constructor(channel: Channel, timeoutMs = 1000) {
    this.#channel = channel;
    this.#timeoutMs = timeoutMs;
  }

  acquire(key: string): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      this.#acquire.push(key);
      this.#waiting.push({ resolve, reject });
      this.#schedule();
    });
  }

  release(key: string): void {
    this.#release.push(key);
    this.#schedule();
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(this.#flush);
  }

  #send(): void {
    this.#scheduled = false;
    // Closes first: a connection that closed this turn frees its place for one that opened.
    if (this.#release.length > 0) {
      this.#channel.notify(CONNECTIONS_RELEASE, this.#release);
      this.#release = [];
    }
    if (this.#acquire.length === 0) return;
    const keys = this.#acquire;
    const waiting = this.#waiting;
    this.#acquire = [];
    this.#waiting = [];
    this.#channel.request<Uint8Array>(CONNECTIONS_ACQUIRE, keys, this.#timeoutMs).then(
      (answers) => {
        for (let i = 0; i < waiting.length; i++) (waiting[i] as Waiting).resolve(answers[i] === 1);
      },
      (err: Error) => {
        for (const w of waiting) w.reject(err);
        // Had the primary counted them after all, this gives them back (messages arrive in order); had it
        // not, it undercounts a little, which errs towards admitting.
        this.#channel.notify(CONNECTIONS_RELEASE, keys);
      },
    );
  }
}
