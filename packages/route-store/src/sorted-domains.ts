/**
 * Domains in code-unit order, kept per change: a lookup is O(log n), an
 * insert or a delete moves the tail of one array (a memmove, ~0.1 ms at
 * 100,000). What `GET /routes` lists from, so that no call sorts.
 */
export class SortedDomains {
  readonly #domains: string[] = [];

  get size(): number {
    return this.#domains.length;
  }

  /** Adds `domain` (nothing when present). */
  add(domain: string): void {
    const at = this.#position(domain);
    if (this.#domains[at] !== domain) this.#domains.splice(at, 0, domain);
  }

  /** Removes `domain` (nothing when absent). */
  delete(domain: string): void {
    const at = this.#position(domain);
    if (this.#domains[at] === domain) this.#domains.splice(at, 1);
  }

  /** The domains in order (the array itself: read it, do not keep it across changes). */
  get ordered(): readonly string[] {
    return this.#domains;
  }

  #position(domain: string): number {
    return lowerBound(this.#domains, domain);
  }
}

/** The index of the first of `sorted` (code-unit order) not below `value`: where it is, or would go. */
export function lowerBound(sorted: readonly string[], value: string): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((sorted[mid] as string) < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
