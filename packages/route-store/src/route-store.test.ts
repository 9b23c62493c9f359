import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  defaultGlobalOptions,
  defaultReverseProxy,
  emptySite,
  type RouteSnapshot,
  type RouteSpec,
  stateOf,
} from '@proxyd/model';
import { DataPlane } from '@proxyd/proxy-core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAX_ROUTES, RouteStore } from './route-store.js';
import { StateFile } from './state-file.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'proxyd-store-'));
});
afterEach(() => rm(dir, { recursive: true, force: true }));

function proxyfileRoute(domain: string, port: number): RouteSpec {
  const site = emptySite([{ scheme: 'http', host: domain, port: null }]);
  site.handler = defaultReverseProxy([{ host: '127.0.0.1', port }]);
  site.rate_limit = 5;
  return { domain, origin: 'proxyfile', source: null, site };
}

function labelsRoute(domain: string, port: number): RouteSpec {
  const site = emptySite([{ scheme: null, host: domain, port: null }]);
  site.handler = defaultReverseProxy([{ host: '10.0.0.1', port }]);
  return { domain, origin: 'labels', source: 'docker', site };
}

const open = (proxyfileRoutes: RouteSpec[] = [], stateFile: string | null = path.join(dir, 'routes.json')) =>
  RouteStore.open({ stateFile, proxyfileRoutes }).then((r) => r.store);

const domains = (store: RouteStore) => store.list().map((r) => `${r.domain}=${r.upstream}/${r.source}`);

