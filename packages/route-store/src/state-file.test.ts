import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { STATE_FORMAT, StateFile } from './state-file.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'proxyd-state-'));
});
afterEach(() => rm(dir, { recursive: true, force: true }));

describe('StateFile', () => {
  it('reads a missing file as no routes', async () => {
    const file = new StateFile(path.join(dir, 'routes.json'));
    expect(await file.load()).toEqual({ records: [], recovered: null });
  });

  it('round-trips routes through an atomic write and leaves no temp file', async () => {
    const file = new StateFile(path.join(dir, 'routes.json'));
    const records = [
      { domain: 'a.test', upstream: '127.0.0.1:8080', tls: false, source: null },
      { domain: '*.b.test', upstream: '[::1]:443', tls: true, source: 'ctrl' },
    ];
    await file.write(records);
    expect((await file.load()).records).toEqual(records);
    expect(await readdir(dir)).toEqual(['routes.json']);
    const json = JSON.parse(await readFile(file.path, 'utf8')) as { format: string };
    expect(json.format).toBe(STATE_FORMAT);
  });

  it('round-trips a file of several write batches, one route per line', async () => {
    const file = new StateFile(path.join(dir, 'routes.json'));
    const records = Array.from({ length: 2500 }, (_, i) => ({
      domain: `r${String(i).padStart(4, '0')}.test`,
      upstream: `10.0.0.1:${1000 + i}`,
      tls: i % 2 === 0,
      source: i % 3 === 0 ? null : 'ctl',
    }));
    await file.write(records);
    expect((await file.load()).records).toEqual(records);
    const text = await readFile(file.path, 'utf8');
    expect(text.split('\n')).toHaveLength(2500 + 3);
    await file.write([]);
    expect(await readFile(file.path, 'utf8')).toBe(`{"format":"${STATE_FORMAT}","routes":[\n]}\n`);
    expect((await file.load()).records).toEqual([]);
  });

  it.each([
    ['truncated JSON', '{"format":"proxyd-routes/1","routes":[{"dom'],
    ['wrong format tag', JSON.stringify({ format: 'other', routes: [] })],
    ['routes that are not a list', JSON.stringify({ format: STATE_FORMAT, routes: { a: 1 } })],
    ['a field beside format and routes', JSON.stringify({ format: STATE_FORMAT, routes: [], extra: true })],
  ])('sets aside an unusable file (%s), keeps a copy and starts empty', async (_name, text) => {
    const file = new StateFile(path.join(dir, 'routes.json'));
    await writeFile(file.path, text);
    const { records, recovered } = await file.load();
    expect(records).toEqual([]);
    expect(recovered?.reason).toBeTruthy();
    expect(recovered).toMatchObject({ kept: 0, rejected: [] });
    expect(recovered?.copy).toMatch(/routes\.json\.corrupt-/);
    expect(await readFile(recovered?.copy as string, 'utf8')).toBe(text);
    expect(await readdir(dir)).not.toContain('routes.json');
  });

  // Issue 20: "domains in the state file are not validated at start". Each
  // route is checked as the admin API checks a write; a bad one is left out
  // and reported, the good ones still load, and the file as it was is kept.
  const good = { domain: 'good.test', upstream: '127.0.0.1:8080', tls: false, source: 'ctl' };
  it.each([
    [
      'a field of the wrong type',
      { domain: 'a.test', upstream: 'h:1', tls: 'yes', source: null },
      'a.test',
      'does not match proxyd-routes/1: /tls must be boolean',
    ],
    [
      'a field the format does not have',
      { domain: 'a.test', upstream: 'h:1', tls: false, source: null, port: 1 },
      'a.test',
      'does not match proxyd-routes/1: / must not have additional properties ("port")',
    ],
    ['a route that is not an object', 'a.test', null, 'does not match proxyd-routes/1: / must be object'],
    [
      'an upstream that is not host:port',
      { domain: 'a.test', upstream: 'nope', tls: false, source: null },
      'a.test',
      'upstream "nope" is not host:port',
    ],
    [
      'an upstream port with a leading zero',
      { domain: 'a.test', upstream: 'h:080', tls: false, source: null },
      'a.test',
      'upstream "h:080" has a port "080" that has a leading zero',
    ],
    [
      'a numeric upstream host',
      { domain: 'a.test', upstream: '127.1:80', tls: false, source: null },
      'a.test',
      'upstream "127.1:80" has a host "127.1" that ends in a number but is not a dotted-quad IPv4 address (four parts 0-255, no leading zeros)',
    ],
    [
      'a domain that repeats one before it',
      { ...good, upstream: 'h:2' },
      'good.test',
      'domain "good.test" appears twice',
    ],
    [
      'an empty label',
      { domain: 'a..b', upstream: 'h:1', tls: false, source: null },
      'a..b',
      'domain "a..b" has an empty label',
    ],
    [
      'a wildcard not leading',
      { domain: 'a.*.b', upstream: 'h:1', tls: false, source: null },
      'a.*.b',
      'domain "a.*.b" has a wildcard that is not a leading "*." label',
    ],
    [
      'a label starting with "-"',
      { domain: '-bad.test', upstream: 'h:1', tls: false, source: null },
      '-bad.test',
      'domain "-bad.test" has a label "-bad" that is not letters, digits, "-" or "_" (or starts or ends with "-")',
    ],
    [
      'an uppercase domain',
      { domain: 'A.test', upstream: 'h:1', tls: false, source: null },
      'A.test',
      'domain "A.test" is not lowercase',
    ],
    [
      'a non-ASCII domain',
      { domain: '\u212a.test', upstream: 'h:1', tls: false, source: null },
      '\u212a.test',
      'domain "\u212a.test" is not lowercase',
    ],
    [
      'a source with a space',
      { domain: 'a.test', upstream: 'h:1', tls: false, source: 'my ctl' },
      'a.test',
      'source "my ctl" is not 1-128 visible ASCII characters',
    ],
    [
      'an empty source',
      { domain: 'a.test', upstream: 'h:1', tls: false, source: '' },
      'a.test',
      'source "" is not 1-128 visible ASCII characters',
    ],
  ])(
    'leaves out a route with %s, loads the others and keeps the file as it was',
    async (_name, bad, domain, problem) => {
      const file = new StateFile(path.join(dir, 'routes.json'));
      const other = { domain: 'z.test', upstream: '[::1]:443', tls: true, source: null };
      const text = JSON.stringify({ format: STATE_FORMAT, routes: [good, bad, other] });
      await writeFile(file.path, text);
      const { records, recovered } = await file.load();
      expect(records).toEqual([good, other]);
      expect(recovered).toEqual({
        reason: `1 of 3 routes left out: route 1: ${problem}`,
        copy: expect.stringMatching(/routes\.json\.corrupt-/),
        kept: 2,
        rejected: [{ index: 1, domain, problem }],
      });
      // The copy is the file as it was; the file now holds the valid routes, so the next start is clean.
      expect(await readFile(recovered?.copy as string, 'utf8')).toBe(text);
      expect(await file.load()).toEqual({ records: [good, other], recovered: null });
      expect((await readdir(dir)).sort()).toEqual(['routes.json', path.basename(recovered?.copy as string)]);
    },
  );

  it('names the first three problems and counts the rest', async () => {
    const file = new StateFile(path.join(dir, 'routes.json'));
    const routes = ['a..b', 'c..d', 'e..f', 'g..h', 'i..j'].map((domain) => ({
      domain,
      upstream: 'h:1',
      tls: false,
      source: null,
    }));
    await writeFile(file.path, JSON.stringify({ format: STATE_FORMAT, routes }));
    const { records, recovered } = await file.load();
    expect(records).toEqual([]);
    expect(recovered?.kept).toBe(0);
    expect(recovered?.rejected.map((r) => r.domain)).toEqual(['a..b', 'c..d', 'e..f', 'g..h', 'i..j']);
    expect(recovered?.reason).toBe(
      '5 of 5 routes left out: route 0: domain "a..b" has an empty label; route 1: domain "c..d" has an empty label;' +
        ' route 2: domain "e..f" has an empty label; and 2 more (see the copy)',
    );
    expect(await readFile(file.path, 'utf8')).toBe(`{"format":"${STATE_FORMAT}","routes":[\n]}\n`);
  });

  it('loads wildcard, underscore and all-digit domains the model accepts', async () => {
    const file = new StateFile(path.join(dir, 'routes.json'));
    const records = ['*.a.test', '_acme.b.test', 'my_app', '10.0.0.1'].map((domain) => ({
      domain,
      upstream: '127.0.0.1:80',
      tls: false,
      source: null,
    }));
    await writeFile(file.path, JSON.stringify({ format: STATE_FORMAT, routes: records }));
    expect(await file.load()).toEqual({ records, recovered: null });
  });

  it('removes temp files left by an interrupted write', async () => {
    const file = new StateFile(path.join(dir, 'routes.json'));
    await writeFile(path.join(dir, 'routes.json.tmp-123-0'), '{"partial');
    await file.load();
    expect(await readdir(dir)).toEqual([]);
  });

  it('rejects with STORE_PERSIST_FAILED when the directory is gone', async () => {
    const file = new StateFile(path.join(dir, 'missing', 'routes.json'));
    await expect(file.write([])).rejects.toMatchObject({ code: 'STORE_PERSIST_FAILED' });
  });
});
