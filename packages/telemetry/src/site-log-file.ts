import { createReadStream, createWriteStream } from 'node:fs';
import { type FileHandle, mkdir, open, readdir, rename, unlink } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import type { LogRoll } from '@proxyd/model';

const NEWLINE = 0x0a;

/** Caddy's (lumberjack's) rolled-file time stamp: `2026-11-25T02-47-32.123`, UTC. */
function stampOf(ms: number): string {
  return new Date(ms).toISOString().slice(0, 23).replaceAll(':', '-');
}

function msOfStamp(stamp: string): number {
  const iso = `${stamp.slice(0, 13)}:${stamp.slice(14, 16)}:${stamp.slice(17)}Z`;
  return Date.parse(iso);
}

/** Options of {@link RollingFile.open}. */
export interface RollingFileOptions {
  /** The clock, ms since the epoch (tests move it); default `Date.now`. */
  now?: () => number;
  /** Called when a write, a roll, a gzip or a removal fails (the file keeps taking lines). */
  onError?: (err: Error, what: string) => void;
}

/**
 * An append-only log file that rolls by size, after Caddy's file writer
 * (lumberjack): the live file keeps its path (`tail -f` works); when the
 * next lines would take it past `roll.size_bytes`, it is renamed
 * `<name>-<UTC time>.<ext>` beside it (`access-2026-11-25T02-47-32.123.log`),
 * gzipped to `….log.gz` unless `roll.gzip` is false, and a fresh file is
 * opened. Rolled files past the newest `roll.keep` (0: no count limit) or
 * older than `roll.keep_for_ms` (0: no age limit) are deleted; they are
 * found by name in the directory, so files rolled before a restart count.
 *
 * Lines are never split: a roll happens between two lines, and a line
 * longer than `size_bytes` goes whole into a file of its own. One writer
 * per file (the daemon's one process that owns it); writes go out in the
 * order they were given, in batches, off the caller's path.
 */
export class RollingFile {
  readonly path: string;
  #roll: LogRoll | null;
  /** Null after a failed reopen: the next write tries again. */
  #fh: FileHandle | null;
  #size: number;
  #queue: Buffer[] = [];
  #queued = 0;
  #writing: Promise<void> | null = null;
  #after: Promise<void> = Promise.resolve();
  #lastStamp = 0;
  #closed = false;
  readonly #now: () => number;
  readonly #onError: (err: Error, what: string) => void;

  private constructor(file: string, roll: LogRoll | null, fh: FileHandle, size: number, options: RollingFileOptions) {
    this.path = file;
    this.#roll = roll;
    this.#fh = fh;
    this.#size = size;
    this.#now = options.now ?? Date.now;
    this.#onError = options.onError ?? (() => {});
  }

  /**
   * Opens (creating it and its directory, mode 0600 as Caddy's) the file at
   * `file` for appending. Rejects with the OS error when it cannot.
   */
  static async open(file: string, roll: LogRoll | null, options: RollingFileOptions = {}): Promise<RollingFile> {
    const absolute = path.resolve(file);
    await mkdir(path.dirname(absolute), { recursive: true, mode: 0o755 });
    const fh = await open(absolute, 'a', 0o600);
    const { size } = await fh.stat();
    return new RollingFile(absolute, roll, fh, size, options);
  }

  /** How the file rolls from the next write on (a reload may change it). */
  setRoll(roll: LogRoll | null): void {
    this.#roll = roll;
  }

  /** Bytes queued, not yet written. */
  get pending(): number {
    return this.#queued;
  }