describe('RouteStore', () => {
  it('shows Proxyfile routes with source null and their rate limit', async () => {
    const store = await open([proxyfileRoute('app.test', 3000)]);
    expect(store.list()).toEqual([
      {
        domain: 'app.test',
        upstream: '127.0.0.1:3000',
        tls: false,
        rate_limit_rps: 5,
        under_attack: false,
        source: null,
      },
    ]);
    expect(store.version).toBe(1);
  });

  it('upserts case-insensitively and returns the §2.1 representation', async () => {
    const store = await open();
    const created = await store.upsert({ domain: 'API.Test', upstream: '[::1]:8443', tls: true, source: null });
    expect(created).toEqual({
      domain: 'api.test',
      upstream: '[::1]:8443',
      tls: true,
      rate_limit_rps: null,
      under_attack: false,
      source: null,
    });
    await store.upsert({ domain: 'api.test', upstream: 'backend:80', tls: false, source: 'ctl' });
    expect(domains(store)).toEqual(['api.test=backend:80/ctl']);
    const [spec] = store.routes;
    expect(spec?.origin).toBe('api');
    expect(spec?.site.handler).toMatchObject({ kind: 'reverse_proxy', upstreams: [{ host: 'backend', port: 80 }] });
  });

  it('publishes an immutable table with a rising version to subscribers', async () => {
    const store = await open();
    const seen: Array<[readonly RouteSpec[], number]> = [];
    store.subscribe(({ routes, version }) => seen.push([routes, version]));
    await store.upsert({ domain: 'a.test', upstream: 'h:1', tls: false, source: null });
    await store.remove('A.TEST');
    expect(seen.map(([r, v]) => [r.length, v])).toEqual([
      [0, 1],
      [1, 2],
      [0, 3],
    ]);
    expect(Object.isFrozen(seen[1]?.[0])).toBe(true);
  });

  it("a write resolves only after a subscriber's promise settled (workers swapped); a rejection keeps the write", async () => {
    const store = await open();
    const swapped: number[] = [];
    let fail = false;
    store.subscribe(async ({ version }) => {
      await new Promise((r) => setTimeout(r, 30));
      if (fail) throw new Error('worker 1 did not answer');
      swapped.push(version);
    });
    await store.upsert({ domain: 'a.test', upstream: 'h:1', tls: false, source: null });
    expect(swapped).toEqual([1, 2]);
    fail = true;
    await store.upsert({ domain: 'b.test', upstream: 'h:1', tls: false, source: null });
    expect(domains(store)).toEqual(['a.test=h:1/null', 'b.test=h:1/null']);
    expect(store.version).toBe(3);
  });

  it('remove resolves false for an unknown domain', async () => {
    const store = await open();
    expect(await store.remove('nope.test')).toBe(false);
  });

  it('an API write replaces a Proxyfile route; deleting it brings the Proxyfile route back', async () => {
    const store = await open([proxyfileRoute('app.test', 3000)]);
    await store.upsert({ domain: 'app.test', upstream: 'h:1', tls: false, source: 'ctl' });
    expect(domains(store)).toEqual(['app.test=h:1/ctl']);
    expect(await store.remove('app.test')).toBe(true);
    expect(domains(store)).toEqual(['app.test=127.0.0.1:3000/null']);
  });

  it('a reload replaces only the Proxyfile routes', async () => {
    const store = await open([proxyfileRoute('a.test', 1), proxyfileRoute('b.test', 2)]);
    await store.upsert({ domain: 'api.test', upstream: 'h:9', tls: false, source: null });
    await store.upsert({ domain: 'b.test', upstream: 'h:8', tls: false, source: 'ctl' });
    await store.replaceOrigin('proxyfile', [proxyfileRoute('b.test', 20), proxyfileRoute('c.test', 3)]);
    expect(domains(store)).toEqual(['api.test=h:9/null', 'b.test=h:8/ctl', 'c.test=127.0.0.1:3/null']);
    await store.remove('b.test');
    expect(domains(store)).toEqual(['api.test=h:9/null', 'b.test=127.0.0.1:20/null', 'c.test=127.0.0.1:3/null']);
  });

  it('a snapshot reconciles only its own source', async () => {
    const store = await open([proxyfileRoute('file.test', 1)]);
    await store.upsert({ domain: 'other.test', upstream: 'h:1', tls: false, source: 'other' });
    const first = await store.applySnapshot({
      source: 'ctl',
      routes: [
        { domain: 'x.test', upstream: 'h:1', tls: false },
        { domain: 'Y.test', upstream: 'h:2', tls: true },
      ],
    });
    expect(first).toMatchObject({ source: 'ctl', applied: 2, removed: 0, total_routes: 4 });
    const second = await store.applySnapshot({
      source: 'ctl',
      routes: [{ domain: 'y.test', upstream: 'h:2', tls: true }],
    });
    expect(second).toMatchObject({ applied: 1, removed: 1, total_routes: 3 });
    expect(domains(store)).toEqual(['file.test=127.0.0.1:1/null', 'other.test=h:1/other', 'y.test=h:2/ctl']);
    const empty = await store.applySnapshot({ source: 'ctl', routes: [] });
    expect(empty).toMatchObject({ applied: 0, removed: 1, total_routes: 2 });
  });

  it('a snapshot takes over a domain another source held', async () => {
    const store = await open();
    await store.upsert({ domain: 'a.test', upstream: 'h:1', tls: false, source: 'old' });
    await store.applySnapshot({ source: 'new', routes: [{ domain: 'a.test', upstream: 'h:2', tls: false }] });
    expect(domains(store)).toEqual(['a.test=h:2/new']);
    const gone = await store.applySnapshot({ source: 'old', routes: [] });
    expect(gone.removed).toBe(0);
  });

  it('the snapshot hash is the same for the same set in another order or case', async () => {
    const store = await open();
    const a = await store.applySnapshot({
      source: 's',
      routes: [
        { domain: 'a.test', upstream: 'H:1', tls: false },
        { domain: 'b.test', upstream: 'h:2', tls: true },
      ],
    });
    const b = await store.applySnapshot({
      source: 's',
      routes: [
        { domain: 'B.test', upstream: 'h:2', tls: true },
        { domain: 'a.test', upstream: 'h:1', tls: false },
      ],
    });
    expect(b.route_hash).toBe(a.route_hash);
    expect(a.route_hash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('persists API routes only, and restores them at the next open', async () => {
    const store = await open([proxyfileRoute('file.test', 1)]);
    await store.upsert({ domain: 'a.test', upstream: 'h:1', tls: true, source: null });
    await store.applySnapshot({ source: 'ctl', routes: [{ domain: 'b.test', upstream: '[::1]:2', tls: false }] });
    await store.close();
    const again = await open([proxyfileRoute('file.test', 1)]);
    expect(domains(again)).toEqual(['a.test=h:1/null', 'b.test=[::1]:2/ctl', 'file.test=127.0.0.1:1/null']);
    // The open folded the journal into the file.
    const file = JSON.parse(await readFile(path.join(dir, 'routes.json'), 'utf8')) as { routes: unknown[] };
    expect(file.routes).toEqual([
      { domain: 'a.test', upstream: 'h:1', tls: true, source: null },
      { domain: 'b.test', upstream: '[::1]:2', tls: false, source: 'ctl' },
    ]);
  });

  it('loses no write among many concurrent ones (group commit)', async () => {
    const store = await open();
    const writes = Array.from({ length: 200 }, (_, i) =>
      store.upsert({ domain: `d${i}.test`, upstream: `h:${i + 1}`, tls: false, source: null }),
    );
    await Promise.all(writes);
    expect(store.list()).toHaveLength(200);
    expect(store.version).toBeLessThan(200);
    const { records } = await new StateFile(path.join(dir, 'routes.json')).load();
    expect(records).toHaveLength(200);
  });

  it('a write that cannot be persisted is rejected and not applied', async () => {
    const store = await open([], path.join(dir, 'gone', 'routes.json'));
    await expect(store.upsert({ domain: 'a.test', upstream: 'h:1', tls: false, source: null })).rejects.toMatchObject({
      code: 'STORE_PERSIST_FAILED',
    });
    expect(store.list()).toEqual([]);
  });

  it('rejects an invalid upstream before queueing', async () => {
    const store = await open();
    expect(() => store.upsert({ domain: 'a.test', upstream: 'no-port', tls: false, source: null })).toThrow(
      /invalid upstream/,
    );
  });

  it('starts empty after setting aside a corrupt state file', async () => {
    const statePath = path.join(dir, 'routes.json');
    const { writeFile } = await import('node:fs/promises');
    await writeFile(statePath, 'not json');
    const { store, recovered } = await RouteStore.open({ stateFile: statePath });
    expect(store.list()).toEqual([]);
    expect(recovered?.reason).toMatch(/not valid JSON/);
    await store.upsert({ domain: 'a.test', upstream: 'h:1', tls: false, source: null });
    expect((await new StateFile(statePath).load()).records).toHaveLength(1);
  });

  describe('precedence (one table: api > proxyfile > labels)', () => {
    const held = (store: RouteStore) => store.routes.map((r) => `${r.domain}:${r.origin}`).sort();

    it.each([
      ['proxyfile', async (store: RouteStore) => store.replaceOrigin('proxyfile', [proxyfileRoute('a.test', 1)])],
      ['labels', async (store: RouteStore) => store.replaceOrigin('labels', [labelsRoute('a.test', 1)])],
      [
        'api',
        async (store: RouteStore) =>
          void (await store.upsert({ domain: 'a.test', upstream: 'h:1', tls: false, source: 'x' })),
      ],
    ])('an admin write replaces a route of origin %s', async (_origin, seed) => {
      const store = await open();
      await seed(store);
      await store.upsert({ domain: 'A.test', upstream: 'h:2', tls: false, source: 'ctl' });
      expect(domains(store)).toEqual(['a.test=h:2/ctl']);
      expect(held(store)).toEqual(['a.test:api']);
    });

    it.each([
      [['proxyfile', 'labels'], 'a.test=127.0.0.1:1/null'],
      [['proxyfile'], 'a.test=127.0.0.1:1/null'],
      [['labels'], 'a.test=10.0.0.1:2/docker'],
    ])('deleting an API route over a domain declared by %j brings back %s', async (declared, back) => {
      const store = await open(declared.includes('proxyfile') ? [proxyfileRoute('a.test', 1)] : []);
      if (declared.includes('labels')) await store.replaceOrigin('labels', [labelsRoute('a.test', 2)]);
      await store.upsert({ domain: 'a.test', upstream: 'h:9', tls: false, source: null });
      expect(await store.remove('a.test')).toBe(true);
      expect(domains(store)).toEqual([back]);
    });

    it('a snapshot dropping an API route brings back the declared route too', async () => {
      const store = await open();
      await store.replaceOrigin('labels', [labelsRoute('a.test', 2)]);
      await store.applySnapshot({ source: 'ctl', routes: [{ domain: 'a.test', upstream: 'h:1', tls: false }] });
      expect(await store.applySnapshot({ source: 'ctl', routes: [] })).toMatchObject({ removed: 1, total_routes: 1 });
      expect(domains(store)).toEqual(['a.test=10.0.0.1:2/docker']);
    });

    it('a snapshot with source "docker" never drops label routes: they change only through container events', async () => {
      const store = await open();
      await store.replaceOrigin('labels', [labelsRoute('a.test', 2), labelsRoute('b.test', 3)]);
      const outcome = await store.applySnapshot({
        source: 'docker',
        routes: [{ domain: 'c.test', upstream: 'h:1', tls: false }],
      });
      expect(outcome).toMatchObject({ applied: 1, removed: 0, total_routes: 3 });
      expect(domains(store)).toEqual(['a.test=10.0.0.1:2/docker', 'b.test=10.0.0.1:3/docker', 'c.test=h:1/docker']);
      // A listed domain is an API write over the label route; dropping it later brings the label route back.
      await store.applySnapshot({ source: 'docker', routes: [{ domain: 'a.test', upstream: 'h:9', tls: false }] });
      expect(domains(store)).toEqual(['a.test=h:9/docker', 'b.test=10.0.0.1:3/docker']);
      expect(await store.applySnapshot({ source: 'docker', routes: [] })).toMatchObject({ removed: 1 });
      expect(domains(store)).toEqual(['a.test=10.0.0.1:2/docker', 'b.test=10.0.0.1:3/docker']);
    });

    it('a Proxyfile reload never takes a domain an admin write holds', async () => {
      const store = await open();
      await store.upsert({ domain: 'a.test', upstream: 'h:9', tls: false, source: null });
      await store.replaceOrigin('proxyfile', [proxyfileRoute('a.test', 1), proxyfileRoute('b.test', 2)]);
      expect(domains(store)).toEqual(['a.test=h:9/null', 'b.test=127.0.0.1:2/null']);
    });

    it('the Proxyfile wins a domain over labels, whichever declares it first', async () => {
      const labelsFirst = await open();
      await labelsFirst.replaceOrigin('labels', [labelsRoute('a.test', 2), labelsRoute('c.test', 3)]);
      await labelsFirst.replaceOrigin('proxyfile', [proxyfileRoute('a.test', 1)]);
      const proxyfileFirst = await open([proxyfileRoute('a.test', 1)]);
      await proxyfileFirst.replaceOrigin('labels', [labelsRoute('a.test', 2), labelsRoute('c.test', 3)]);
      for (const store of [labelsFirst, proxyfileFirst]) {
        expect(domains(store)).toEqual(['a.test=127.0.0.1:1/null', 'c.test=10.0.0.1:3/docker']);
      }
    });

    it('labels fill only domains nobody with a higher rank declares', async () => {
      const store = await open([proxyfileRoute('a.test', 1)]);
      await store.upsert({ domain: 'b.test', upstream: 'h:9', tls: false, source: null });
      // An admin delete of the Proxyfile's route frees the domain, but the Proxyfile still declares it.
      await store.remove('a.test');
      await store.replaceOrigin('labels', [
        labelsRoute('a.test', 2),
        labelsRoute('b.test', 3),
        labelsRoute('c.test', 4),
      ]);
      expect(domains(store)).toEqual(['b.test=h:9/null', 'c.test=10.0.0.1:4/docker']);
    });

    it('a domain the Proxyfile stops declaring goes to the labels that declare it', async () => {
      const store = await open([proxyfileRoute('a.test', 1)]);
      await store.replaceOrigin('labels', [labelsRoute('a.test', 2)]);
      await store.replaceOrigin('proxyfile', []);
      expect(domains(store)).toEqual(['a.test=10.0.0.1:2/docker']);
      await store.replaceOrigin('labels', []);
      expect(domains(store)).toEqual([]);
    });
  });

  describe('issue 20: a write costs what it changes, not the table', () => {
    /** `routes` wrapped so that every property read of them is counted. */
    function watched(routes: RouteSpec[]): { routes: RouteSpec[]; reads: () => number; reset: () => void } {
      let reads = 0;
      const wrapped = routes.map(
        (route) =>
          new Proxy(route, {
            get(target, key, receiver) {
              reads++;
              return Reflect.get(target, key, receiver) as unknown;
            },
          }),
      );
      return {
        routes: wrapped,
        reads: () => reads,
        reset: () => {
          reads = 0;
        },
      };
    }

    it('a write reads no other route: store, state file and data plane', async () => {
      const N = 2000;
      const file = watched(Array.from({ length: N }, (_, i) => proxyfileRoute(`p${i}.test`, 1000 + i)));
      const store = await open(file.routes);
      const global = defaultGlobalOptions();
      global.http_port = 0;
      const plane = await DataPlane.start({ global, sites: [] }, store.routes, {}, { bindHost: '127.0.0.1' });
      try {
        const unsubscribe = store.subscribe((snapshot) => plane.setRoutes(snapshot));
        file.reset();
        await store.upsert({ domain: 'a.test', upstream: 'h:1', tls: false, source: null });
        await store.upsert({ domain: 'p5.test', upstream: 'h:2', tls: false, source: 'ctl' });
        await store.applySnapshot({ source: 'ctl', routes: [{ domain: 'b.test', upstream: 'h:3', tls: false }] });
        await store.remove('a.test');
        expect(store.countByOrigin()).toEqual({ proxyfile: N, labels: 0, api: 1 });
        // p5.test left the API: the Proxyfile's route is back, and the data plane reads that one route's
        // fields (its domain, site, port pin and bind addresses): a few dozen reads, where reading every
        // route once would be at least N = 2,000.
        expect(file.reads()).toBeLessThan(40);
        unsubscribe();
      } finally {
        await plane.close();
      }
    });

    it('publishes each snapshot with its changes from the one before', async () => {
      const store = await open([proxyfileRoute('file.test', 1)]);
      const seen: RouteSnapshot[] = [];
      store.subscribe((snapshot) => seen.push(snapshot));
      await store.upsert({ domain: 'a.test', upstream: 'h:1', tls: false, source: null });
      await store.upsert({ domain: 'file.test', upstream: 'h:2', tls: false, source: null });
      await store.remove('a.test');
      expect(seen.map((s) => s.version)).toEqual([1, 2, 3, 4]);
      expect(seen[0]?.changes).toBeNull();
      for (let i = 1; i < seen.length; i++)
        expect(seen[i]?.changes?.base.deref()).toBe(stateOf(seen[i - 1] as RouteSnapshot));
      expect(seen.slice(1).map((s) => [s.changes?.upserted.map((r) => r.domain), s.changes?.removed])).toEqual([
        [['a.test'], []],
        [['file.test'], []],
        [[], ['a.test']],
      ]);
      expect(seen.at(-1)?.routes.map((r) => `${r.domain}/${r.origin}`)).toEqual(['file.test/api']);
      expect(Object.isFrozen(seen.at(-1)?.routes)).toBe(true);
      expect(store.snapshot).toBe(seen.at(-1));
      // Nothing rides on the array: the delta is the snapshot's, and a structured clone of the routes is plain data.
      expect(Object.getOwnPropertySymbols(seen.at(-1)?.routes)).toEqual([]);
    });

    it('keeps every published snapshot whole while later writes change the table (issue 30)', async () => {
      // 3,000 routes span three chunks of the copy-on-write list: writes replace, remove (the last route moves
      // into the hole) and add, and each snapshot, read only after all of them, is the table of its version.
      const file = Array.from({ length: 3_000 }, (_, i) => proxyfileRoute(`f${i}.test`, i + 1));
      const store = await open(file);
      const seen: { snapshot: RouteSnapshot; expected: string[] }[] = [];
      const table = new Map(file.map((r) => [r.domain, `${r.domain}/proxyfile`]));
      const remember = () => seen.push({ snapshot: store.snapshot, expected: [...table.values()].sort() });
      remember();
      for (let i = 0; i < 30; i++) {
        const replaced = `f${(i * 97) % 3_000}.test`;
        await store.upsert({ domain: replaced, upstream: `h:${i + 1}`, tls: false, source: null });
        table.set(replaced, `${replaced}/api`);
        remember();
        await store.upsert({ domain: `new${i}.test`, upstream: 'h:1', tls: false, source: null });
        table.set(`new${i}.test`, `new${i}.test/api`);
        remember();
        await store.remove(`new${Math.floor(i / 2)}.test`);
        table.delete(`new${Math.floor(i / 2)}.test`);
        remember();
      }
      for (const { snapshot, expected } of seen) {
        expect(snapshot.size).toBe(expected.length);
        expect(snapshot.routes.map((r) => `${r.domain}/${r.origin}`).sort()).toEqual(expected);
      }
      expect(store.size).toBe(table.size);
      expect(store.get('F97.TEST')?.origin).toBe('api');
      expect(store.get('f1.test')?.origin).toBe('proxyfile');
      expect(store.get('new0.test')).toBeUndefined();
    });

    it('a failed state-file write puts the table, the file order and the publications back', async () => {
      const store = await open([proxyfileRoute('file.test', 1)]);
      await store.upsert({ domain: 'b.test', upstream: 'h:1', tls: false, source: null });
      // The journal's name is taken by a directory (and the open journal is closed): the next appends fail.
      await store.close();
      const reopened = await open([proxyfileRoute('file.test', 1)]);
      await mkdir(path.join(dir, 'routes.json.journal'));
      await writeFile(path.join(dir, 'routes.json.journal', 'x'), '');
      await failedWrites(reopened);
    });

    it('lists the published table: a write is not listed while its journal line is written, a failed one never', async () => {
      const store = await open([proxyfileRoute('file.test', 1)]);
      await store.close();
      const reopened = await open([proxyfileRoute('file.test', 1)]);
      await mkdir(path.join(dir, 'routes.json.journal'));
      await writeFile(path.join(dir, 'routes.json.journal', 'x'), '');
      // An API route over the Proxyfile's domain: the listed domains stay the same, the route listed must not.
      const write = reopened.upsert({ domain: 'file.test', upstream: 'h:2', tls: false, source: null });
      // One turn: the batch is applied to the store's table and its journal line is on its way to the disk.
      await new Promise((resolve) => setImmediate(resolve));
      expect(domains(reopened)).toEqual(['file.test=127.0.0.1:1/null']);
      expect(reopened.get('file.test')?.origin).toBe('proxyfile');
      await expect(write).rejects.toMatchObject({ code: 'STORE_PERSIST_FAILED' });
      expect(domains(reopened)).toEqual(['file.test=127.0.0.1:1/null']);
      expect(reopened.countByOrigin()).toMatchObject({ api: 0, proxyfile: 1 });
    });

    async function failedWrites(store: RouteStore): Promise<void> {
      const seen: RouteSnapshot[] = [];
      store.subscribe((snapshot) => seen.push(snapshot));
      const failed = [
        store.upsert({ domain: 'a.test', upstream: 'h:2', tls: false, source: null }),
        store.upsert({ domain: 'file.test', upstream: 'h:3', tls: false, source: null }),
        store.remove('b.test'),
      ];
      for (const write of failed) await expect(write).rejects.toMatchObject({ code: 'STORE_PERSIST_FAILED' });
      expect(domains(store)).toEqual(['b.test=h:1/null', 'file.test=127.0.0.1:1/null']);
      expect(seen).toHaveLength(1);
      await rm(path.join(dir, 'routes.json.journal'), { recursive: true });
      await store.upsert({ domain: 'c.test', upstream: 'h:4', tls: false, source: null });
      const content = await new StateFile(path.join(dir, 'routes.json')).load();
      expect(content.records).toEqual([
        { domain: 'b.test', upstream: 'h:1', tls: false, source: null },
        { domain: 'c.test', upstream: 'h:4', tls: false, source: null },
      ]);
      const last = seen.at(-1);
      expect(last?.changes?.base.deref()).toBe(stateOf(seen[0] as RouteSnapshot));
      expect(last?.changes?.upserted.map((r) => r.domain)).toEqual(['c.test']);
    }

    it('keeps the state file sorted by domain whatever the order of writes', async () => {
      const store = await open();
      const names = ['m', 'c', 'x', 'a', 'q', 'b'];
      for (const name of names)
        await store.upsert({ domain: `${name}.test`, upstream: 'h:1', tls: false, source: null });
      await store.remove('x.test');
      await store.applySnapshot({ source: 'ctl', routes: [{ domain: 'k.test', upstream: 'h:2', tls: true }] });
      await store.close();
      await open();
      const content = JSON.parse(await readFile(path.join(dir, 'routes.json'), 'utf8')) as {
        routes: { domain: string }[];
      };
      expect(content.routes.map((r) => r.domain)).toEqual(['a', 'b', 'c', 'k', 'm', 'q'].map((name) => `${name}.test`));
    });
  });

  describe('the route limit', () => {
    const route = (domain: string) => ({ domain, upstream: 'h:1', tls: false, source: null });
    const limited = (maxRoutes: number, proxyfileRoutes: RouteSpec[] = []) =>
      RouteStore.open({ stateFile: path.join(dir, 'routes.json'), proxyfileRoutes, maxRoutes }).then((r) => r.store);

    it('is 100,000 routes by default', async () => {
      expect(MAX_ROUTES).toBe(100_000);
      expect((await open()).maxRoutes).toBe(100_000);
    });

    it('refuses a write that adds a route past the limit, with a clear error; replacing one still works', async () => {
      const store = await limited(3, [proxyfileRoute('file.test', 1)]);
      await store.upsert(route('a.test'));
      await store.upsert(route('b.test'));
      const refused = store.upsert(route('c.test'));
      await expect(refused).rejects.toMatchObject({
        code: 'STORE_ROUTE_LIMIT',
        message:
          'route limit reached: the table holds at most 3 routes (this write would make it 4); delete routes first',
      });
      await store.upsert({ ...route('a.test'), upstream: 'h:2' });
      await store.upsert(route('file.test'));
      expect(store.list()).toHaveLength(3);
      await store.remove('b.test');
      await store.upsert(route('c.test'));
      expect(domains(store)).toEqual(['a.test=h:2/null', 'c.test=h:1/null', 'file.test=h:1/null']);
    });

    it('fails only the write over the limit in a batch of concurrent writes', async () => {
      const store = await limited(2);
      const results = await Promise.allSettled([
        store.upsert(route('a.test')),
        store.upsert(route('b.test')),
        store.upsert(route('c.test')),
      ]);
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected']);
      expect(store.list()).toHaveLength(2);
      const { records } = await new StateFile(path.join(dir, 'routes.json')).load();
      expect(records.map((r) => r.domain)).toEqual(['a.test', 'b.test']);
    });

    it('counts what a snapshot removes: over the limit it is refused whole', async () => {
      const store = await limited(3);
      await store.applySnapshot({ source: 'ctl', routes: [route('a.test'), route('b.test')] });
      // Swaps b for c and d: 3 routes after, within the limit.
      await store.applySnapshot({ source: 'ctl', routes: [route('a.test'), route('c.test'), route('d.test')] });
      await expect(
        store.applySnapshot({ source: 'ctl', routes: ['a', 'c', 'd', 'e'].map((n) => route(`${n}.test`)) }),
      ).rejects.toMatchObject({ code: 'STORE_ROUTE_LIMIT' });
      expect(domains(store)).toEqual(['a.test=h:1/ctl', 'c.test=h:1/ctl', 'd.test=h:1/ctl']);
    });
  });
});

describe('issue 31: the fleet API routes a node applies (applyFleet, replaceApi, removeDeclared)', () => {
  const api = (domain: string, port: number, source: string | null = null) => ({
    domain,
    upstream: `127.0.0.1:${port}`,
    tls: false,
    source,
  });

  it('applyFleet takes a domain over the Proxyfile and gives it back; deletes touch API routes only', async () => {
    const store = await open([proxyfileRoute('site.test', 9), proxyfileRoute('own.test', 8)]);
    expect(await store.applyFleet([api('site.test', 1, 'ctrl')], [])).toBe(2);
    expect(domains(store)).toEqual(['own.test=127.0.0.1:8/null', 'site.test=127.0.0.1:1/ctrl']);
    // own.test is this node's Proxyfile route: a fleet delete of it leaves it.
    await store.applyFleet([], ['site.test', 'own.test']);
    expect(domains(store)).toEqual(['own.test=127.0.0.1:8/null', 'site.test=127.0.0.1:9/null']);
    // The state file holds the node's copy of the fleet's API routes, nothing else.
    await store.applyFleet([api('kept.test', 2)], []);
    await store.close();
    const again = await open();
    expect(domains(again)).toEqual(['kept.test=127.0.0.1:2/null']);
  });

  it('replaceApi makes the API routes exactly the set, writing only what differs', async () => {
    const store = await open([proxyfileRoute('site.test', 9)]);
    await store.applyFleet([api('same.test', 1), api('gone.test', 2), api('site.test', 3)], []);
    const same = store.routes.find((r) => r.domain === 'same.test');
    const before = store.version;
    await store.replaceApi([api('same.test', 1), api('new.test', 4)]);
    expect(store.version).toBe(before + 1);
    expect(domains(store)).toEqual([
      'new.test=127.0.0.1:4/null',
      'same.test=127.0.0.1:1/null',
      'site.test=127.0.0.1:9/null',
    ]);
    // The unchanged route is the same object: the data plane's update costs what changed.
    expect(store.routes.find((r) => r.domain === 'same.test')).toBe(same);
    expect(store.snapshot.changes?.upserted.map((r) => r.domain).sort()).toEqual(['new.test', 'site.test']);
    expect(store.snapshot.changes?.removed).toEqual(['gone.test']);
    expect(
      store
        .apiRecords()
        .map((r) => r.domain)
        .sort(),
    ).toEqual(['new.test', 'same.test']);
  });

  it('removeDeclared removes a Proxyfile route, never an API route', async () => {
    const store = await open([proxyfileRoute('site.test', 9)]);
    await store.applyFleet([api('fleet.test', 1)], []);
    expect(await store.removeDeclared('fleet.test')).toBe(false);
    expect(await store.removeDeclared('SITE.test')).toBe(true);
    expect(await store.removeDeclared('none.test')).toBe(false);
    expect(domains(store)).toEqual(['fleet.test=127.0.0.1:1/null']);
  });
});
