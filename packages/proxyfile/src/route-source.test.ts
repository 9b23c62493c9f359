import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { RouteSpec } from '@proxyd/model';
import { type RouteSink, RouteStore } from '@proxyd/route-store';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parse } from './parse.js';
import { createProxyfileSource, loadProxyfile, routesFromConfig } from './route-source.js';

let dir: string;
let file: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'proxyd-source-'));
  file = path.join(dir, 'Proxyfile');
});
afterEach(() => rm(dir, { recursive: true, force: true }));

const site = (host: string, port: number) => `http://${host} {\n\treverse_proxy 127.0.0.1:${port}\n}\n`;

async function setup(text: string) {
  await writeFile(file, text);
  const config = await loadProxyfile(file);
  const { store } = await RouteStore.open({ stateFile: null, proxyfileRoutes: routesFromConfig(config) });
  const source = createProxyfileSource({ path: file, sink: store, running: config });
  return { store, source };
}

/** A sink that records what it is handed. */
function recordingSink(): RouteSink & { calls: Array<[string, string[]]> } {
  const calls: Array<[string, string[]]> = [];
  return {
    calls,
    async replaceOrigin(origin, routes: readonly RouteSpec[]) {
      calls.push([origin, routes.map((r) => r.domain)]);
    },
  };
}

describe('routesFromConfig', () => {
  it('gives one Proxyfile route per address host, lowercase, source null', () => {
    const config = parse('http://A.test, http://b.test {\n\trespond\n}\nhttp://c.test {\n\trespond\n}\n');
    const routes = routesFromConfig(config);
    expect(routes.map((r) => [r.domain, r.origin, r.source])).toEqual([
      ['a.test', 'proxyfile', null],
      ['b.test', 'proxyfile', null],
      ['c.test', 'proxyfile', null],
    ]);
    expect(routes[0]?.site).toBe(config.sites[0]);
    expect(routes[1]?.site).toBe(config.sites[0]);
  });
});

describe('createProxyfileSource', () => {
  it('runs prepare on the parsed config first; a rejection fails the reload and writes nothing', async () => {
    await writeFile(file, site('a.test', 1));
    const running = await loadProxyfile(file);
    const sink = recordingSink();
    const seen: string[][] = [];
    let refuse = true;
    const source = createProxyfileSource({
      path: file,
      sink,
      running,
      async prepare(config) {
        seen.push(config.sites.map((s) => s.addresses[0]?.host ?? ''));
        if (refuse) throw new Error('site "b.test": log file "/x" cannot be opened: EACCES');
      },
    });
    await writeFile(file, site('b.test', 2));
    expect(await source.reload()).toEqual({
      ok: false,
      errorText: 'site "b.test": log file "/x" cannot be opened: EACCES',
    });
    expect(sink.calls).toEqual([]);
    refuse = false;
    expect((await source.reload()).ok).toBe(true);
    expect(sink.calls).toEqual([['proxyfile', ['b.test']]]);
    expect(seen).toEqual([['b.test'], ['b.test']]);
  });

  it('writes the Proxyfile routes through the sink as origin proxyfile', async () => {
    await writeFile(file, site('a.test', 1));
    const running = await loadProxyfile(file);
    const sink = recordingSink();
    const source = createProxyfileSource({ path: file, sink, running });
    expect(sink.calls).toEqual([]);
    await writeFile(file, site('b.test', 2) + site('c.test', 3));
    const result = await source.reload();
    expect(result).toMatchObject({ ok: true, routes: 2, globalChanged: false });
    expect(result.ok ? result.message : '').toBe(`reloaded ${file}: 2 Proxyfile routes`);
    expect(sink.calls).toEqual([['proxyfile', ['b.test', 'c.test']]]);
  });

  it('replaces the Proxyfile routes in the store and keeps API routes', async () => {
    const { store, source } = await setup(site('a.test', 1));
    await store.upsert({ domain: 'api.test', upstream: 'h:1', tls: false, source: null });
    await writeFile(file, site('b.test', 2));
    expect(await source.reload()).toMatchObject({ ok: true, message: `reloaded ${file}: 1 Proxyfile route` });
    expect(store.list().map((r) => r.domain)).toEqual(['api.test', 'b.test']);
  });

  it('a parse failure returns the positioned error text and writes nothing', async () => {
    await writeFile(file, site('a.test', 1));
    const sink = recordingSink();
    const source = createProxyfileSource({ path: file, sink, running: await loadProxyfile(file) });
    await writeFile(file, 'a.test {\n\treverse_proxy nope\n}\n');
    const result = await source.reload();
    expect(result.ok).toBe(false);
    expect(result.ok ? '' : result.errorText).toMatch(
      new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:2:\\d+: `),
    );
    expect(sink.calls).toEqual([]);
  });

  it('a missing file is a failure with the OS error, not a crash', async () => {
    const { source } = await setup(site('a.test', 1));
    await rm(file);
    const result = await source.reload();
    expect(result).toEqual({ ok: false, errorText: expect.stringMatching(/ENOENT/) });
  });

  it('concurrent reloads run one after the other', async () => {
    const { store, source } = await setup(site('a.test', 1));
    await writeFile(file, site('b.test', 2));
    const results = await Promise.all([source.reload(), source.reload(), source.reload()]);
    expect(results.every((r) => r.ok)).toBe(true);
    expect(store.list().map((r) => r.domain)).toEqual(['b.test']);
  });

  it('tells when the global options differ from the running ones', async () => {
    const { source } = await setup(site('a.test', 1));
    await writeFile(file, `{\n\thttp_port 8081\n}\n${site('a.test', 1)}`);
    expect(await source.reload()).toMatchObject({ ok: true, globalChanged: true });
  });

  it('a sink that refuses the write gives a failure, never a rejection', async () => {
    const { store, source } = await setup(site('a.test', 1));
    await store.close();
    expect(await source.reload()).toEqual({
      ok: false,
      errorText: expect.stringMatching(/^reload failed: StoreError: route store is closed/),
    });
  });
});
