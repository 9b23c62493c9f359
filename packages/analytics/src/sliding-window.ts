/**
 * A sliding-window counter over fixed-width time buckets: `add` is O(1),
 * `count` sums the buckets (O(buckets)). The window is the current bucket plus
 * the `buckets - 1` before it, so it spans between `(buckets - 1) × width` and
 * `buckets × width`: the worst-case error is the count of one bucket at the
 * trailing edge (requests up to one bucket width older than the nominal window
 * are still counted). An idle counter decays to 0 once every bucket has aged out.
 */
export class SlidingWindowCounter {
  readonly #widthMs: number;
  readonly #counts: Uint32Array;
  /** The bucket number (time / width) each slot holds; 0 when empty (fits 32 bits until 2106 at 1 s). */
  readonly #stamps: Uint32Array;

  /**
   * @param buckets number of buckets in the window
   * @param widthMs width of one bucket, ms
   */
  constructor(buckets: number, widthMs: number) {
    this.#widthMs = widthMs;
    this.#counts = new Uint32Array(buckets);
    this.#stamps = new Uint32Array(buckets);
  }

  /** Counts one event at `nowMs` (ms since the epoch). */
  add(nowMs: number): void {
    const stamp = Math.floor(nowMs / this.#widthMs);
    const slot = stamp % this.#counts.length;
    if (this.#stamps[slot] !== stamp) {
      this.#stamps[slot] = stamp;
      this.#counts[slot] = 1;
    } else {
      this.#counts[slot] = (this.#counts[slot] as number) + 1;
    }
  }

  /** Events in the window ending at `nowMs`. */
  count(nowMs: number): number {
    const current = Math.floor(nowMs / this.#widthMs);
    const oldest = current - this.#counts.length + 1;
    let total = 0;
    for (let i = 0; i < this.#counts.length; i++) {
      const stamp = this.#stamps[i] as number;
      if (stamp >= oldest && stamp <= current) total += this.#counts[i] as number;
    }
    return total;
  }
}
