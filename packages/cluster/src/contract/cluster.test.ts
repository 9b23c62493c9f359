import { EventEmitter } from 'node:events';
import { defaultReverseProxy, emptySite, type RouteSnapshot, type RouteSpec, stateOf } from '@proxyd/model';
import { ConnectionCounts, RateLimiter } from '@proxyd/proxy-core';
import { describe, expect, it, vi } from 'vitest';
import { Channel } from '../channel.js';
import { CONNECTIONS_ACQUIRE, RemoteConnectionCounter, serveConnectionCounts } from '../ipc/connection-counts.js';
import { RATE_LIMIT_ADMIT, RemoteRateLimits } from '../ipc/rate-limits.js';
import { CertificateSync } from './certificate-sync.js';
import { Fleet } from './fleet.js';
import type { CertificateUpdate, DataPlaneNode } from './node.js';
import { RateLimitAuthority } from './rate-limits.js';
import { NodeRoutes, RoutePublisher, type RouteUpdate } from './route-tables.js';

/** What the publisher sends for `snapshot` (a test sends only new versions: never null). */
function sent(publisher: RoutePublisher, snapshot: RouteSnapshot): RouteUpdate {
  const message = publisher.next(snapshot);
  if (message === null) throw new Error(`version ${snapshot.version} is not new`);
  return message;
}

/** Two channels wired back to back in this process (what fork's IPC does between processes). */
function channelPair(): [Channel, Channel] {
  const a = new EventEmitter() as EventEmitter & { send: (m: unknown, cb: (e: Error | null) => void) => boolean };
  const b = new EventEmitter() as EventEmitter & { send: (m: unknown, cb: (e: Error | null) => void) => boolean };
  a.send = (m) => {
    setImmediate(() => b.emit('message', structuredClone(m)));
    return true;
  };
  b.send = (m) => {
    setImmediate(() => a.emit('message', structuredClone(m)));
    return true;
  };
  return [new Channel(a), new Channel(b)];
}

describe('certificates for nodes that pull them', () => {
  it('CertificateSync gathers the names served and unserved since the last update, the last word winning', () => {
    const sync = new CertificateSync();
    expect(sync.take()).toBeNull();
    sync.served('a.localhost');
    sync.served('b.localhost');
    sync.unserved('b.localhost');
    sync.served('a.localhost');
    expect(sync.take()).toEqual({ served: ['a.localhost'], unserved: ['b.localhost'] });
    expect(sync.take()).toBeNull();
    expect(CertificateSync.join(['a.localhost'])).toEqual({ served: ['a.localhost'], unserved: [] });
    // An update a node did not take goes again, but a name changed since keeps its newer change.
    sync.unserved('a.localhost');
    sync.requeue({ served: ['a.localhost', 'c.localhost'], unserved: [] });
    expect(sync.take()).toEqual({ served: ['c.localhost'], unserved: ['a.localhost'] });
  });

  it('the fleet sends one update per turn, and sends the names again to a node that did not take it', async () => {
    const got: CertificateUpdate[] = [];
    let failures = 1;
    const node = {
      index: 0,
      certificateMode: 'pulled',
      async certificatesChanged(update: CertificateUpdate) {
        if (failures-- > 0) throw new Error('certificates: no answer within 5000 ms');
        got.push(update);
      },
    } as unknown as DataPlaneNode;
    const errors: string[] = [];
    const fleet = new Fleet({
      routes: () => ({ routes: [], version: 1, changes: null }),
      certificates: { names: () => [], certificateFor: async () => null },
      onError: (what) => errors.push(what),
    });
    fleet.attach({ nodes: [node], stop: async () => {} });
    await Promise.all([fleet.certificatesChanged('a.localhost'), fleet.certificatesChanged('b.localhost', true)]);
    expect(errors).toEqual(['certificates not sent']);
    await vi.waitFor(() => expect(got).toEqual([{ served: ['a.localhost'], unserved: ['b.localhost'] }]), {
      timeout: 5000,
    });
  });
});

