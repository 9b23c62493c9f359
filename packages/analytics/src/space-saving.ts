import { hashString } from './hash.js';

/** One item of a top list: a key and its guaranteed (lower-bound) count. */
export interface TopItem {
  key: string;
  count: number;
}

/**
 * The plain-data image of a {@link SpaceSaving} (structured-clone safe): the
 * tracked keys, their counts and inherited errors, and the filter buckets.
 */
export interface TopListState {
  /** Tracked keys, in slot order. */
  keys: string[];
  /** `counts[i]` is the count of `keys[i]`, `counts[keys.length + i]` its inherited error. */
  counts: Float64Array;
  /** The filter buckets (a power of two of them). */
  buckets: Uint32Array;
}

/** Largest value a filter bucket holds (it saturates instead of wrapping). */
const BUCKET_MAX = 0xffff_ffff;

/**
 * Filtered space-saving heavy hitters (Homem & Carvalho 2010, after Metwally
 * et al. 2005) with a fixed capacity. A tracked key is incremented. A key not
 * tracked first counts in a filter bucket chosen by its hash; only when that
 * bucket reaches the smallest tracked count does the key replace the key with
 * the smallest count (whose count then goes to its own bucket), entering with
 * the bucket's count + 1 and that count as its error. So `count - error` is a
 * guaranteed lower bound (exact for a key tracked from its first occurrence),
 * and a long tail of rare keys mostly stays in the buckets instead of evicting
 * mid-ranked keys one after another: plain space-saving, under a Zipf tail
 * (1,000 paths, 32 slots), kept only the top 5 right; filtered, the top 10
 * come out in order with counts within a few % (space-saving.test.ts). `top`
 * ranks and reports the lower bound. A key not tracked has counted at most
 * its bucket's value, which is below the smallest tracked count. Update is
 * O(1) for a tracked key, O(key length) for one that stays in its bucket,
 * and O(key length + capacity) when the smallest tracked count must be found
 * again (after that slot was counted or replaced).
 */
export class SpaceSaving {
  readonly #capacity: number;
  readonly #index = new Map<string, number>();
  readonly #keys: string[] = [];
  /** Counts in slots [0, capacity), inherited errors in [capacity, 2 × capacity): one typed array (each costs ~190 B besides its data). */
  readonly #counts: Float64Array;
  /** The filter: upper bounds of what keys not tracked have counted, by hash. */
  readonly #buckets: Uint32Array;
  /**
   * The first slot with the smallest count, or -1 when not known. Counts only
   * grow, so it stays right until that slot itself is counted or replaced;
   * a key not tracked then costs no scan of the table (most of a long tail).
   */
  #minSlot = -1;

