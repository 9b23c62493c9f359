/** Options of {@link VerificationGate}. */
export interface VerificationGateOptions {
  /** Verifications running at once (default 2). */
  maxInFlight?: number;
  /** Verifications waiting for a slot, first come first served (default 16). */
  maxQueued?: number;
}

interface Waiting {
  readonly task: () => Promise<boolean>;
  readonly resolve: (ok: boolean) => void;
  readonly reject: (err: unknown) => void;
}

/**
 * Bounds the password verifications (bcrypt) of the whole process: at most
 * `maxInFlight` run at once, at most `maxQueued` wait for a slot, and
 * {@link VerificationGate.run} refuses (returns null) beyond that.
 *
 * Why it is small: bcryptjs is pure JavaScript and runs up to 100 ms of
 * hashing per event-loop turn for every verification in progress, so each
 * verification running at once adds up to 100 ms to every other request's
 * latency, while one thread verifies no faster with more of them. The
 * default (2 running, 16 waiting) keeps a flood of wrong passwords from
 * stalling the event loop by more than ~200 ms a turn.
 */
export class VerificationGate {
  readonly maxInFlight: number;
  readonly maxQueued: number;
  #inFlight = 0;
  readonly #queue: Waiting[] = [];

  constructor(options: VerificationGateOptions = {}) {
    this.maxInFlight = options.maxInFlight ?? 2;
    this.maxQueued = options.maxQueued ?? 16;
    if (!Number.isInteger(this.maxInFlight) || this.maxInFlight < 1) throw new RangeError('maxInFlight must be ≥ 1');
    if (!Number.isInteger(this.maxQueued) || this.maxQueued < 0) throw new RangeError('maxQueued must be ≥ 0');
  }

  /**
   * Runs `task` now if a slot is free, later if the queue has room; null
   * (and `task` never runs) when both are full.
   */
  run(task: () => Promise<boolean>): Promise<boolean> | null {
    if (this.#inFlight < this.maxInFlight) return this.#start(task);
    if (this.#queue.length >= this.maxQueued) return null;
    return new Promise<boolean>((resolve, reject) => {
      this.#queue.push({ task, resolve, reject });
    });
  }

  /** Verifications running now. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Verifications waiting for a slot. */
  get queued(): number {
    return this.#queue.length;
  }

  #start(task: () => Promise<boolean>): Promise<boolean> {
    this.#inFlight++;
    let running: Promise<boolean>;
    try {
      running = task();
    } catch (err) {
      running = Promise.reject(err);
    }
    return running.finally(() => {
      this.#inFlight--;
      const next = this.#queue.shift();
      if (next !== undefined) this.#start(next.task).then(next.resolve, next.reject);
    });
  }
}
