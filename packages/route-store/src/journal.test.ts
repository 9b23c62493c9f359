import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { JOURNAL_ROOM_BYTES, journalText, parseJournal } from './journal.js';
import { RouteStore } from './route-store.js';
import { COMPACT_MIN_BYTES, recordLine, STATE_FORMAT, StateFile } from './state-file.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'proxyd-journal-'));
});
afterEach(() => rm(dir, { recursive: true, force: true }));

const record = (domain: string, port = 1, source: string | null = null) => ({
  domain,
  upstream: `127.0.0.1:${port}`,
  tls: false,
  source,
});
const line = (r: ReturnType<typeof record>) => Buffer.from(recordLine(r));
const stateText = (records: ReturnType<typeof record>[]) =>
  `{"format":"${STATE_FORMAT}","routes":[\n${records.map((r) => recordLine(r)).join(',\n')}\n]}\n`;

describe('the state file journal (issue 30: a write costs what it changes)', () => {
  it('a write appends one line to the journal and leaves the state file as it is', async () => {
    const file = path.join(dir, 'routes.json');
    const preloaded = Array.from({ length: 500 }, (_, i) => record(`s${String(i).padStart(3, '0')}.test`));
    await writeFile(file, stateText(preloaded));
    const { store } = await RouteStore.open({ stateFile: file });
    const before = await stat(file);
    const text = await readFile(file, 'utf8');
    await store.upsert({ domain: 'new.test', upstream: '127.0.0.1:9', tls: false, source: null });
    await store.remove('s007.test');
    await store.applySnapshot({ source: 'ctl', routes: [{ domain: 's001.test', upstream: '127.0.0.1:8', tls: true }] });
    // Not rewritten: the same inode (an atomic rewrite renames a new file over it), the same bytes.
    const after = await stat(file);
    expect(after.ino).toBe(before.ino);
    expect(await readFile(file, 'utf8')).toBe(text);
    const journal = journalText(await readFile(`${file}.journal`, 'utf8')).split('\n');
    expect(journal.pop()).toBe('');
    expect(journal.map((l) => JSON.parse(l))).toEqual([
      { put: [record('new.test', 9)], delete: [] },
      { put: [], delete: ['s007.test'] },
      { put: [{ ...record('s001.test', 8, 'ctl'), tls: true }], delete: [] },
    ]);
    await store.close();
    // The next start replays the journal, folds it into the file and starts with none.
    const again = await RouteStore.open({ stateFile: file });
    expect(again.recovered).toBeNull();
    expect(again.store.list()).toHaveLength(500);
    expect(again.store.list().find((r) => r.domain === 's001.test')).toMatchObject({ source: 'ctl', tls: true });
    expect(again.store.list().some((r) => r.domain === 's007.test')).toBe(false);
    expect(await readdir(dir)).toEqual(['routes.json']);
    const folded = JSON.parse(await readFile(file, 'utf8')) as { routes: { domain: string }[] };
    expect(folded.routes).toHaveLength(500);
    expect(folded.routes.map((r) => r.domain)).toEqual(folded.routes.map((r) => r.domain).sort());
  });

  it('a crash mid-append: the torn last line (never acknowledged) is left out, the rest replayed', async () => {
    const file = path.join(dir, 'routes.json');
    await writeFile(file, stateText([record('a.test'), record('b.test')]));
    const complete = `{"put":[${recordLine(record('c.test', 3))}],"delete":["a.test"]}\n`;
    const torn = `{"put":[${recordLine(record('d.test', 4))}],"del`;
    await writeFile(`${file}.journal`, complete + torn);
    const { records, recovered } = await new StateFile(file).load();
    expect(recovered).toBeNull();
    expect(records).toEqual([record('b.test'), record('c.test', 3)]);
    // Folded: a write after this start does not glue onto the torn bytes.
    expect(await readdir(dir)).toEqual(['routes.json']);
    const { store } = await RouteStore.open({ stateFile: file });
    await store.upsert({ domain: 'e.test', upstream: '127.0.0.1:5', tls: false, source: null });
    await store.close();
    expect((await new StateFile(file).load()).records.map((r) => r.domain)).toEqual(['b.test', 'c.test', 'e.test']);
  });

  it('an unusable journal line or route is left out and reported; a copy of the journal is kept', async () => {
    const file = path.join(dir, 'routes.json');
    const lines = [
      `{"put":[${recordLine(record('a.test'))}],"delete":[]}`,
      'not json',
      `{"put":[{"domain":"A..b","upstream":"x:1","tls":false,"source":null}],"delete":[]}`,
      `{"put":[${recordLine(record('b.test'))}],"delete":[]}`,
    ];
    await writeFile(`${file}.journal`, `${lines.join('\n')}\n`);
    const { records, recovered } = await new StateFile(file).load();
    expect(records.map((r) => r.domain)).toEqual(['a.test', 'b.test']);
    expect(recovered?.reason).toMatch(/journal: 2 unusable entries left out: line 2: not valid JSON.*batch 2: domain/);
    expect(recovered?.kept).toBe(2);
    expect(await readFile(recovered?.copy as string, 'utf8')).toBe(`${lines.join('\n')}\n`);
  });

  it('a compaction keeps what was appended during it, and a crash before the journal is cut replays to the same table', async () => {
    const file = new StateFile(path.join(dir, 'routes.json'));
    await file.load();
    await file.append([line(record('a.test'))], []);
    await file.append([line(record('b.test')), line(record('c.test'))], []);
    await file.append([], ['c.test']);
    const journalBefore = await readFile(file.journal.path, 'utf8');
    // A crash after the new file is renamed in, before the journal is cut: both on disk.
    await writeFile(file.path, stateText([record('a.test'), record('b.test')]));
    expect((await new StateFile(file.path).load()).records.map((r) => r.domain)).toEqual(['a.test', 'b.test']);
    // Put the journal back (the load above folded it) and compact while a write comes in.
    await writeFile(file.journal.path, journalBefore);
    const running = new StateFile(file.path);
    await running.load();
    await running.append([line(record('a.test')), line(record('b.test'))], []);
    const compaction = running.compact([line(record('a.test')), line(record('b.test'))]);
    await running.append([line(record('d.test', 4))], ['a.test']);
    await compaction;
    expect(journalText(await readFile(running.journal.path, 'utf8'))).toBe(
      `{"put":[${recordLine(record('d.test', 4))}],"delete":["a.test"]}\n`,
    );
    await running.close();
    expect((await new StateFile(file.path).load()).records).toEqual([record('b.test'), record('d.test', 4)]);
  });

  it('the store compacts in the background once the journal outgrows the file', async () => {
    const file = path.join(dir, 'routes.json');
    const { store } = await RouteStore.open({ stateFile: file });
    const routes = (port: number) =>
      Array.from({ length: 2000 }, (_, i) => ({
        domain: `r${i}.example.test`,
        upstream: `127.0.0.1:${port}`,
        tls: false,
      }));
    // Each snapshot journals ~150 KB; the file (after the first compaction) is as big: a few compactions run.
    for (let port = 1; port <= 12; port++) await store.applySnapshot({ source: 'ctl', routes: routes(port) });
    await store.close();
    const journal = journalText(await readFile(`${file}.journal`, 'utf8'));
    // ~1.8 MB were journaled; the file holds the table and the journal only what came after the compaction.
    expect(journal.length).toBeLessThan(COMPACT_MIN_BYTES);
    const content = JSON.parse(await readFile(file, 'utf8')) as { routes: { upstream: string }[] };
    expect(content.routes).toHaveLength(2000);
    const again = await RouteStore.open({ stateFile: file });
    expect(again.store.list().every((r) => r.upstream === '127.0.0.1:12')).toBe(true);
    expect(again.store.list()).toHaveLength(2000);
  });

  it('a write lands over zero bytes written ahead: the journal keeps its size and blocks while they last (issue 30)', async () => {
    // An append grows the file, and on ext4 its fdatasync then waits for a whole journal commit (every other
    // file's data written since): a write in place flushes its own line only.
    const file = new StateFile(path.join(dir, 'routes.json'));
    await file.load();
    await file.append([line(record('a.test'))], []);
    const first = await stat(file.journal.path);
    const lineBytes = Buffer.byteLength(`{"put":[${recordLine(record('a.test'))}],"delete":[]}\n`);
    expect(first.size).toBe(lineBytes + JOURNAL_ROOM_BYTES);
    await file.append([line(record('b.test'))], []);
    await file.append([], ['a.test']);
    const later = await stat(file.journal.path);
    expect({ ino: later.ino, size: later.size }).toEqual({ ino: first.ino, size: first.size });
    expect(file.journal.bytes).toBeLessThan(first.size);
    await file.close();
    expect((await new StateFile(file.path).load()).records).toEqual([record('b.test')]);
  });

  it('more lines than the room: the journal grows by another room, and every line replays', async () => {
    const file = new StateFile(path.join(dir, 'routes.json'));
    await file.load();
    // 20 routes a line (~2.4 KB): two and a half rooms in ~270 writes.
    const batch = (n: number) => Array.from({ length: 20 }, (_, i) => record(`r${n}-${i}.test`, n + 1));
    const count = Math.ceil((2.5 * JOURNAL_ROOM_BYTES) / (20 * line(record('r100-10.test', 101)).length));
    for (let n = 0; n < count; n++) await file.append(batch(n).map(line), []);
    const size = (await stat(file.journal.path)).size;
    expect(file.journal.bytes).toBeGreaterThan(2 * JOURNAL_ROOM_BYTES);
    expect(size).toBeGreaterThan(file.journal.bytes);
    expect(size).toBeLessThanOrEqual(file.journal.bytes + JOURNAL_ROOM_BYTES);
    await file.close();
    const { records, recovered } = await new StateFile(file.path).load();
    expect(recovered).toBeNull();
    expect(records).toHaveLength(20 * count);
    expect(records).toContainEqual(record(`r${count - 1}-19.test`, count));
  });

  it('the zero bytes after the last line are not a line: a torn write is the last line cut short before them', () => {
    const complete = `{"put":[${recordLine(record('c.test', 3))}],"delete":[]}\n`;
    const torn = `{"put":[${recordLine(record('d.test', 4))}],"del`;
    const room = '\0'.repeat(4096);
    expect(parseJournal(complete + room)).toEqual({
      batches: [{ put: [record('c.test', 3)], delete: [] }],
      problems: [],
      torn: false,
    });
    expect(parseJournal(complete + torn + room)).toEqual({
      batches: [{ put: [record('c.test', 3)], delete: [] }],
      problems: [],
      torn: true,
    });
  });
});
