import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { redisStorageDefaults } from '@proxyd/model';
import {
  apiRouteSpec,
  FleetRoutes,
  parseRecordLine,
  RouteStore,
  recordLine,
  StoreError,
  StoreErrorCode,
} from '@proxyd/route-store';
import { type StartedRedis, startRedis } from '@proxyd/test-peers';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { openRedisStorage } from './redis-connect.js';
import { RedisRouteLog } from './redis-routes.js';
import type { RedisStorage } from './redis-storage.js';

/** One node of a fleet: its route store (with a state file and a Proxyfile route) and its fleet writer. */
interface TestNode {
  store: RouteStore;
  fleet: FleetRoutes;
  storage: RedisStorage;
  stateFile: string;
}

let redis: StartedRedis;
let work: string;
const open: TestNode[] = [];

beforeAll(async () => {
  redis = await startRedis();
  work = await mkdtemp(path.join(tmpdir(), 'proxyd-fleet-routes-'));
}, 30_000);
afterEach(async () => {
  for (const node of open.splice(0)) await closeNode(node);
  redis.cli('FLUSHALL');
});
afterAll(async () => {
  await redis?.stop();
  await rm(work, { recursive: true, force: true });
});

const codec = { line: recordLine, parse: parseRecordLine };

async function startNode(name: string, port = redis.port, options: { maxRoutes?: number } = {}): Promise<TestNode> {
  const stateFile = path.join(work, `${name}-${Date.now()}-routes.json`);
  return await startNodeAt(stateFile, port, options);
}

async function startNodeAt(stateFile: string, port: number, options: { maxRoutes?: number } = {}): Promise<TestNode> {
  const storage = await openRedisStorage({
    ...redisStorageDefaults(),
    url: `redis://127.0.0.1:${port}`,
    key_prefix: 't',
  });
  const { store } = await RouteStore.open({ stateFile, ...options });
  const fleet = new FleetRoutes(store, new RedisRouteLog(storage, { codec, blockMs: 200 }), { reachWaitMs: 2_000 });
  fleet.start();
  const node = { store, fleet, storage, stateFile };
  open.push(node);
  return node;
}

async function closeNode(node: TestNode): Promise<void> {
  node.fleet.close();
  await node.store.close();
  await node.storage.close();
}

const route = (domain: string, port: number, source: string | null = null) => ({
  domain,
  upstream: `127.0.0.1:${port}`,
  tls: false,
  source,
});
const domains = (node: TestNode) => node.store.list().map((r) => `${r.domain} ${r.upstream} ${r.source}`);

