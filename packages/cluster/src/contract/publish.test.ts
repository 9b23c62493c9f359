import { defaultReverseProxy, emptySite, type RouteSnapshot, type RouteSpec, stateOf } from '@proxyd/model';
import { describe, expect, it } from 'vitest';
import { Fleet } from './fleet.js';
import type { DataPlaneNode, RouteAck } from './node.js';
import { NodeRoutes, RoutePublisher, type RouteUpdate } from './route-tables.js';

/** What the publisher sends for `snapshot` (a test sends only new versions: never null). */
function sent(publisher: RoutePublisher, snapshot: RouteSnapshot): RouteUpdate {
  const message = publisher.next(snapshot);
  if (message === null) throw new Error(`version ${snapshot.version} is not new`);
  return message;
}

function route(domain: string, port: number): RouteSpec {
  const site = emptySite([{ scheme: null, host: domain, port: null }]);
  site.handler = defaultReverseProxy([{ host: '127.0.0.1', port }]);
  return { domain, origin: 'api', source: null, site };
}

/** The store's next snapshot: `upserted` added or replaced, `removed` gone. */
function published(base: RouteSnapshot, upserted: RouteSpec[], removed: string[]): RouteSnapshot {
  const gone = new Set([...removed, ...upserted.map((r) => r.domain)]);
  const routes = base.routes.filter((r) => !gone.has(r.domain)).concat(upserted);
  return { routes, version: base.version + 1, changes: { base: new WeakRef(base.routes), upserted, removed } };
}

/** `routes` wrapped so that every property read of them is counted. */
function watched(routes: RouteSpec[]): { routes: RouteSpec[]; reads: () => number } {
  let reads = 0;
  const wrapped = routes.map(
    (r) =>
      new Proxy(r, {
        get(target, key, receiver) {
          reads++;
          return Reflect.get(target, key, receiver) as unknown;
        },
      }),
  );
  return { routes: wrapped, reads: () => reads };
}

describe('issue 30: a node applies a route change in O(changes)', () => {
  it('NodeRoutes applies changes without reading the routes that did not change', () => {
    const N = 5000;
    const table = watched(Array.from({ length: N }, (_, i) => route(`s${i}.test`, 1000 + i)));
    const publisher = new RoutePublisher();
    const node = new NodeRoutes();
    // In process, no clone: the node holds the watched objects themselves.
    const v1: RouteSnapshot = { routes: table.routes, version: 1, changes: null };
    const first = node.apply(sent(publisher, v1));
    expect(first?.routes).toHaveLength(N);
    const before = table.reads();
    const v2 = published(v1, [route('new.test', 1), route('s7.test', 2)], ['s9.test']);
    const readsOfPublished = table.reads() - before;
    const after = table.reads();
    const second = node.apply(sent(publisher, v2));
    // Reading every route once would be N reads; the replaced and removed routes cost a few.
    expect(table.reads() - after).toBeLessThan(20);
    expect(readsOfPublished).toBeGreaterThan(0); // the helper above walks the table (the test's store), the node does not
    expect(second?.routes).toHaveLength(N);
    const domains = new Set(second?.routes.map((r) => r.domain));
    expect(domains.has('new.test')).toBe(true);
    expect(domains.has('s9.test')).toBe(false);
    expect(second?.routes.find((r) => r.domain === 's7.test')?.site.handler).toMatchObject({
      upstreams: [{ port: 2 }],
    });
    expect(second?.changes?.base.deref()).toBe(first && stateOf(first));
  });
});

/** A node that joined at `joinedAt`; a stalled one answers a route change when `release` is called, the others at once. */
function node(index: number, stalled: boolean, joinedAt = 1) {
  const seen: RouteUpdate[] = [];
  const waiting: Array<() => void> = [];
  let version = joinedAt;
  let chain: Promise<unknown> = Promise.resolve();
  const self = {
    index,
    certificateMode: 'shared' as const,
    seen,
    release: () => {
      for (const answer of waiting.splice(0)) answer();
    },
    applyRoutes(update: RouteUpdate): Promise<RouteAck> {
      seen.push(update);
      // A worker takes its messages in order (one IPC channel, one event loop): each after the one before.
      const answer = chain.then(async (): Promise<RouteAck> => {
        if (stalled) await new Promise<void>((resolve) => waiting.push(resolve));
        if (update.kind === 'changes' && update.version > version + 1) return { version, needsSnapshot: true };
        version = Math.max(version, update.version);
        return { version };
      });
      chain = answer;
      return answer;
    },
  };
  return self;
}

describe('issue 30: a write never waits on a node that stalls', () => {
  it('publishRoutes resolves after routeAckWaitMs, reports the node, and sends it nothing more', async () => {
    const errors: string[] = [];
    let current: RouteSnapshot = { routes: [route('a.test', 1)], version: 1, changes: null };
    const fleet = new Fleet({
      routes: () => current,
      routeAckWaitMs: 100,
      onError: (what, err) => errors.push(`${what}: ${err.message}`),
    });
    const fast = node(0, false);
    const slow = node(1, true);
    fleet.attach({ nodes: [fast, slow] as unknown as DataPlaneNode[], stop: async () => {} });
    const join = fleet.join();
    expect(join.routes.version).toBe(1);
    current = published(current, [route('b.test', 2)], []);
    const started = performance.now();
    await fleet.publishRoutes(current);
    const took = performance.now() - started;
    expect(took).toBeGreaterThanOrEqual(90);
    expect(took).toBeLessThan(2000);
    expect(errors).toEqual([
      'route table 2: node 1 did not confirm within 100 ms: the change is durable and queued for it; it serves it once it catches up',
    ]);
    expect(fast.seen.map((u) => `${u.kind} ${u.version}`)).toEqual(['changes 2']);
    // The next write: the fast node answers at once; the stalled one gets the next change in order.
    current = published(current, [route('c.test', 3)], []);
    await fleet.publishRoutes(current);
    slow.release();
    await new Promise((resolve) => setTimeout(resolve, 10));
    slow.release();
    await new Promise((resolve) => setTimeout(resolve, 10));
    // Changes only: no whole table was sent to the slow node for being slow.
    expect(slow.seen.map((u) => `${u.kind} ${u.version}`)).toEqual(['changes 2', 'changes 3']);
    expect(fast.seen.map((u) => `${u.kind} ${u.version}`)).toEqual(['changes 2', 'changes 3']);
  });

  it('the table the nodes joined with is not sent again (the store publishes it once they started)', async () => {
    const current: RouteSnapshot = { routes: [route('a.test', 1)], version: 1, changes: null };
    const fleet = new Fleet({ routes: () => current });
    const joined = node(0, false);
    fleet.attach({ nodes: [joined] as unknown as DataPlaneNode[], stop: async () => {} });
    fleet.join();
    await fleet.publishRoutes(current);
    expect(joined.seen).toEqual([]);
  });

  it('a node that missed a version gets the newest table', async () => {
    let current: RouteSnapshot = { routes: [route('a.test', 1)], version: 1, changes: null };
    const fleet = new Fleet({ routes: () => current });
    const behind = node(0, false, 0); // holds no table: version 1 never reached it
    fleet.attach({ nodes: [behind] as unknown as DataPlaneNode[], stop: async () => {} });
    fleet.join();
    current = published(current, [route('b.test', 2)], []);
    await fleet.publishRoutes(current);
    expect(behind.seen.map((u) => `${u.kind} ${u.version}`)).toEqual(['changes 2', 'full 2']);
  });
});
