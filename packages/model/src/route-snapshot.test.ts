import { describe, expect, it } from 'vitest';
import { CowList } from './cow-list.js';
import { emptySite } from './defaults.js';
import { changesFrom, frozenSnapshot, type RouteSnapshot, sizeOf, stateOf } from './route-snapshot.js';
import type { RouteSpec } from './routes.js';

const route = (domain: string): RouteSpec => ({
  domain,
  origin: 'api',
  source: null,
  site: emptySite([{ scheme: null, host: domain, port: null }]),
});

describe('changesFrom', () => {
  const first: readonly RouteSpec[] = [route('a.test')];
  const added = route('b.test');
  const next: RouteSnapshot = {
    routes: [...first, added],
    version: 2,
    changes: { base: new WeakRef(first), upserted: [added], removed: [] },
  };

  it('gives the changes to a consumer that holds their base', () => {
    expect(changesFrom(first, next)).toBe(next.changes);
  });

  it('gives none to a consumer that holds other routes (an equal copy included): it compares every route', () => {
    expect(changesFrom([], next)).toBeNull();
    expect(changesFrom([...first], next)).toBeNull();
  });

  it('gives none for a snapshot without changes (the first, a worker given the whole table)', () => {
    expect(changesFrom(first, { routes: first, version: 1, changes: null })).toBeNull();
  });
});

describe('frozenSnapshot', () => {
  it('builds its routes on the first read, once, frozen; its identity is its state, not the array', () => {
    const list = new CowList<RouteSpec>();
    for (const domain of ['a.test', 'b.test', 'c.test']) list.push(route(domain));
    const state = list.freeze();
    const snapshot = frozenSnapshot(state, 4, null);
    expect(sizeOf(snapshot)).toBe(3);
    expect(stateOf(snapshot)).toBe(state);
    const routes = snapshot.routes;
    expect(routes.map((r) => r.domain)).toEqual(['a.test', 'b.test', 'c.test']);
    expect(snapshot.routes).toBe(routes);
    expect(Object.isFrozen(routes)).toBe(true);
    expect(Object.isFrozen(snapshot)).toBe(true);
  });

  it('keeps its routes when the list changes after it, and its changes apply to the snapshot before', () => {
    const list = new CowList<RouteSpec>();
    list.push(route('a.test'));
    const first = frozenSnapshot(list.freeze(), 1, null);
    const added = route('b.test');
    list.push(added);
    list.set(0, route('a.test'));
    const second = frozenSnapshot(list.freeze(), 2, {
      base: new WeakRef(stateOf(first)),
      upserted: [added],
      removed: [],
    });
    expect(first.routes.map((r) => r.domain)).toEqual(['a.test']);
    expect(second.routes.map((r) => r.domain)).toEqual(['a.test', 'b.test']);
    expect(changesFrom(stateOf(first), second)).toBe(second.changes);
    // A copy with other changes keeps the identity (a data plane passing the table on for a full compare).
    expect(stateOf({ ...second, changes: null })).toBe(stateOf(second));
    // The array of a snapshot is not its identity.
    expect(changesFrom(first.routes, second)).toBeNull();
  });

  it('gives a literal snapshot (no state) its routes array as identity', () => {
    const routes = [route('a.test')];
    expect(stateOf({ routes, version: 1, changes: null })).toBe(routes);
    expect(sizeOf({ routes, version: 1, changes: null })).toBe(1);
  });
});
