import { describe, expect, it } from 'vitest';
import { emptySite } from './defaults.js';
import { changesFrom, type RouteSnapshot } from './route-snapshot.js';
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