describe('issue 31: API routes shared by a fleet through Redis', () => {
  it('a write on one node is applied on the writer when it answers and reaches the others', async () => {
    const [a, b, c] = await Promise.all([startNode('a'), startNode('b'), startNode('c')]);
    await vi.waitFor(() => expect(redis.cli('GET', 't:routes:epoch')).not.toBe(''));
    await b.fleet.upsert(route('app.test', 3000));
    // The writer routes it when the write answers.
    expect(domains(b)).toEqual(['app.test 127.0.0.1:3000 null']);
    await vi.waitFor(() => {
      expect(domains(a)).toEqual(['app.test 127.0.0.1:3000 null']);
      expect(domains(c)).toEqual(['app.test 127.0.0.1:3000 null']);
    });
    expect(await a.fleet.remove('APP.test')).toBe(true);
    expect(domains(a)).toEqual([]);
    await vi.waitFor(() => expect([domains(b), domains(c)]).toEqual([[], []]));
    expect(await c.fleet.remove('app.test')).toBe(false);
    expect(redis.cli('GET', 't:routes:version')).toBe('2');
  });

  it('a snapshot is checked against the fleet: it drops what its source holds on any node, whole or not at all', async () => {
    const [a, b] = await Promise.all([startNode('a'), startNode('b')]);
    await a.fleet.upsert(route('one.test', 1, 'ctrl'));
    await a.fleet.upsert(route('other.test', 2, 'someone-else'));
    await vi.waitFor(() => expect(domains(b)).toHaveLength(2));
    // B's snapshot drops one.test, which A wrote: the source's set is the fleet's, not B's.
    const outcome = await b.fleet.applySnapshot({
      source: 'ctrl',
      routes: [route('two.test', 3), route('three.test', 4)],
    });
    expect(outcome).toMatchObject({ source: 'ctrl', applied: 2, removed: 1, total_routes: 3 });
    await vi.waitFor(() =>
      expect(domains(a)).toEqual([
        'other.test 127.0.0.1:2 someone-else',
        'three.test 127.0.0.1:4 ctrl',
        'two.test 127.0.0.1:3 ctrl',
      ]),
    );
    // The same snapshot again, on the other node: same hash, nothing removed.
    const again = await a.fleet.applySnapshot({
      source: 'ctrl',
      routes: [route('three.test', 4), route('two.test', 3)],
    });
    expect(again.route_hash).toBe(outcome.route_hash);
    expect(again.removed).toBe(0);
    expect(redis.cli('SMEMBERS', 't:routes:source:ctrl').split('\n').sort()).toEqual(['three.test', 'two.test']);
  });

  it('the route limit counts the fleet: a snapshot past it is refused and changes nothing', async () => {
    const a = await startNode('a', redis.port, { maxRoutes: 2 });
    await a.fleet.upsert(route('one.test', 1));
    const before = redis.cli('GET', 't:routes:version');
    const refused = await a.fleet
      .applySnapshot({ source: 'ctrl', routes: [route('two.test', 2), route('three.test', 3)] })
      .catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(StoreError);
    expect((refused as StoreError).code).toBe(StoreErrorCode.ROUTE_LIMIT);
    expect(redis.cli('HKEYS', 't:routes')).toBe('one.test');
    expect(redis.cli('GET', 't:routes:version')).toBe(before);
    expect(domains(a)).toEqual(['one.test 127.0.0.1:1 null']);
  });

  it('a node that missed entries (stopped) catches up by version at its start, without Redis from its own copy', async () => {
    const a = await startNode('a');
    const b = await startNode('b');
    await a.fleet.upsert(route('kept.test', 1));
    await vi.waitFor(() => expect(domains(b)).toHaveLength(1));
    open.splice(open.indexOf(b), 1);
    await closeNode(b);
    await a.fleet.upsert(route('while-away.test', 2));
    await a.fleet.remove('kept.test');
    // B again, from its state file: it serves its last copy at once, then catches up.
    const again = await startNodeAt(b.stateFile, redis.port);
    expect(domains(again)).toEqual(['kept.test 127.0.0.1:1 null']);
    await vi.waitFor(() => expect(domains(again)).toEqual(['while-away.test 127.0.0.1:2 null']));
  });

  it('a follower whose connection dropped catches up from its version, not with the whole set', async () => {
    const [a, b] = await Promise.all([startNode('a'), startNode('b')]);
    await a.fleet.upsert(route('first.test', 1));
    await vi.waitFor(() => expect(domains(b)).toHaveLength(1));
    const reset = vi.spyOn(b.fleet, 'reset');
    const entries = vi.spyOn(b.fleet, 'entries');
    // Every follower connection cut (the XREAD ones; the writers' stay): writes made meanwhile are in the log.
    const readers = redis
      .cli('CLIENT', 'LIST')
      .split('\n')
      .filter((line) => line.includes('cmd=xread'))
      .map((line) => /\bid=(\d+)/.exec(line)?.[1] as string);
    expect(readers.length).toBe(2);
    for (const id of readers) redis.cli('CLIENT', 'KILL', 'ID', id);
    await a.fleet.upsert(route('second.test', 2));
    await a.fleet.upsert(route('third.test', 3));
    await vi.waitFor(() => expect(domains(b)).toHaveLength(3));
    expect(reset).not.toHaveBeenCalled();
    expect(entries).toHaveBeenCalled();
  });

  it('Redis unreachable: writes fail at once with STORE_FLEET_UNAVAILABLE and apply nothing; back: converges', async () => {
    const own = await startRedis({ args: ['--appendonly', 'yes', '--dir', work, '--appendfilename', 'fleet.aof'] });
    const [a, b] = await Promise.all([startNode('a', own.port), startNode('b', own.port)]);
    await a.fleet.upsert(route('before.test', 1));
    await vi.waitFor(() => expect(domains(b)).toHaveLength(1));
    const port = own.port;
    await own.stop();
    await vi.waitFor(() => expect(a.storage.state().reachable).toBe(false));
    const started = Date.now();
    const refused = await a.fleet.upsert(route('during.test', 2)).catch((err: unknown) => err);
    expect(Date.now() - started).toBeLessThan(500);
    expect((refused as StoreError).code).toBe(StoreErrorCode.FLEET_UNAVAILABLE);
    expect((refused as StoreError).message).toMatch(/^redis is unreachable \(.+\); the write was not applied$/);
    const snapshot = await b.fleet
      .applySnapshot({ source: 'ctrl', routes: [route('s.test', 3)] })
      .catch((err: unknown) => err);
    expect((snapshot as StoreError).code).toBe(StoreErrorCode.FLEET_UNAVAILABLE);
    // Reads answer from each node's copy.
    expect(domains(a)).toEqual(['before.test 127.0.0.1:1 null']);
    expect(domains(b)).toEqual(['before.test 127.0.0.1:1 null']);
    // Redis back on the same port with its data: writes succeed and reach the other node.
    const back = await startRedis({
      port,
      args: ['--appendonly', 'yes', '--dir', work, '--appendfilename', 'fleet.aof'],
    });
    try {
      await vi.waitFor(() => expect(a.storage.state().reachable).toBe(true), { timeout: 10_000 });
      await vi.waitFor(() => a.fleet.upsert(route('after.test', 4)), { timeout: 10_000 });
      await vi.waitFor(() =>
        expect(domains(b)).toEqual(['after.test 127.0.0.1:4 null', 'before.test 127.0.0.1:1 null']),
      );
    } finally {
      await back.stop();
    }
  }, 60_000);

  it('a Redis that lost its data is seeded again from a node copy: no route lost', async () => {
    const [a, b] = await Promise.all([startNode('a'), startNode('b')]);
    await a.fleet.upsert(route('survives.test', 1));
    await vi.waitFor(() => expect(domains(b)).toHaveLength(1));
    const epoch = redis.cli('GET', 't:routes:epoch');
    redis.cli('FLUSHALL');
    // The next write seeds the storage from the writer's copy first.
    await b.fleet.upsert(route('next.test', 2));
    expect(redis.cli('HKEYS', 't:routes').split('\n').sort()).toEqual(['next.test', 'survives.test']);
    expect(redis.cli('GET', 't:routes:epoch')).not.toBe(epoch);
    await vi.waitFor(() =>
      expect(domains(a)).toEqual(['next.test 127.0.0.1:2 null', 'survives.test 127.0.0.1:1 null']),
    );
  });

  it('a route in Redis that is not valid is left out and reported, the others apply', async () => {
    const a = await startNode('a');
    await a.fleet.upsert(route('good.test', 1));
    redis.cli('HSET', 't:routes', 'bad.test', '{"domain":"bad.test","upstream":"nope","tls":false,"source":null}');
    const b = await startNode('b');
    await vi.waitFor(() => expect(domains(b)).toEqual(['good.test 127.0.0.1:1 null']));
  });
});

