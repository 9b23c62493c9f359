/** Default cap on one event line, bytes: a container with many labels makes ~10 KiB; 1 MiB is far past any real event. */
export const DEFAULT_MAX_LINE_BYTES = 1024 * 1024;

/** What {@link LineSplitter.push} found in a chunk. */
export interface SplitLines {
  /** Complete lines, without the newline, in order; empty lines are left out. */
  lines: string[];
  /** Lines dropped because they were longer than the cap, by their length in bytes (at least the cap). */
  dropped: number[];
}

/**
 * Splits the event stream into lines. The runtime writes one JSON object
 * per line (`\n`), but a network chunk may end inside an object or hold
 * several. The unfinished tail is buffered up to `maxLineBytes`; a line
 * that grows past it is dropped (reported in `dropped`) and skipped up to
 * its newline, so a runaway line costs at most the cap in memory and never
 * ends the stream.
 */
export class LineSplitter {
  readonly #max: number;
  #parts: Buffer[] = [];
  #size = 0;
  /** Bytes of an over-long line seen so far; -1 when not skipping one. */
  #skipping = -1;

  /** @param maxLineBytes longest line kept, bytes (default {@link DEFAULT_MAX_LINE_BYTES}). */
  constructor(maxLineBytes = DEFAULT_MAX_LINE_BYTES) {
    this.#max = maxLineBytes;
  }

  /** Feeds one chunk. */
  push(chunk: Buffer): SplitLines {
    const out: SplitLines = { lines: [], dropped: [] };
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(0x0a, start);
      const end = nl < 0 ? chunk.length : nl;
      const piece = chunk.subarray(start, end);
      if (this.#skipping >= 0) {
        this.#skipping += piece.length;
      } else if (this.#size + piece.length > this.#max) {
        this.#skipping = this.#size + piece.length;
        this.#parts = [];
        this.#size = 0;
      } else if (piece.length > 0) {
        this.#parts.push(piece);
        this.#size += piece.length;
      }
      if (nl < 0) break;
      if (this.#skipping >= 0) {
        out.dropped.push(this.#skipping);
        this.#skipping = -1;
      } else {
        this.#flushLine(out);
      }
      start = nl + 1;
    }
    // Keep no reference to the caller's chunk beyond the bytes we need.
    if (this.#parts.length > 0 && this.#parts.at(-1)?.buffer === chunk.buffer) {
      this.#parts = [Buffer.concat(this.#parts)];
    }
    return out;
  }

  /** Bytes of the unfinished line held now. */
  get pending(): number {
    return this.#size;
  }

  #flushLine(out: SplitLines): void {
    const line = Buffer.concat(this.#parts, this.#size).toString('utf8').trim();
    this.#parts = [];
    this.#size = 0;
    if (line.length > 0) out.lines.push(line);
  }
}
