/** One item of a top list: a key and its guaranteed (lower-bound) count. */
export interface TopItem {
  key: string;
  count: number;
}

/**
 * Space-saving heavy hitters (Metwally et al. 2005) with a fixed capacity:
 * a key already tracked is incremented; a new key takes a free slot or
 * replaces the key with the smallest count and inherits that count + 1.
 * Each slot keeps the inherited count as its error, so `count - error` is a
 * guaranteed lower bound (exact for a key never evicted); `top` ranks and
 * reports that lower bound, so a long tail of one-off keys (whose inherited
 * counts are all error) never outranks a real heavy hitter. Any key whose true
 * count exceeds total / capacity is guaranteed to be tracked. Update is O(1)
 * for a tracked key and O(capacity) for an eviction (capacity is fixed).
 */
export class SpaceSaving {
  readonly #capacity: number;
  readonly #index = new Map<string, number>();
  readonly #keys: string[] = [];
  /** Counts in slots [0, capacity), inherited errors in [capacity, 2 × capacity): one typed array (each costs ~190 B besides its data). */
  readonly #counts: Float64Array;

  /** @param capacity the number of keys tracked */
  constructor(capacity: number) {
    this.#capacity = capacity;
    this.#counts = new Float64Array(2 * capacity);
  }

  /** Counts one occurrence of `key`. */
  add(key: string): void {
    const slot = this.#index.get(key);
    if (slot !== undefined) {
      this.#counts[slot] = (this.#counts[slot] as number) + 1;
      return;
    }
    // A fresh flat copy: a key sliced from a request header would otherwise keep the whole header alive.
    key = Buffer.from(key, 'utf8').toString('utf8');
    if (this.#keys.length < this.#capacity) {
      this.#index.set(key, this.#keys.length);
      this.#counts[this.#keys.length] = 1;
      this.#keys.push(key);
      return;
    }
    const counts = this.#counts;
    let min = 0;
    for (let i = 1; i < this.#capacity; i++) if ((counts[i] as number) < (counts[min] as number)) min = i;
    this.#index.delete(this.#keys[min] as string);
    this.#keys[min] = key;
    this.#index.set(key, min);
    counts[this.#capacity + min] = counts[min] as number;
    counts[min] = (counts[min] as number) + 1;
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
