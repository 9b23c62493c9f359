import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { emptyRollup, HyperLogLog, type MinuteRollup, ROLLUP_HLL_PRECISION } from '@proxyd/analytics';
import { openRedisStorage, type RedisStorage } from '@proxyd/certificates';
import { type HistoryWiring, startHistory } from '@proxyd/history';
import { type Config, redisStorageDefaults } from '@proxyd/model';
import { type StartedRedis, startRedis } from '@proxyd/test-peers';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { redisFleetRollups } from './redis-analytics.js';

// Issue 31: each node's minute rollups reach every node's history through a real redis-server.

const MINUTE = 60_000;
const quiet = { info() {}, warn() {}, error() {}, debug() {} };
const config = { global: {} } as Config;

/** A rollup of `domain` at `minute` with `views` page views by visitors `from`..`to - 1`. */
function minuteOf(domain: string, minute: number, views: number, from: number, to: number): MinuteRollup {
  const r = emptyRollup(domain, minute);
  r.requests = views;
  r.page_views = views;
  r.status.s2xx = views;
  r.breakdowns.pages['/'] = views;
  const hll = new HyperLogLog(ROLLUP_HLL_PRECISION);
  for (let v = from; v < to; v++) hll.add(`visitor-${v}`);
  r.visitors = hll.exportRegisters();
  return r;
}

interface Node {
  history: HistoryWiring;
  storage: RedisStorage;
  dir: string;
  /** What the next flush drains. */
  next: MinuteRollup[];
  salts: Buffer[];
}

describe('issue 31: fleet-wide history over Redis', () => {
  let redis: StartedRedis;
  const nodes: Node[] = [];
  const minute = Math.floor(Date.now() / MINUTE) * MINUTE - 2 * MINUTE;

  beforeAll(async () => {
    redis = await startRedis();
  });
  afterEach(async () => {
    for (const node of nodes.splice(0)) {
      await node.history.close();
      await node.storage.close();
      await rm(node.dir, { recursive: true, force: true });
    }
    redis.cli('FLUSHALL');
  });
  afterAll(async () => {
    await redis.stop();
  });

  async function startNode(name: string, dir?: string): Promise<Node> {
    const storage = await openRedisStorage({ ...redisStorageDefaults(), url: redis.url, key_prefix: 'h' });
    const stateDir = dir ?? (await mkdtemp(path.join(tmpdir(), 'proxyd-fleet-history-')));
    const history = await startHistory(config, {
      stateDir,
      logger: quiet,
      fleet: { exchange: redisFleetRollups(storage), node: name },
    });
    if (history === null) throw new Error('history did not open');
    const node: Node = { history, storage, dir: stateDir, next: [], salts: [] };
    await history.attach({
      drain: () => node.next.splice(0),
      setSalt: (salt) => void node.salts.push(salt),
    });
    nodes.push(node);
    return node;
  }

  const totals = (node: Node) =>
    node.history.store.totals('site.test', { from: minute - MINUTE, to: minute + 2 * MINUTE });

  it('two nodes with overlapping visitors: both histories show the sum of views and the union of visitors', async () => {
    const a = await startNode('a');
    const b = await startNode('b');
    // Two rollups of one minute (two collectors): the store merges them into one another as it writes.
    a.next.push(minuteOf('site.test', minute, 200, 0, 600), minuteOf('site.test', minute, 100, 400, 1000));
    b.next.push(minuteOf('site.test', minute, 200, 500, 1500));
    await a.history.flush();
    await b.history.flush(); // b writes its own, publishes it and reads a's
    await a.history.flush(); // a reads b's
    for (const node of [a, b]) {
      const t = totals(node);
      expect(t.page_views).toBe(500);
      // 1,500 distinct visitors (±3.25 % per sketch): a sum would be 2,000.
      expect(t.visitors).toBeGreaterThan(1400);
      expect(t.visitors).toBeLessThan(1600);
    }
    expect(node(a).breakdown('site.test', 'pages', { from: minute, to: minute + MINUTE }, 10)).toEqual([
      { key: '/', page_views: 500 },
    ]);
    // Both nodes hash visitors with one salt: the first node's.
    expect(a.salts.at(-1)?.equals(b.salts.at(-1) as Buffer)).toBe(true);
  });

  it('a batch counts once: repeated flushes and a restart of the node read nothing twice', async () => {
    const a = await startNode('a');
    const b = await startNode('b');
    a.next.push(minuteOf('site.test', minute, 40, 0, 40));
    await a.history.flush();
    await b.history.flush();
    await b.history.flush();
    await a.history.flush();
    expect(totals(b).page_views).toBe(40);
    expect(totals(a).page_views).toBe(40);
    // b restarts on the same state dir: the batches it wrote are marked in its database.
    const dir = b.dir;
    nodes.splice(nodes.indexOf(b), 1);
    await b.history.close();
    await b.storage.close();
    const again = await startNode('b', dir);
    await again.history.flush();
    expect(totals(again).page_views).toBe(40);
  });

  it('Redis away: each node keeps its own history; once Redis is back, the minutes missed are exchanged', async () => {
    const a = await startNode('a');
    const b = await startNode('b');
    await a.history.flush();
    await b.history.flush();
    const port = redis.port;
    await redis.stop();
    a.next.push(minuteOf('site.test', minute, 7, 0, 7));
    b.next.push(minuteOf('site.test', minute + MINUTE, 5, 100, 105));
    await a.history.flush();
    await b.history.flush();
    expect(totals(a).page_views).toBe(7);
    expect(totals(b).page_views).toBe(5);
    redis = await startRedis({ port });
    await waitReady(a.storage);
    await waitReady(b.storage);
    await a.history.flush(); // publishes what waited
    await b.history.flush(); // publishes its own, reads a's
    await a.history.flush(); // reads b's
    expect(totals(a).page_views).toBe(12);
    expect(totals(b).page_views).toBe(12);
    expect(totals(a).visitors).toBe(totals(b).visitors);
  });
});

/** The history store of a node. */
const node = (n: Node) => n.history.store;

async function waitReady(storage: RedisStorage): Promise<void> {
  const until = Date.now() + 10_000;
  while (!storage.state().reachable) {
    if (Date.now() > until) throw new Error('Redis never came back');
    await new Promise((r) => setTimeout(r, 50));
  }
}