describe('issue 31: precedence on each node of the fleet (spec §2.3)', () => {
  it("an API route takes its domain over a node's Proxyfile route; deleting it brings that node's own back", async () => {
    const stateFile = path.join(work, `p-${Date.now()}.json`);
    const storage = await openRedisStorage({ ...redisStorageDefaults(), url: redis.url, key_prefix: 't' });
    // The node's Proxyfile declares site.test (a site like an API route's, upstream port 9).
    const declared = { ...apiRouteSpec(route('site.test', 9)), origin: 'proxyfile' as const, source: null };
    const { store } = await RouteStore.open({ stateFile, proxyfileRoutes: [declared] });
    const fleet = new FleetRoutes(store, new RedisRouteLog(storage, { codec, blockMs: 200 })).start();
    const pnode = { store, fleet, storage, stateFile };
    open.push(pnode);
    const other = await startNode('other');
    await other.fleet.upsert(route('site.test', 1));
    await vi.waitFor(() => expect(domains(pnode)).toEqual(['site.test 127.0.0.1:1 null']));
    expect(store.countByOrigin()).toMatchObject({ api: 1, proxyfile: 0 });
    await other.fleet.remove('site.test');
    await vi.waitFor(() => expect(domains(pnode)).toEqual(['site.test 127.0.0.1:9 null']));
    expect(store.countByOrigin()).toMatchObject({ api: 0, proxyfile: 1 });
    expect(domains(other)).toEqual([]);
    // A DELETE of a domain the fleet holds no API route for removes the node's own route, there only.
    expect(await fleet.remove('site.test')).toBe(true);
    expect(domains(pnode)).toEqual([]);
    expect(redis.cli('HLEN', 't:routes')).toBe('0');
  });
});
