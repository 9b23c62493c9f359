import { lowerBound } from './sorted-domains.js';

/**
 * The state file's lines (one API route each, `recordLine`, as UTF-8) in
 * its order, by domain (code-unit order): a lookup is O(log n); setting or
 * deleting a line moves the tail of two arrays (a memmove, ~0.1 ms at
 * 100,000). A write neither sorts, serialises nor encodes the routes it
 * did not change, and allocates little beyond arrays of references (no
 * garbage in proportion to the file for the collector to pause on).
 */
export class StateLines {
  readonly #domains: string[] = [];
  readonly #lines: Buffer[] = [];

  /** `entries`: (domain, line) pairs in any order. */
  constructor(entries: Iterable<readonly [string, Buffer]>) {
    const sorted = [...entries].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    for (const [domain, line] of sorted) {
      this.#domains.push(domain);
      this.#lines.push(line);
    }
  }

  get size(): number {
    return this.#domains.length;
  }

  /** Sets the line of `domain`. */
  set(domain: string, line: Buffer): void {
    const at = this.#position(domain);
    if (this.#domains[at] === domain) {
      this.#lines[at] = line;
    } else {
      this.#domains.splice(at, 0, domain);
      this.#lines.splice(at, 0, line);
    }
  }

  delete(domain: string): void {
    const at = this.#position(domain);
    if (this.#domains[at] !== domain) return;
    this.#domains.splice(at, 1);
    this.#lines.splice(at, 1);
  }

  /** A copy of the lines in order (one copy of an array of references: what a compaction writes). */
  all(): Buffer[] {
    return this.#lines.slice();
  }

  /** The index of the first domain not below `domain`. */
  #position(domain: string): number {
    return lowerBound(this.#domains, domain);
  }
}
