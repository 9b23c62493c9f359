import { constants } from 'node:fs';
import { type FileHandle, open, readFile, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { StoreError, StoreErrorCode } from './errors.js';

/**
 * The state file's journal (`<file>.journal`): one line per persisted
 * batch, appended and fdatasynced before the batch is published, so a
 * write costs what it changes, not the table. A line is
 * `{"put":[<route>,…],"delete":["<domain>",…]}` (each route as a line of
 * the state file, `recordLine`), ended by `\n`. Replayed in order over the
 * state file at start; every line sets routes to absolute values, so
 * replaying a line the state file already holds changes nothing (what makes
 * compaction crash-safe). The file is longer than its lines: zero bytes
 * written ahead of them ({@link JOURNAL_ROOM_BYTES}), where the next lines
 * are written in place; a reader stops at them.
 */
export interface JournalBatch {
  put: unknown[];
  delete: unknown[];
}

/** What {@link parseJournal} read: the complete batches, and the problems of lines that are not one. */
export interface ParsedJournal {
  batches: JournalBatch[];
  /** Complete lines that are not a batch: `line 3: not valid JSON: …`. */
  problems: string[];
  /** Whether the last line was cut short (no `\n`): a write that was never acknowledged, left out. */
  torn: boolean;
}

/**
 * The batches of a journal's text (see {@link JournalBatch}); the zero bytes
 * ahead of the next line are not part of it, and a last line without `\n`
 * is a torn write.
 */
export function parseJournal(text: string): ParsedJournal {
  const lines = journalText(text).split('\n');
  const last = lines.pop() as string;
  const batches: JournalBatch[] = [];
  const problems: string[] = [];
  for (const [i, line] of lines.entries()) {
    if (line === '') continue;
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch (err) {
      problems.push(`line ${i + 1}: not valid JSON: ${(err as Error).message}`);
      continue;
    }
    const batch = json as Partial<JournalBatch> | null;
    if (
      batch === null ||
      typeof batch !== 'object' ||
      !Array.isArray(batch.put) ||
      !Array.isArray(batch.delete) ||
      Object.keys(batch).length !== 2
    ) {
      problems.push(`line ${i + 1}: not {"put":[…],"delete":[…]}`);
      continue;
    }
    batches.push(batch as JournalBatch);
  }
  return { batches, problems, torn: last !== '' };
}

/** A journal's text without the zero bytes written ahead of its next line. */
export function journalText(text: string): string {
  let end = text.length;
  while (end > 0 && text.charCodeAt(end - 1) === 0) end--;
  return end === text.length ? text : text.slice(0, end);
}

/**
 * Zero bytes the journal is extended by ahead of its lines, 256 KiB (~1,700
 * one-route writes). A line written over them changes neither the file's
 * size nor its blocks, so the `fdatasync` that makes a write durable
 * flushes that line's data alone: on ext4 an append (the size grows) waits
 * for a whole journal commit, with every other file's data written since
 * the last one (the certificates being stored, issue 30). Measured on the
 * shared VM, 100,000 names being certified: an append's fdatasync p99 /
 * max 38 / 118 ms, a write in place 22 / 33 ms.
 */
export const JOURNAL_ROOM_BYTES = 256 * 1024;

const PUT = Buffer.from('{"put":[');
const COMMA = Buffer.from(',');

/** One journal line: the routes' state-file lines as they are (UTF-8), the domains deleted. */
export function journalLine(puts: readonly Buffer[], deleted: readonly string[]): Buffer[] {
  const parts: Buffer[] = [PUT];
  for (const [i, line] of puts.entries()) {
    if (i > 0) parts.push(COMMA);
    parts.push(line);
  }
  parts.push(Buffer.from(`],"delete":${JSON.stringify(deleted)}}\n`));
  return parts;
}

/**
 * The journal's writer: writes a batch's line after the last one (one
 * `writev` at its position, one `fdatasync`), over zero bytes written
 * ahead ({@link JOURNAL_ROOM_BYTES}; when they run out, more are written
 * with the line and the file fsynced); a line cut short by an error is
 * zeroed before the next. `rotate` keeps the lines appended after a
 * compaction's cut and drops the rest (the state file now holds them).
 * Appends and rotations are serialised.
 */
export class JournalWriter {
  readonly path: string;
  #file: FileHandle | null = null;
  #bytes = 0;
  /** The file's size (its lines and the zero bytes after them), read when it is opened. */
  #size = 0;
  #chain: Promise<unknown> = Promise.resolve();
  #seq = 0;

  /** `bytes`: the journal's length now (0 after a load, which empties it). */
  constructor(filePath: string, bytes = 0) {
    this.path = filePath;
    this.#bytes = bytes;
  }

  /** The journal's length in bytes (what a compaction cuts at). */
  get bytes(): number {
    return this.#bytes;
  }

  /** Appends one batch's line; resolves once durable. */
  append(parts: readonly Buffer[]): Promise<void> {
    return this.#serial(async () => {
      const at = this.#bytes;
      const length = parts.reduce((sum, part) => sum + part.length, 0);
      try {
        if (this.#file === null) {
          const created = this.#bytes === 0;
          this.#file = await open(this.path, constants.O_RDWR | constants.O_CREAT, 0o600);
          this.#size = (await this.#file.stat()).size;
          // A journal just created: its name must survive a crash too.
          if (created) await syncDirectory(this.path);
        }
        if (at + length <= this.#size) {
          await writeAll(this.#file, [...parts], at);
          await this.#file.datasync();
        } else {
          // Out of room: the line and the next zero bytes, the file's new size made durable with them.
          const room = Buffer.alloc(JOURNAL_ROOM_BYTES);
          await writeAll(this.#file, [...parts, room], at);
          await this.#file.sync();
          this.#size = at + length + room.length;
        }
        this.#bytes = at + length;
      } catch (err) {
        // A line cut short would glue onto the next one: zero it (else reopen and try at the next write).
        await writeAll(this.#file as FileHandle, [Buffer.alloc(length)], at).catch(async () => {
          await this.#file?.close().catch(() => {});
          this.#file = null;
        });
        throw new StoreError(StoreErrorCode.PERSIST_FAILED, `cannot write ${this.path}: ${(err as Error).message}`, {
          cause: err,
        });
      }
    });
  }

  /**
   * Drops the first `cut` bytes (the state file holds them now): the lines
   * after them are written to a new journal that replaces this one
   * atomically. A crash before the rename leaves the whole journal, whose
   * replay over the new state file gives the same table.
   */
  rotate(cut: number): Promise<void> {
    return this.#serial(async () => {
      const text = cut >= this.#bytes ? Buffer.alloc(0) : (await readFile(this.path)).subarray(cut, this.#bytes);
      const tmp = `${path.dirname(this.path)}/${path.basename(this.path, '.journal')}.tmp-journal-${process.pid}-${this.#seq++}`;
      try {
        const next = await open(tmp, 'w', 0o600);
        try {
          await writeAll(next, [text, Buffer.alloc(JOURNAL_ROOM_BYTES)]);
          await next.sync();
        } finally {
          await next.close();
        }
        await rename(tmp, this.path);
        await syncDirectory(this.path);
      } catch (err) {
        await rm(tmp, { force: true });
        throw err;
      }
      await this.#file?.close().catch(() => {});
      this.#file = null;
      this.#bytes = text.length;
    });
  }

  /** Waits for what is in flight and closes the file. */
  close(): Promise<void> {
    return this.#serial(async () => {
      await this.#file?.close().catch(() => {});
      this.#file = null;
    });
  }

  #serial<T>(task: () => Promise<T>): Promise<T> {
    const run = this.#chain.then(task, task);
    this.#chain = run.catch(() => {});
    return run;
  }
}

/** fsyncs the directory of `file` (a create or a rename in it is durable after). */
export async function syncDirectory(file: string): Promise<void> {
  const dir = await open(path.dirname(file), 'r');
  try {
    await dir.sync();
  } finally {
    await dir.close();
  }
}

/** Writes all of `buffers` at `position` (default: the file's position), one `writev` unless it is cut short. */
export async function writeAll(file: FileHandle, buffers: Buffer[], position?: number): Promise<void> {
  let rest = buffers;
  let offset = position;
  while (rest.length > 0) {
    let { bytesWritten } = await file.writev(rest, offset);
    if (offset !== undefined) offset += bytesWritten;
    let at = 0;
    while (at < rest.length && bytesWritten >= (rest[at] as Buffer).length)
      bytesWritten -= (rest[at++] as Buffer).length;
    rest = rest.slice(at);
    if (bytesWritten > 0) rest[0] = (rest[0] as Buffer).subarray(bytesWritten);
  }
}
