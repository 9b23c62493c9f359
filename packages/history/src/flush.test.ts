import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { emptyRollup, type MinuteRollup } from '@proxyd/analytics';
import { defaultGlobalOptions, defaultHistoryOptions } from '@proxyd/model';
import { afterEach, describe, expect, it } from 'vitest';
import { FLUSH_ENV, flushPeriodFromEnv, startHistory } from './flush.js';
import { openHistory } from './open.js';

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});
async function stateDir(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'proxyd-history-'));
  dirs.push(dir);
  return dir;
}

function recordingLogger() {
  const lines: Array<{ level: string; fields: Record<string, unknown>; msg: string }> = [];
  const at = (level: string) => (fields: Record<string, unknown>, msg: string) => lines.push({ level, fields, msg });
  return {
    lines,
    logger: { error: at('error'), warn: at('warn'), info: at('info'), debug: at('debug') },
  };
}

const config = (history = defaultHistoryOptions()) => ({ global: { ...defaultGlobalOptions(), history }, sites: [] });
const T = Date.UTC(2026, 10, 20, 10, 0);

function views(domain: string, minute: number, n: number): MinuteRollup {
  const r = emptyRollup(domain, minute);
  r.page_views = n;
  r.requests = n;
  return r;
}

/** A source over a list of rollups: drain hands over those complete before `now`. */
function listSource(rollups: MinuteRollup[]) {
  const salts: Buffer[] = [];
  const drains: number[] = [];
  return {
    salts,
    drains,
    drain(now: number) {
      drains.push(now);
      const done = rollups.filter((r) => r.minute + 60_000 <= now);
      for (const r of done) rollups.splice(rollups.indexOf(r), 1);
      return done;
    },
    setSalt(salt: Buffer) {
      salts.push(salt);
    },
  };
}

describe('startHistory', () => {
  it('history off: no database', async () => {
    const dir = await stateDir();
    const { logger } = recordingLogger();
    expect(
      await startHistory(config({ ...defaultHistoryOptions(), enabled: false }), { stateDir: dir, logger }),
    ).toBeNull();
    expect(await readdir(dir)).toEqual([]);
  });

  it('a state dir where no database can be made: history off with an error line, the daemon starts', async () => {
    const dir = await stateDir();
    const { logger, lines } = recordingLogger();
    // The "state dir" is a file: no database can be made in it.
    const file = path.join(dir, 'not-a-dir');
    await writeFile(file, '');
    expect(await startHistory(config(), { stateDir: file, logger })).toBeNull();
    expect(lines.filter((l) => l.level === 'error').at(-1)?.msg).toBe(
      'history is off: its database cannot be opened (GET /stats answers 501)',
    );
  });

  it('gives the day’s salt at attach, writes the complete minutes at a flush, and everything at close', async () => {
    const dir = await stateDir();
    const { logger } = recordingLogger();
    let now = T + 30_000;
    const history = await startHistory(config(), { stateDir: dir, logger, now: () => now });
    if (history === null) throw new Error('history is on by default');
    const source = listSource([views('a.test', T - 60_000, 3), views('a.test', T, 2)]);
    await history.attach(source);
    expect(source.salts).toHaveLength(1);
    expect(source.salts[0]).toEqual(history.visitorSalt());
    await history.flush();
    const range = { from: T - 60_000, to: T + 60_000 };
    expect(history.store.totals('a.test', range).page_views).toBe(3);
    // A draining worker's last rollups arrive on their own: written with the next flush.
    history.accept([views('b.test', T, 5)]);
    now += 60_000;
    await history.close();
    expect(source.drains.at(-1)).toBe(Number.MAX_SAFE_INTEGER);
    const reopened = await openHistory({ file: path.join(dir, 'history.db'), now: () => now });
    expect(reopened.totals('a.test', range).page_views).toBe(5);
    expect(reopened.totals('b.test', range).page_views).toBe(5);
    reopened.close();
  });

  it('a write that fails keeps its rollups for the next flush, with an error line', async () => {
    const dir = await stateDir();
    const { logger, lines } = recordingLogger();
    const history = await startHistory(config(), { stateDir: dir, logger, now: () => T + 90_000 });
    if (history === null) throw new Error('history is on by default');
    const broken = views('a.test', T - 60_000, 1) as unknown as Record<string, unknown>;
    broken.breakdowns = null;
    await history.attach(listSource([broken as unknown as MinuteRollup]));
    await history.flush();
    expect(lines.filter((l) => l.level === 'error').map((l) => [l.msg, l.fields.kept])).toEqual([
      ['history write failed: the rollups are kept for the next flush', 1],
    ]);
    await history.close().catch(() => {});
  });

  it(`${FLUSH_ENV}: a whole number of ms, at least 10`, () => {
    expect(flushPeriodFromEnv({ [FLUSH_ENV]: '250' })).toBe(250);
    expect(flushPeriodFromEnv({ [FLUSH_ENV]: '5' })).toBeUndefined();
    expect(flushPeriodFromEnv({ [FLUSH_ENV]: '1e3' })).toBeUndefined();
    expect(flushPeriodFromEnv({})).toBeUndefined();
  });
});
