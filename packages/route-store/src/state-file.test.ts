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
    [
      'a field of the wrong type',
      JSON.stringify({ format: STATE_FORMAT, routes: [{ domain: 'a', upstream: 'x:1', tls: 'yes', source: null }] }),
    ],
    [
      'an invalid upstream',
      JSON.stringify({ format: STATE_FORMAT, routes: [{ domain: 'a', upstream: 'nope', tls: false, source: null }] }),
    ],
    [
      'a duplicate domain',
      JSON.stringify({
        format: STATE_FORMAT,
        routes: [
          { domain: 'a', upstream: 'h:1', tls: false, source: null },
          { domain: 'a', upstream: 'h:2', tls: false, source: null },
        ],
      }),
    ],
    [
      'a domain the model refuses (empty label)',
      JSON.stringify({ format: STATE_FORMAT, routes: [{ domain: 'a..b', upstream: 'h:1', tls: false, source: null }] }),
    ],
    [
      'a domain the model refuses (wildcard not leading)',
      JSON.stringify({
        format: STATE_FORMAT,
        routes: [{ domain: 'a.*.b', upstream: 'h:1', tls: false, source: null }],
      }),
    ],
    [
      'an upstream port with a leading zero',
      JSON.stringify({ format: STATE_FORMAT, routes: [{ domain: 'a', upstream: 'h:080', tls: false, source: null }] }),
    ],
  ])('sets aside a corrupt file (%s), keeps a copy and starts empty', async (_name, text) => {
    const file = new StateFile(path.join(dir, 'routes.json'));
    await writeFile(file.path, text);
    const { records, recovered } = await file.load();
    expect(records).toEqual([]);
    expect(recovered?.reason).toBeTruthy();
    expect(recovered?.copy).toMatch(/routes\.json\.corrupt-/);
    expect(await readFile(recovered?.copy as string, 'utf8')).toBe(text);
    expect(await readdir(dir)).not.toContain('routes.json');
  });

  it("names the domain and the model's problem when a stored domain is invalid", async () => {
    const file = new StateFile(path.join(dir, 'routes.json'));
    const routes = [
      { domain: 'a.test', upstream: 'h:1', tls: false, source: null },
      { domain: '-bad.test', upstream: 'h:1', tls: false, source: null },
    ];
    await writeFile(file.path, JSON.stringify({ format: STATE_FORMAT, routes }));
    const { records, recovered } = await file.load();
    expect(records).toEqual([]);
    expect(recovered?.reason).toBe(
      'domain "-bad.test" has a label "-bad" that is not letters, digits, "-" or "_" (or starts or ends with "-")',
    );
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