describe('rate_limit across workers', () => {
  it('the authority counts every worker together: n per client a second, one limiter per limit', () => {
    const clock = { t: 10_000 };
    const authority = new RateLimitAuthority((limit) => new RateLimiter({ limit, now: () => clock.t }));
    const worker1 = authority.admit([3, 'a.test', '192.0.2.1', 3, 'a.test', '192.0.2.1']);
    const worker2 = authority.admit([3, 'a.test', '192.0.2.1', 3, 'a.test', '192.0.2.1', 3, 'a.test', '192.0.2.2']);
    expect([...worker1, ...worker2]).toEqual([1, 1, 1, 0, 1]);
    expect([...authority.admit([10, 'b.test', '192.0.2.1'])]).toEqual([1]);
    clock.t = 12_000;
    expect([...authority.admit([3, 'a.test', '192.0.2.1'])]).toEqual([1]);
  });

  it('a worker sends the admissions of one turn in one message and gets each answer', async () => {
    const [worker, primary] = channelPair();
    const authority = new RateLimitAuthority((limit) => new RateLimiter({ limit, now: () => 5_000 }));
    const batches: number[] = [];
    primary.handle<unknown[]>(RATE_LIMIT_ADMIT, (batch) => {
      batches.push(batch.length / 3);
      return authority.admit(batch);
    });
    const limits = new RemoteRateLimits(worker);
    const counter = limits.counter(2);
    const answers = await Promise.all([1, 2, 3].map(() => counter.admit('a.test', '192.0.2.9')));
    expect(answers).toEqual([true, true, false]);
    expect(batches).toEqual([3]);
  });

  it('an answer that does not come in time rejects (the site step then admits)', async () => {
    // A primary that never answers (stuck): the messages go nowhere.
    const silent = Object.assign(new EventEmitter(), { send: () => true });
    const limits = new RemoteRateLimits(new Channel(silent), 50);
    await expect(limits.counter(1).admit('a.test', '192.0.2.9')).rejects.toThrow('no answer within 50 ms');
  });
});

describe('max_connections_per_ip across workers (issue 28)', () => {
  it('two workers share the cap; a turn goes in one request; a close gives a place back', async () => {
    const counts = new ConnectionCounts(3);
    const [w1, p1] = channelPair();
    const [w2, p2] = channelPair();
    const fleet = {
      acquireConnections: (from: number, keys: readonly string[]) =>
        Uint8Array.from(keys, (key) => (counts.acquire(from, key) ? 1 : 0)),
      releaseConnections: (from: number, keys: readonly string[]) => {
        for (const key of keys) counts.release(from, key);
      },
    };
    serveConnectionCounts(p1, 0, fleet);
    serveConnectionCounts(p2, 1, fleet);
    let batches = 0;
    p1.handle<string[]>(CONNECTIONS_ACQUIRE, (keys) => {
      batches++;
      return keys.map((key) => (counts.acquire(0, key) ? 1 : 0));
    });
    const one = new RemoteConnectionCounter(w1);
    const two = new RemoteConnectionCounter(w2);
    expect(await Promise.all([one.acquire('192.0.2.1'), one.acquire('192.0.2.1')])).toEqual([true, true]);
    expect(batches).toBe(1);
    expect(await Promise.all([two.acquire('192.0.2.1'), two.acquire('192.0.2.1')])).toEqual([true, false]);
    two.release('192.0.2.1');
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(counts.held('192.0.2.1')).toBe(2);
    expect(await one.acquire('192.0.2.1')).toBe(true);
    // A worker that exits gives back what it held.
    counts.forget(0);
    expect(counts.held('192.0.2.1')).toBe(0);
  });

  it('an answer that does not come in time rejects (the worker then admits on its own count)', async () => {
    const silent = Object.assign(new EventEmitter(), { send: () => true });
    const counter = new RemoteConnectionCounter(new Channel(silent), 50);
    await expect(counter.acquire('192.0.2.9')).rejects.toThrow('no answer within 50 ms');
  });
});