  /**
   * @param capacity the number of keys tracked
   * @param buckets filter buckets, a power of two (default: the one at or above 8 × capacity)
   */
  constructor(capacity: number, buckets = 2 ** Math.ceil(Math.log2(8 * capacity))) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError(`capacity ${capacity}`);
    if (!Number.isInteger(buckets) || buckets < 1 || (buckets & (buckets - 1)) !== 0) {
      throw new RangeError(`buckets ${buckets}: a power of two`);
    }
    this.#capacity = capacity;
    this.#counts = new Float64Array(2 * capacity);
    this.#buckets = new Uint32Array(buckets);
  }

  /** Counts one occurrence of `key`. */
  add(key: string): void {
    const slot = this.#index.get(key);
    if (slot !== undefined) {
      this.#counts[slot] = (this.#counts[slot] as number) + 1;
      if (slot === this.#minSlot) this.#minSlot = -1;
      return;
    }
    const counts = this.#counts;
    const capacity = this.#capacity;
    const buckets = this.#buckets;
    const bucket = hashString(key) & (buckets.length - 1);
    const filtered = buckets[bucket] as number;
    let target: number;
    if (this.#keys.length < capacity) {
      target = this.#keys.length;
      this.#keys.push('');
    } else {
      target = this.#minSlot;
      if (target < 0) {
        target = 0;
        for (let i = 1; i < capacity; i++) if ((counts[i] as number) < (counts[target] as number)) target = i;
        this.#minSlot = target;
      }
      const min = counts[target] as number;
      if (filtered + 1 < min) {
        if (filtered < BUCKET_MAX) buckets[bucket] = filtered + 1;
        return;
      }
      const evicted = this.#keys[target] as string;
      this.#index.delete(evicted);
      const home = hashString(evicted) & (buckets.length - 1);
      buckets[home] = Math.max(buckets[home] as number, Math.min(min, BUCKET_MAX));
    }
    // A fresh flat copy: a key sliced from a request header would otherwise keep the whole header alive.
    key = Buffer.from(key, 'utf8').toString('utf8');
    this.#keys[target] = key;
    this.#index.set(key, target);
    counts[target] = filtered + 1;
    counts[capacity + target] = filtered;
    this.#minSlot = -1;
  }

  /** A copy of the counters (keys, counts, errors, filter buckets). */
  exportState(): TopListState {
    const n = this.#keys.length;
    const counts = new Float64Array(2 * n);
    counts.set(this.#counts.subarray(0, n));
    counts.set(this.#counts.subarray(this.#capacity, this.#capacity + n), n);
    return { keys: this.#keys.slice(), counts, buckets: this.#buckets.slice() };
  }

  /**
   * Merges summaries (from {@link exportState}, same bucket count) the way
   * mergeable summaries do (Agarwal et al. 2012; Cafaro et al. 2016 for
   * space-saving): a key's count is the sum over the summaries of its count
   * where tracked and, where not, of the filter bucket its hash picks there (an
   * upper bound of what it counted there, 0 in a summary that never filled);
   * its error grows by the same bucket values, so its guaranteed count
   * (count − error) is the sum of its guaranteed counts where tracked. The
   * `capacity` keys with the highest counts are kept (ties by key); buckets
   * add up, and a key left out raises its bucket to its count. Exact for
   * every key when the union has at most `capacity` keys and no summary ever
   * filled.
   */
  static merge(capacity: number, states: readonly TopListState[]): SpaceSaving {
    const first = states[0];
    const merged = new SpaceSaving(capacity, ...(first === undefined ? [] : [first.buckets.length]));
    const buckets = merged.#buckets;
    const mask = buckets.length - 1;
    const count = new Map<string, number>();
    const error = new Map<string, number>();
    for (const state of states) {
      if (state.buckets.length !== buckets.length || state.counts.length !== 2 * state.keys.length) {
        throw new RangeError('top-list states of different shapes');
      }
      const n = state.keys.length;
      for (let i = 0; i < n; i++) {
        const key = state.keys[i] as string;
        count.set(key, (count.get(key) ?? 0) + (state.counts[i] as number));
        error.set(key, (error.get(key) ?? 0) + (state.counts[n + i] as number));
      }
    }
    const keys = [...count.keys()];
    for (const state of states) {
      let filtered = false;
      for (let b = 0; b < buckets.length; b++) {
        const value = state.buckets[b] as number;
        if (value === 0) continue;
        filtered = true;
        buckets[b] = Math.min(BUCKET_MAX, (buckets[b] as number) + value);
      }
      // All buckets empty: this summary never saw a key it does not track.
      if (!filtered) continue;
      const tracked = new Set(state.keys);
      for (const key of keys) {
        if (tracked.has(key)) continue;
        const upper = state.buckets[hashString(key) & mask] as number;
        count.set(key, (count.get(key) as number) + upper);
        error.set(key, (error.get(key) as number) + upper);
      }
    }
    keys.sort((a, b) => (count.get(b) as number) - (count.get(a) as number) || (a < b ? -1 : a > b ? 1 : 0));
    for (let i = capacity; i < keys.length; i++) {
      const key = keys[i] as string;
      const home = hashString(key) & mask;
      buckets[home] = Math.max(buckets[home] as number, Math.min(count.get(key) as number, BUCKET_MAX));
    }
    const kept = keys.slice(0, capacity);
    for (let i = 0; i < kept.length; i++) {
      const key = kept[i] as string;
      merged.#keys.push(key);
      merged.#index.set(key, i);
      merged.#counts[i] = count.get(key) as number;
      merged.#counts[capacity + i] = error.get(key) as number;
    }
    return merged;
  }

  /** The `n` keys with the highest counts, highest first (ties by key). */
  top(n: number): TopItem[] {
    const items: TopItem[] = [];
    for (let i = 0; i < this.#keys.length; i++) {
      const count = (this.#counts[i] as number) - (this.#counts[this.#capacity + i] as number);
      items.push({ key: this.#keys[i] as string, count });
    }
    items.sort((a, b) => b.count - a.count || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    return items.slice(0, n);
  }
}
