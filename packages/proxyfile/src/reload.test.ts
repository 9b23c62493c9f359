import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { RouteStore } from '@proxyd/route-store';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createReloader } from './reload.js';
import { loadProxyfile, routesFromConfig } from './route-source.js';

let dir: string;
let file: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'proxyd-reload-'));
  file = path.join(dir, 'Proxyfile');
});
afterEach(() => rm(dir, { recursive: true, force: true }));

const site = (host: string, port: number) => `http://${host} {\n\treverse_proxy 127.0.0.1:${port}\n}\n`;

async function setup(text: string) {
  await writeFile(file, text);
  const config = await loadProxyfile(file);
  const { store } = await RouteStore.open({ stateFile: null, proxyfileRoutes: routesFromConfig(config) });
  const reloader = createReloader({ configPath: file, store, running: config, logger: pino({ level: 'silent' }) });
  return { store, reloader };
}

describe('createReloader', () => {
  it('replaces the Proxyfile routes and keeps API routes', async () => {
    const { store, reloader } = await setup(site('a.test', 1));
    await store.upsert({ domain: 'api.test', upstream: 'h:1', tls: false, source: null });
    await writeFile(file, site('b.test', 2) + site('c.test', 3));
    expect(await reloader.reload()).toEqual({ ok: true, message: `reloaded ${file}: 2 Proxyfile routes` });
    expect(store.list().map((r) => r.domain)).toEqual(['api.test', 'b.test', 'c.test']);
  });

  it('a parse failure returns the positioned error text and changes nothing', async () => {
    const { store, reloader } = await setup(site('a.test', 1));
    const before = store.version;
    await writeFile(file, 'a.test {\n\treverse_proxy nope\n}\n');
    const result = await reloader.reload();
    expect(result.ok).toBe(false);
    expect(result.ok ? '' : result.errorText).toMatch(
      new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:2:\\d+: `),
    );
    expect(store.version).toBe(before);
    expect(store.list().map((r) => r.domain)).toEqual(['a.test']);
  });
});