describe('route tables sent to workers', () => {
  const route = (domain: string, port: number): RouteSpec => {
    const site = emptySite([{ scheme: 'http', host: domain, port: null }]);
    site.handler = defaultReverseProxy([{ host: '127.0.0.1', port }]);
    return { domain, origin: 'api', source: null, site };
  };
  /** A snapshot as the route store publishes it: the changes from the routes of `base`. */
  const published = (base: RouteSnapshot, upserted: RouteSpec[], removed: string[]): RouteSnapshot => {
    const gone = new Set([...removed, ...upserted.map((r) => r.domain)]);
    const routes = base.routes.filter((r) => !gone.has(r.domain)).concat(upserted);
    return { routes, version: base.version + 1, changes: { base: new WeakRef(base.routes), upserted, removed } };
  };
  /** A snapshot without changes (the first, or a reload's). */
  const whole = (routes: RouteSpec[], version: number): RouteSnapshot => ({ routes, version, changes: null });
  /** Over IPC: a structured clone. */
  const send = <T>(message: T): T => structuredClone(message);

  it('sends the whole table once, then only what changed; the worker keeps unchanged Site objects', () => {
    const publisher = new RoutePublisher();
    const worker = new NodeRoutes();
    const a = route('a.test', 1);
    const b = route('b.test', 2);
    const v1 = whole([a, b], 1);
    const first = worker.apply(send(sent(publisher, v1)));
    expect(first?.routes.map((r) => r.domain)).toEqual(['a.test', 'b.test']);
    // An admin write replaces b.test and adds c.test: the message carries those two only.
    const v2 = published(v1, [route('b.test', 3), route('c.test', 4)], []);
    const message = sent(publisher, v2);
    expect(message.kind).toBe('changes');
    expect(message.kind === 'changes' && message.upserted.map((r) => r.domain)).toEqual(['b.test', 'c.test']);
    const second = worker.apply(send(message));
    const byDomain = new Map(second?.routes.map((r) => [r.domain, r]));
    expect(byDomain.get('a.test')?.site).toBe(first?.routes[0]?.site);
    expect(byDomain.get('b.test')?.site.handler).toMatchObject({ upstreams: [{ port: 3 }] });
    // The changes travel on to the data plane in the worker's snapshot, based on its previous table.
    expect(second?.changes?.base.deref()).toBe(first && stateOf(first));
    expect(second?.changes?.upserted.map((r) => r.domain)).toEqual(['b.test', 'c.test']);
    // A removal.
    const v3 = published(v2, [], ['a.test']);
    const third = worker.apply(send(sent(publisher, v3)));
    expect(third?.routes.map((r) => r.domain).sort()).toEqual(['b.test', 'c.test']);
  });

  it('a snapshot without changes (a reload) goes whole; equal but new Site objects are new to the worker', () => {
    const publisher = new RoutePublisher();
    const worker = new NodeRoutes();
    const v1 = whole([route('a.test', 1)], 1);
    const first = worker.apply(send(sent(publisher, v1)));
    const reloaded = [route('a.test', 1)];
    const message = sent(publisher, whole(reloaded, 2));
    expect(message.kind).toBe('full');
    const second = worker.apply(send(message));
    expect(second?.routes[0]?.site).not.toBe(first?.routes[0]?.site);
    expect(second?.changes).toBeNull();
    // The same objects again: kept.
    const third = worker.apply(send(publisher.full(whole(reloaded, 3))));
    expect(third?.routes[0]?.site).toBe(second?.routes[0]?.site);
  });

  it('skips a table it already has, and refuses changes after a gap (the primary then sends it whole)', () => {
    const publisher = new RoutePublisher();
    const worker = new NodeRoutes();
    const v1 = whole([route('a.test', 1)], 1);
    worker.apply(send(sent(publisher, v1)));
    expect(worker.apply(send(publisher.full(v1)))).toBeNull();
    const v2 = published(v1, [route('b.test', 2)], []);
    sent(publisher, v2); // lost on its way to this worker
    const v3 = published(v2, [route('c.test', 3)], []);
    expect(() => worker.apply(send(sent(publisher, v3)))).toThrow('route table 3 does not follow 1');
    const full = worker.apply(send(publisher.full(v3)));
    expect(full?.routes.map((r) => r.domain).sort()).toEqual(['a.test', 'b.test', 'c.test']);
  });
});
