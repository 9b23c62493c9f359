/**
 * Runs keyed tasks with at most `limit` at once, the rest waiting in order
 * (certmagic's bounded job queue): the manager's issuance per issuer and
 * its storage reads go through one each, so the work started at once — and
 * the files and locks held — is bounded whatever the number of names. A
 * queued task holds nothing but its place; {@link promote} moves one to
 * the front (a name a handshake asked for).
 */
export class WorkQueue {
  readonly #limit: number;
  /** Waiting tasks by key, in order (a Map keeps insertion order; a promoted key goes to `#urgent`). */
  readonly #waiting = new Map<string, () => void>();
  readonly #urgent = new Map<string, () => void>();
  #running = 0;
  #peak = 0;

  constructor(limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`a work queue needs a limit ≥ 1, not ${limit}`);
    this.#limit = limit;
  }

  /** The most tasks run at once. */
  get limit(): number {
    return this.#limit;
  }

  /** Tasks running now. */
  get running(): number {
    return this.#running;
  }

  /** Tasks waiting now. */
  get waiting(): number {
    return this.#waiting.size + this.#urgent.size;
  }

  /** The most tasks that ever ran at once (tests and diagnostics). */
  get peak(): number {
    return this.#peak;
  }

  /**
   * Runs `task` once a place is free (at once when one is); `key` names it
   * while it waits (one waiting task per key: a second one with the same
   * key waits behind it under a fresh key). `urgent` puts it at the front.
   */
  async run<T>(key: string, task: () => Promise<T>, urgent = false): Promise<T> {
    if (this.#running >= this.#limit || this.waiting > 0) {
      await new Promise<void>((resolve) => {
        let slot = key;
        while (this.#waiting.has(slot) || this.#urgent.has(slot)) slot = `${slot}\u0000`;
        (urgent ? this.#urgent : this.#waiting).set(slot, resolve);
        this.#next();
      });
    } else {
      this.#started();
    }
    try {
      return await task();
    } finally {
      this.#running -= 1;
      this.#next();
    }
  }

  /** Moves the waiting task `key` to the front; false when none waits under that key. */
  promote(key: string): boolean {
    const resolve = this.#waiting.get(key);
    if (resolve === undefined) return this.#urgent.has(key);
    this.#waiting.delete(key);
    this.#urgent.set(key, resolve);
    return true;
  }

  #started(): void {
    this.#running += 1;
    if (this.#running > this.#peak) this.#peak = this.#running;
  }

  #next(): void {
    while (this.#running < this.#limit) {
      const queue = this.#urgent.size > 0 ? this.#urgent : this.#waiting;
      const first = queue.entries().next();
      if (first.done === true) return;
      const [key, resolve] = first.value;
      queue.delete(key);
      this.#started();
      resolve();
    }
  }
}