  /** Appends `text` (whole lines, each ending in `\n`) after what was queued before. */
  write(text: string | Buffer): void {
    if (this.#closed) return;
    const buf = typeof text === 'string' ? Buffer.from(text) : text;
    if (buf.length === 0) return;
    this.#queue.push(buf);
    this.#queued += buf.length;
    this.#writing ??= this.#drain();
  }

  /** Resolves when everything written so far is in the file (and rolled files are gzipped and pruned). */
  async flush(): Promise<void> {
    while (this.#writing !== null) await this.#writing;
    await this.#after;
  }

  /** Flushes, then closes the file; later writes are dropped. */
  async close(): Promise<void> {
    await this.flush();
    this.#closed = true;
    await this.#fh?.close();
  }

  async #drain(): Promise<void> {
    try {
      while (this.#queue.length > 0) {
        const batch = this.#queue.length === 1 ? (this.#queue[0] as Buffer) : Buffer.concat(this.#queue);
        this.#queue = [];
        this.#queued = 0;
        await this.#writeRolling(batch);
      }
    } finally {
      this.#writing = null;
    }
  }

  async #writeRolling(batch: Buffer): Promise<void> {
    let rest = batch;
    while (rest.length > 0) {
      const roll = this.#roll;
      if (roll === null || this.#size + rest.length <= roll.size_bytes) {
        await this.#append(rest);
        return;
      }
      const room = roll.size_bytes - this.#size;
      // The lines that still fit (up to the last newline within the room); a fresh file takes at least one line.
      let cut = room > 0 ? rest.lastIndexOf(NEWLINE, room - 1) + 1 : 0;
      if (cut === 0 && this.#size === 0) cut = rest.indexOf(NEWLINE) + 1 || rest.length;
      if (cut > 0) {
        await this.#append(rest.subarray(0, cut));
        rest = rest.subarray(cut);
      }
      if (rest.length > 0) await this.#rollNow();
    }
  }

  async #append(buf: Buffer): Promise<void> {
    let offset = 0;
    try {
      this.#fh ??= await this.#reopen();
      while (offset < buf.length) {
        const { bytesWritten } = await this.#fh.write(buf, offset, buf.length - offset);
        offset += bytesWritten;
      }
    } catch (err) {
      this.#onError(err as Error, `write to ${this.path}`);
    }
    this.#size += offset;
  }

  async #reopen(): Promise<FileHandle> {
    const fh = await open(this.path, 'a', 0o600);
    this.#size = (await fh.stat()).size;
    return fh;
  }

  async #rollNow(): Promise<void> {
    let stamp = this.#now();
    if (stamp <= this.#lastStamp) stamp = this.#lastStamp + 1;
    this.#lastStamp = stamp;
    const { dir, name, ext } = path.parse(this.path);
    const rolled = path.join(dir, `${name}-${stampOf(stamp)}${ext}`);
    await this.#fh?.close().catch(() => {});
    this.#fh = null;
    this.#size = 0;
    let renamed = true;
    try {
      await rename(this.path, rolled);
    } catch (err) {
      // Moved away by someone else (logrotate): nothing to roll, the fresh file starts below.
      renamed = false;
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') this.#onError(err as Error, `roll ${this.path}`);
    }
    try {
      this.#fh = await this.#reopen();
    } catch (err) {
      // Lines are dropped (and reported) until the file opens again: each write tries.
      this.#onError(err as Error, `reopen ${this.path}`);
    }
    const roll = this.#roll;
    if (roll === null) return;
    // Gzip and prune in order, behind the writes: a slow gzip never holds lines back.
    this.#after = this.#after.then(async () => {
      if (renamed && roll.gzip) await this.#gzip(rolled);
      await this.#prune(roll);
    });
  }

  async #gzip(file: string): Promise<void> {
    try {
      await pipeline(createReadStream(file), createGzip(), createWriteStream(`${file}.gz`, { mode: 0o600 }));
      await unlink(file);
    } catch (err) {
      this.#onError(err as Error, `gzip ${file}`);
      await unlink(`${file}.gz`).catch(() => {});
    }
  }

  /** Deletes rolled files past `keep` (newest first) or older than `keep_for_ms`. */
  async #prune(roll: LogRoll): Promise<void> {
    if (roll.keep === 0 && roll.keep_for_ms === 0) return;
    const { dir, name, ext } = path.parse(this.path);
    const pattern = new RegExp(
      `^${escapeRegExp(name)}-(\\d{4}-\\d\\d-\\d\\dT\\d\\d-\\d\\d-\\d\\d\\.\\d{3})${escapeRegExp(ext)}(\\.gz)?$`,
    );
    let names: string[];
    try {
      names = await readdir(dir);
    } catch (err) {
      this.#onError(err as Error, `list ${dir}`);
      return;
    }
    const rolled = names
      .map((file) => ({ file, m: pattern.exec(file) }))
      .filter((f): f is { file: string; m: RegExpExecArray } => f.m !== null)
      .map(({ file, m }) => ({ file, at: msOfStamp(m[1] as string) }))
      .sort((a, b) => b.at - a.at);
    const oldest = roll.keep_for_ms === 0 ? Number.NEGATIVE_INFINITY : this.#now() - roll.keep_for_ms;
    for (let i = 0; i < rolled.length; i++) {
      const f = rolled[i] as { file: string; at: number };
      if ((roll.keep !== 0 && i >= roll.keep) || f.at < oldest) {
        await unlink(path.join(dir, f.file)).catch((err: Error) => this.#onError(err, `remove ${f.file}`));
      }
    }
  }
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
