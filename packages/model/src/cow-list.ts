/** Entries per chunk: a write copies at most a chunk or two of this many references (8 KB each). */
const SHIFT = 10;
const CHUNK = 1 << SHIFT;
const MASK = CHUNK - 1;

/**
 * A list that publishes immutable copies of itself without copying it
 * (issue 30): the entries live in chunks of 1,024, and {@link freeze} hands
 * out the chunks as they are, marking them shared; the next change to a
 * shared chunk copies that chunk first. A published state of 100,000 routes
 * then costs a write ~100 chunk references and the chunks it touched,
 * not an array of 100,000 (800 KB of old-generation memory per write,
 * each one bringing the next major collection of the whole heap closer).
 */
export class CowList<T> {
  #chunks: T[][] = [];
  /** Whether each chunk is held by a frozen state (copied before it is written). */
  #shared: boolean[] = [];
  #length = 0;

  get length(): number {
    return this.#length;
  }

  get(index: number): T | undefined {
    if (index < 0 || index >= this.#length) return undefined;
    return (this.#chunks[index >> SHIFT] as T[])[index & MASK];
  }

  set(index: number, value: T): void {
    if (index < 0 || index >= this.#length) throw new RangeError(`index ${index} is outside 0..${this.#length - 1}`);
    this.#writable(index >> SHIFT)[index & MASK] = value;
  }

  push(value: T): void {
    if ((this.#length & MASK) === 0) {
      this.#chunks.push([]);
      this.#shared.push(false);
    }
    this.#writable(this.#chunks.length - 1).push(value);
    this.#length++;
  }

  pop(): T | undefined {
    if (this.#length === 0) return undefined;
    const last = this.#chunks.length - 1;
    const value = this.#writable(last).pop();
    this.#length--;
    if ((this.#length & MASK) === 0) {
      this.#chunks.pop();
      this.#shared.pop();
    }
    return value;
  }

  /** Empties the list (frozen states keep what they hold). */
  clear(): void {
    this.#chunks = [];
    this.#shared = [];
    this.#length = 0;
  }

  /** The entries now, as an immutable state: O(length / 1,024); later changes leave it as it is. */
  freeze(): FrozenList<T> {
    this.#shared.fill(true);
    return new FrozenList(this.#chunks.slice(), this.#length);
  }

  #writable(chunk: number): T[] {
    if (this.#shared[chunk] === true) {
      this.#chunks[chunk] = (this.#chunks[chunk] as T[]).slice();
      this.#shared[chunk] = false;
    }
    return this.#chunks[chunk] as T[];
  }
}

/** One state of a {@link CowList}: read-only, never changed. */
export class FrozenList<T> {
  readonly #chunks: readonly (readonly T[])[];
  readonly length: number;

  constructor(chunks: readonly (readonly T[])[], length: number) {
    this.#chunks = chunks;
    this.length = length;
  }

  /** The entries in order, as a new array: O(length). */
  toArray(): T[] {
    const out = new Array<T>(this.length);
    let at = 0;
    for (const chunk of this.#chunks) for (const value of chunk) out[at++] = value;
    return out;
  }
}
