/**
 * A sliding-window counter over fixed-width time buckets: `add` is O(1),
 * `count` sums the buckets (O(buckets)). The window is the current bucket
 * (partly elapsed) plus the `buckets - 1` before it, so it covers between
 * `(buckets - 1) × width` and `buckets × width` of the past: an event is
 * counted for at least `(buckets - 1) × width` and less than `buckets × width`
 * after it happened. It never over-counts; the worst-case error is an
 * under-count of the events in the part of the oldest bucket already dropped
 * (at most one bucket: 1/buckets of the window at a steady rate). An idle
 * counter decays to 0 once every bucket has aged out.
 */
export class SlidingWindowCounter {
  readonly #widthMs: number;
  readonly #buckets: number;
  /**
   * Counts in slots [0, buckets); in [buckets, 2 × buckets) the bucket number
   * (time / width) each slot holds, 0 when empty (fits 32 bits until 2106 at
   * 1 s). One typed array: each costs ~190 B besides its data.
   */
  readonly #slots: Uint32Array;

  /**
   * @param buckets number of buckets in the window
   * @param widthMs width of one bucket, ms
   */
  constructor(buckets: number, widthMs: number) {
    this.#widthMs = widthMs;
    this.#buckets = buckets;
    this.#slots = new Uint32Array(2 * buckets);
  }

  /** Counts one event at `nowMs` (ms since the epoch). */
  add(nowMs: number): void {
    const stamp = Math.floor(nowMs / this.#widthMs);
    const slot = stamp % this.#buckets;
    const slots = this.#slots;
    if (slots[this.#buckets + slot] !== stamp) {
      slots[this.#buckets + slot] = stamp;
      slots[slot] = 1;
    } else {
      slots[slot] = (slots[slot] as number) + 1;
    }
  }

  /**
   * A copy of the ring: counts in [0, buckets), each slot's bucket number in
   * [buckets, 2 × buckets) (0 when empty). Bucket numbers are absolute
   * (`floor(ms / width)`), so rings of different processes line up.
   */
  exportSlots(): Uint32Array {
    return this.#slots.slice();
  }

  /**
   * The ring one counter would hold had it counted every event of `rings`
   * (from {@link exportSlots}, same buckets and width): per slot, the latest
   * bucket number any ring holds and the sum of the counts of the rings
   * holding that bucket (an older bucket in the same slot has left the window).
   * Exact when each ring's events came in time order.
   */
  static merge(buckets: number, widthMs: number, rings: readonly Uint32Array[]): SlidingWindowCounter {
    const merged = new SlidingWindowCounter(buckets, widthMs);
    const out = merged.#slots;
    for (const ring of rings) {
      if (ring.length !== 2 * buckets) throw new RangeError(`ring of ${ring.length} slots, want ${2 * buckets}`);
      for (let i = 0; i < buckets; i++) {
        const stamp = ring[buckets + i] as number;
        const have = out[buckets + i] as number;
        if (stamp > have) {
          out[buckets + i] = stamp;
          out[i] = ring[i] as number;
        } else if (stamp === have && stamp !== 0) {
          out[i] = (out[i] as number) + (ring[i] as number);
        }
      }
    }
    return merged;
  }

  /** Events in the window ending at `nowMs`. */
  count(nowMs: number): number {
    const current = Math.floor(nowMs / this.#widthMs);
    const n = this.#buckets;
    const oldest = current - n + 1;
    const slots = this.#slots;
    let total = 0;
    for (let i = 0; i < n; i++) {
      const stamp = slots[n + i] as number;
      if (stamp >= oldest && stamp <= current) total += slots[i] as number;
    }
    return total;
  }
}
