import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import type { LogRoll } from '@proxyd/model';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RollingFile } from './site-log-file.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'site-log-file-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const roll = (over: Partial<LogRoll>): LogRoll => ({
  size_bytes: 1000,
  keep: 10,
  keep_for_ms: 0,
  gzip: false,
  ...over,
});

/** `n` lines of exactly `width` bytes each (newline included), numbered. */
function lines(from: number, n: number, width = 100): string[] {
  return Array.from({ length: n }, (_, i) => `${String(from + i).padStart(6, '0')} ${'x'.repeat(width - 8)}\n`);
}

async function rolledFiles(): Promise<string[]> {
  return (await readdir(dir)).filter((f) => f !== 'access.log').sort();
}

async function contents(file: string): Promise<string> {
  const raw = await readFile(path.join(dir, file));
  return file.endsWith('.gz') ? gunzipSync(raw).toString() : raw.toString();
}

describe('RollingFile', () => {
  it('rolls before the lines that would pass roll_size, under Caddy names, and loses or splits no line', async () => {
    let now = Date.parse('2026-11-25T02:47:32.123Z');
    const file = await RollingFile.open(path.join(dir, 'access.log'), roll({}), { now: () => now++ });
    const written = lines(0, 35);
    // In batches of 3 (300 bytes): 10 lines fit a 1000-byte file, so batches straddle the limit.
    for (let i = 0; i < written.length; i += 3) file.write(written.slice(i, i + 3).join(''));
    await file.close();
    const rolled = await rolledFiles();
    expect(rolled).toEqual([
      'access-2026-11-25T02-47-32.123.log',
      'access-2026-11-25T02-47-32.124.log',
      'access-2026-11-25T02-47-32.125.log',
    ]);
    const all = [...rolled, 'access.log'];
    const texts = await Promise.all(all.map(contents));
    for (const text of texts.slice(0, -1)) expect(Buffer.byteLength(text)).toBe(1000);
    expect(texts.join('')).toBe(written.join(''));
    expect(await contents('access.log')).toBe(written.slice(30).join(''));
  });

  it('keeps the newest roll_keep rolled files, counting those rolled before it opened', async () => {
    let now = Date.parse('2026-01-01T00:00:00.000Z');
    // Rolled by an earlier run; and a file of another name that is never touched.
    await writeFile(path.join(dir, 'access-2025-12-31T00-00-00.000.log'), 'old\n');
    await writeFile(path.join(dir, 'other-2025-12-31T00-00-00.000.log'), 'other\n');
    const file = await RollingFile.open(path.join(dir, 'access.log'), roll({ keep: 2 }), { now: () => (now += 1000) });
    for (const line of lines(0, 50)) file.write(line);
    await file.close();
    const rolled = await rolledFiles();
    expect(rolled).toEqual([
      'access-2026-01-01T00-00-03.000.log',
      'access-2026-01-01T00-00-04.000.log',
      'other-2025-12-31T00-00-00.000.log',
    ]);
    expect(await contents('access-2026-01-01T00-00-04.000.log')).toBe(lines(30, 10).join(''));
    expect(await contents('access.log')).toBe(lines(40, 10).join(''));
  });

  it('deletes rolled files older than roll_keep_for', async () => {
    let now = Date.parse('2026-03-01T00:00:00.000Z');
    await writeFile(path.join(dir, 'access-2026-01-01T00-00-00.000.log.gz'), 'stale');
    await writeFile(path.join(dir, 'access-2026-02-28T00-00-00.000.log.gz'), 'fresh');
    const day = 86_400_000;
    const file = await RollingFile.open(path.join(dir, 'access.log'), roll({ keep: 0, keep_for_ms: 30 * day }), {
      now: () => now,
    });
    file.write(lines(0, 11).join(''));
    await file.close();
    expect(await rolledFiles()).toEqual([
      'access-2026-02-28T00-00-00.000.log.gz',
      'access-2026-03-01T00-00-00.000.log',
    ]);
    now += 31 * day;
    const again = await RollingFile.open(path.join(dir, 'access.log'), roll({ keep: 0, keep_for_ms: 30 * day }), {
      now: () => now,
    });
    again.write(lines(11, 10).join(''));
    await again.close();
    expect(await rolledFiles()).toEqual(['access-2026-04-01T00-00-00.000.log']);
  });

  it('gzips rolled files unless told not to', async () => {
    const file = await RollingFile.open(path.join(dir, 'access.log'), roll({ gzip: true }));
    for (const line of lines(0, 15)) file.write(line);
    await file.close();
    const rolled = await rolledFiles();
    expect(rolled).toHaveLength(1);
    expect(rolled[0]).toMatch(/^access-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{3}\.log\.gz$/);
    expect(await contents(rolled[0] as string)).toBe(lines(0, 10).join(''));
    expect(await contents('access.log')).toBe(lines(10, 5).join(''));
  });

  it('puts a line longer than roll_size in a file of its own, whole', async () => {
    let now = 0;
    const file = await RollingFile.open(path.join(dir, 'access.log'), roll({}), { now: () => (now += 1000) });
    const long = `${'L'.repeat(2500)}\n`;
    file.write(`short\n${long}after\n`);
    await file.close();
    const texts = await Promise.all([...(await rolledFiles()), 'access.log'].map(contents));
    expect(texts).toEqual(['short\n', long, 'after\n']);
  });

  it('appends to an existing file and counts its size', async () => {
    await writeFile(path.join(dir, 'access.log'), lines(0, 9).join(''));
    const file = await RollingFile.open(path.join(dir, 'access.log'), roll({}));
    file.write(lines(9, 2).join(''));
    await file.close();
    const rolled = await rolledFiles();
    expect(rolled).toHaveLength(1);
    expect(await contents(rolled[0] as string)).toBe(lines(0, 10).join(''));
    expect(await contents('access.log')).toBe(lines(10, 1).join(''));
  });

  it('never rolls with roll_disabled (roll null)', async () => {
    const file = await RollingFile.open(path.join(dir, 'access.log'), null);
    for (const line of lines(0, 30)) file.write(line);
    await file.close();
    expect(await rolledFiles()).toEqual([]);
    expect(await contents('access.log')).toBe(lines(0, 30).join(''));
  });

  it('creates missing directories, and rejects with the OS error when the path cannot be a file', async () => {
    const nested = await RollingFile.open(path.join(dir, 'a', 'b', 'access.log'), null);
    nested.write('x\n');
    await nested.close();
    expect(await readFile(path.join(dir, 'a', 'b', 'access.log'), 'utf8')).toBe('x\n');
    await writeFile(path.join(dir, 'plain'), '');
    await expect(RollingFile.open(path.join(dir, 'plain', 'access.log'), null)).rejects.toThrow(/EEXIST|ENOTDIR/);
  });
});
