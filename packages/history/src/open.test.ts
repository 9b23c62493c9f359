import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { openHistory } from './open.js';
import { DAY, HOUR, MINUTE, rollup, T0 } from './rollups.test-helpers.js';

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'history-open-'));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function recorder() {
  const errors: Array<{ fields: Record<string, unknown>; message: string }> = [];
  return {
    errors,
    log: { error: (fields: Record<string, unknown>, message: string) => errors.push({ fields, message }) },
  };
}

describe('openHistory: a database that fails its check is set aside, never fatal', () => {
  it('creates a new file, mode 0600, WAL, checked', async () => {
    const file = path.join(tempDir(), 'history.db');
    const store = await openHistory({ file });
    expect(store.setAside).toBeNull();
    expect(statSync(file).mode & 0o777).toBe(0o600);
    store.close();
    const db = new DatabaseSync(file);
    expect(db.prepare('PRAGMA journal_mode').get()).toEqual({ journal_mode: 'wal' });
    expect(db.prepare('PRAGMA auto_vacuum').get()).toEqual({ auto_vacuum: 2 });
    db.close();
  });

  it('a file that is not a database: moved to history.db.corrupt-<ts>, an error logged, a new one started', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'history.db');
    writeFileSync(file, 'this is not a database\n'.repeat(300));
    const { errors, log } = recorder();
    const store = await openHistory({ file, log, now: () => 1_800_000_000_000 });
    expect(store.setAside?.copy).toBe(`${file}.corrupt-1800000000000`);
    expect(errors).toHaveLength(1);
    expect(errors[0]?.message).toMatch(/history database failed its check .*moved aside/);
    expect(readdirSync(dir).sort()).toEqual([
      'history.db',
      'history.db-shm',
      'history.db-wal',
      'history.db.corrupt-1800000000000',
    ]);
    store.write([rollup('a.test', T0, { pageViews: 1 })], T0 + MINUTE);
    expect(store.totals('a.test', { from: T0, to: T0 + MINUTE }).page_views).toBe(1);
    store.close();
  });

  it('a database with a damaged page: quick_check finds it, the file is set aside', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'history.db');
    const store = await openHistory({ file, now: () => T0 + DAY });
    for (let h = 0; h < 24; h++) {
      const pages = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`/page-${h}-${i}`, 1]));
      store.write([rollup('a.test', T0 + h * HOUR, { pageViews: 100, breakdowns: { pages } })]);
    }
    store.close();
    const size = statSync(file).size;
    expect(size).toBeGreaterThan(40 * 4096);
    // Scribble over a b-tree page in the middle of the file (not its header).
    const handle = await open(file, 'r+');
    await handle.write(Buffer.alloc(4096, 0x5a), 0, 4096, 20 * 4096);
    await handle.close();
    const { errors, log } = recorder();
    const again = await openHistory({ file, log });
    expect(again.setAside).not.toBeNull();
    expect(errors[0]?.fields.reason).toMatch(/quick_check|malformed/);
    expect(existsSync(again.setAside?.copy as string)).toBe(true);
    expect(again.domains()).toEqual([]);
    again.close();
  });

  it('a database of another schema version is set aside too', async () => {
    const file = path.join(tempDir(), 'history.db');
    const db = new DatabaseSync(file);
    db.exec('PRAGMA user_version = 99; CREATE TABLE x (a)');
    db.close();
    const { errors, log } = recorder();
    const store = await openHistory({ file, log });
    expect(errors[0]?.fields.reason).toBe('schema version 99, this proxyd reads 1');
    store.close();
  });

  it('refuses options out of range', async () => {
    const file = path.join(tempDir(), 'history.db');
    await expect(openHistory({ file, maxBytes: 10 })).rejects.toThrow(/invalid history option: maxBytes/);
    await expect(openHistory({ file, retention: { minute: MINUTE } })).rejects.toThrow(/minute retention/);
  });
});

describe('crash safety: one transaction per flush', () => {
  it('the files as a kill -9 in the middle of a flush leaves them open clean, every earlier flush in them', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'history.db');
    const crash = path.join(dir, 'crash');
    let now = T0 + 10 * MINUTE;
    const store = await openHistory({ file, now: () => now });
    for (let m = 0; m < 5; m++)
      store.write([rollup('a.test', T0 + m * MINUTE, { pageViews: 10, visitors: [`v${m}`] })]);
    // The sixth flush is cut half-way: its domains are written, then the files are copied as they are.
    const cut = rollup('a.test', T0 + 5 * MINUTE, { pageViews: 10 });
    const second = rollup('b.test', T0 + 5 * MINUTE, { pageViews: 10 });
    Object.defineProperty(second, 'breakdowns', {
      get() {
        rmSync(crash, { recursive: true, force: true });
        dirs.push(crash);
        mkdirSync(crash);
        for (const suffix of ['', '-wal']) {
          if (existsSync(file + suffix)) copyFileSync(file + suffix, path.join(crash, `history.db${suffix}`));
        }
        return cut.breakdowns;
      },
    });
    now += MINUTE;
    store.write([cut, second]);
    store.close();
    const { errors, log } = recorder();
    const recovered = await openHistory({ file: path.join(crash, 'history.db'), log, now: () => now });
    expect(errors).toEqual([]);
    expect(recovered.setAside).toBeNull();
    const minutes = recovered.timeseries('a.test', { from: T0, to: T0 + 6 * MINUTE }, 'minute');
    expect(minutes.map((p) => p.page_views)).toEqual([10, 10, 10, 10, 10, 0]);
    expect(recovered.totals('a.test', { from: T0, to: T0 + HOUR }).visitors).toBe(5);
    expect(recovered.domains()).toEqual(['a.test']);
    recovered.close();
  });
});
