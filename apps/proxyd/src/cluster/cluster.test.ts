import { EventEmitter } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { FileStorage, LocalCa } from '@proxyd/certificates';
import { Channel } from '@proxyd/cluster';
import { defaultReverseProxy, emptySite, type RouteSpec } from '@proxyd/proxy-core/model';
import { describe, expect, it } from 'vitest';
import { RATE_LIMIT_ADMIT, RateLimitAuthority, RemoteRateLimits } from './rate-limits.js';
import { SiteIdentity, SiteIds } from './site-identity.js';
import { type CertificatePem, CertificateSync, WorkerCertificateStore } from './worker-certificates.js';

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

async function issued(...names: string[]): Promise<CertificatePem[]> {
  const dir = await mkdtemp(path.join(tmpdir(), 'proxyd-cluster-ca-'));
  try {
    const ca = await LocalCa.open(new FileStorage(dir));
    const out: CertificatePem[] = [];
    for (const name of names) {
      const issued = await ca.issue([name]);
      out.push({ name, cert: issued.certPem, key: issued.keyPem });
    }
    return out;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

describe('certificates in workers', () => {
  it('CertificateSync sends what changed and drops what is gone; the worker store follows', async () => {
    const [a, b, b2] = await issued('a.localhost', 'b.localhost', 'b.localhost');
    const sync = new CertificateSync();
    const store = new WorkerCertificateStore(null);
    store.apply(sync.all([a as CertificatePem]));
    expect(store.names()).toEqual(['a.localhost']);
    expect(sync.diff([a as CertificatePem])).toMatchObject({ set: [a], drop: [] });
    expect(sync.diff([a as CertificatePem])).toBeNull();
    const added = sync.diff([a as CertificatePem, b as CertificatePem]);
    expect(added).toEqual({ set: [b], drop: [] });
    store.apply(added as never);
    expect(store.has('b.localhost')).toBe(true);
    const renewed = sync.diff([b2 as CertificatePem]);
    expect(renewed).toEqual({ set: [b2], drop: ['a.localhost'] });
    store.apply(renewed as never);
    expect(store.names()).toEqual(['b.localhost']);
    expect(store.contextFor('a.localhost')).toBeNull();
  });

  it('serves a *.parent certificate for one more label, and reports one that does not load', async () => {
    const [wild] = await issued('*.apps.localhost');
    const store = new WorkerCertificateStore(null);
    const bad: string[] = [];
    store.apply(
      { set: [wild as CertificatePem, { name: 'x.localhost', cert: 'nope', key: 'nope' }], drop: [] },
      (name) => bad.push(name),
    );
    expect(store.has('web.apps.localhost')).toBe(true);
    expect(store.has('a.web.apps.localhost')).toBe(false);
    expect(bad).toEqual(['x.localhost']);
  });

  it('asks the primary once per name for an on-demand certificate, and keeps the answer', async () => {
    const [pem] = await issued('shop.localhost');
    const asked: string[] = [];
    const store = new WorkerCertificateStore(async (name) => {
      asked.push(name);
      await new Promise((r) => setTimeout(r, 10));
      return name === 'shop.localhost' ? (pem as CertificatePem) : null;
    });
    const [one, two] = await Promise.all([store.contextFor('Shop.localhost'), store.contextFor('shop.localhost')]);
    expect(one).not.toBeNull();
    expect(two).toBe(one);
    expect(store.contextFor('shop.localhost')).toBe(one);
    expect(await store.contextFor('refused.localhost')).toBeNull();
    expect(asked).toEqual(['shop.localhost', 'refused.localhost']);
  });
});

describe('rate_limit across workers', () => {
  it('the authority counts every worker together: n per client a second, one limiter per limit', () => {
    const clock = { t: 10_000 };
    const authority = new RateLimitAuthority(() => clock.t);
    const worker1 = authority.admit([3, 'a.test', '192.0.2.1', 3, 'a.test', '192.0.2.1']);
    const worker2 = authority.admit([3, 'a.test', '192.0.2.1', 3, 'a.test', '192.0.2.1', 3, 'a.test', '192.0.2.2']);
    expect([...worker1, ...worker2]).toEqual([1, 1, 1, 0, 1]);
    expect([...authority.admit([10, 'b.test', '192.0.2.1'])]).toEqual([1]);
    clock.t = 12_000;
    expect([...authority.admit([3, 'a.test', '192.0.2.1'])]).toEqual([1]);
  });

  it('a worker sends the admissions of one turn in one message and gets each answer', async () => {
    const [worker, primary] = channelPair();
    const authority = new RateLimitAuthority(() => 5_000);
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

describe('site identity across published tables', () => {
  it("keeps the worker's Site object while the primary keeps its own, so compiled state lives as long as in one process", () => {
    const ids = new SiteIds();
    const identity = new SiteIdentity();
    const route = (domain: string, port: number): RouteSpec => {
      const site = emptySite([{ scheme: 'http', host: domain, port: null }]);
      site.handler = defaultReverseProxy([{ host: '127.0.0.1', port }]);
      return { domain, origin: 'api', source: null, site };
    };
    const a = route('a.test', 1);
    const b = route('b.test', 2);
    const send = (routes: RouteSpec[]) => identity.intern(structuredClone(routes), ids.of(routes));
    const first = send([a, b]);
    // An admin write: a.test's Site object unchanged in the primary, b.test replaced.
    const b2 = route('b.test', 3);
    const second = send([a, b2]);
    expect(second[0]?.site).toBe(first[0]?.site);
    expect(second[1]?.site).not.toBe(first[1]?.site);
    expect(second[1]?.site.handler).toMatchObject({ upstreams: [{ port: 3 }] });
    // A reload makes a new but equal Site: the worker recompiles it too, as one process would.
    const third = send([route('a.test', 1), b2]);
    expect(third[0]?.site).not.toBe(first[0]?.site);
    expect(third[1]?.site).toBe(second[1]?.site);
  });
});
