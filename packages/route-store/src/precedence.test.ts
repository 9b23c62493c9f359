import { readFile } from 'node:fs/promises';
import { emptySite, type RouteOrigin, type RouteSpec } from '@proxyd/model';
import { describe, expect, it } from 'vitest';
import {
  DECLARED_ORIGINS,
  type Declarations,
  type DeclaredOrigin,
  fallbackRoute,
  mayTake,
  ORIGINS,
} from './precedence.js';

const route = (origin: RouteOrigin): RouteSpec => ({
  domain: 'a.test',
  origin,
  source: origin === 'labels' ? 'docker' : null,
  site: emptySite([{ scheme: null, host: 'a.test', port: null }]),
});

/** Declarations of `a.test` by the given origins. */
const declaring = (...origins: DeclaredOrigin[]): Declarations =>
  new Map(origins.map((origin) => [origin, new Map([['a.test', route(origin)]])]));

describe('ORIGINS', () => {
  it('ranks api over proxyfile over labels; declared origins are listed highest first', () => {
    expect(ORIGINS.api.rank).toBeGreaterThan(ORIGINS.proxyfile.rank);
    expect(ORIGINS.proxyfile.rank).toBeGreaterThan(ORIGINS.labels.rank);
    expect(DECLARED_ORIGINS).toEqual(['proxyfile', 'labels']);
  });

  it('a snapshot removes only API routes: never Proxyfile routes, never label routes', () => {
    expect(ORIGINS.proxyfile.snapshotRemoves).toBe(false);
    expect(ORIGINS.labels.snapshotRemoves).toBe(false);
    expect(ORIGINS.api.snapshotRemoves).toBe(true);
  });
});

describe('mayTake', () => {
  // [origin writing, origin holding the domain (null: free), origins declaring the domain, takes]
  const cases: Array<[RouteOrigin, RouteOrigin | null, DeclaredOrigin[], boolean]> = [
    // An admin write takes the domain whoever holds it.
    ['api', null, [], true],
    ['api', 'api', [], true],
    ['api', 'proxyfile', ['proxyfile'], true],
    ['api', 'labels', ['labels'], true],
    ['api', null, ['proxyfile', 'labels'], true],
    // A Proxyfile reload never takes a domain an admin write holds.
    ['proxyfile', 'api', ['proxyfile'], false],
    ['proxyfile', null, ['proxyfile'], true],
    ['proxyfile', 'proxyfile', ['proxyfile'], true],
    // The Proxyfile wins over labels.
    ['proxyfile', 'labels', ['proxyfile', 'labels'], true],
    // Labels fill only domains nobody with a higher rank declares.
    ['labels', null, ['labels'], true],
    ['labels', 'labels', ['labels'], true],
    ['labels', 'proxyfile', ['proxyfile', 'labels'], false],
    ['labels', 'api', ['labels'], false],
    ['labels', null, ['proxyfile', 'labels'], false],
  ];
  it.each(cases)('%s over a domain held by %s, declared by %j: %s', (origin, held, declared, takes) => {
    expect(mayTake(origin, 'a.test', held ? route(held) : undefined, declaring(...declared))).toBe(takes);
  });
});

describe('fallbackRoute', () => {
  // [origin of the route that left, origins still declaring the domain, origin that comes back (null: none)]
  const cases: Array<[RouteOrigin, DeclaredOrigin[], DeclaredOrigin | null]> = [
    // Deleting an API route brings back the highest-ranked declared route: the Proxyfile's, else the labels'.
    ['api', ['proxyfile', 'labels'], 'proxyfile'],
    ['api', ['proxyfile'], 'proxyfile'],
    ['api', ['labels'], 'labels'],
    ['api', [], null],
    // The Proxyfile no longer declaring a domain hands it to the labels.
    ['proxyfile', ['labels'], 'labels'],
    ['proxyfile', [], null],
    // Deleting a route whose origin still declares the domain brings nothing back.
    ['proxyfile', ['proxyfile', 'labels'], null],
    ['labels', ['labels'], null],
    ['labels', [], null],
  ];
  it.each(cases)('after a %s route leaves, declared by %j: %s', (left, declared, back) => {
    expect(fallbackRoute('a.test', left, declaring(...declared))?.origin ?? null).toBe(back);
  });

  it('looks only at the domain asked for', () => {
    expect(fallbackRoute('b.test', 'api', declaring('proxyfile', 'labels'))).toBeUndefined();
  });
});

describe('README', () => {
  it('shows the precedence table as ORIGINS holds it', async () => {
    const text = await readFile(new URL('../README.md', import.meta.url), 'utf8');
    const rows = [...text.matchAll(/^\| `(\w+)` +\| (\d+) +\|[^|]*\| (yes|no)\b/gm)].map((m) => [
      m[1],
      Number(m[2]),
      m[3] === 'yes',
    ]);
    expect(rows).toEqual(
      Object.entries(ORIGINS)
        .toSorted(([, a], [, b]) => b.rank - a.rank)
        .map(([origin, rule]) => [origin, rule.rank, rule.snapshotRemoves]),
    );
  });
});
