/**
 * The dockerode adapter and the watcher against a REAL Podman API service
 * (`podman system service`, from @proxyd/test-peers), with the route store
 * and proxy-core's data plane on loopback: labelled busybox httpd
 * containers in host network mode become routes that serve traffic.
 */
import http from 'node:http';
import { defaultGlobalOptions } from '@proxyd/model';
import { DataPlane } from '@proxyd/proxy-core';
import { RouteStore } from '@proxyd/route-store';
import { freePort, type ContainerRuntime as Podman, startPodman } from '@proxyd/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DockerodeRuntime } from './runtime/dockerode-runtime.js';
import { DockerSource } from './watcher.js';

interface Answer {
  status: number;
  body: string;
}

function get(port: number, host: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/', headers: { host }, agent: false }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => {
        body += c.toString();
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until<T>(read: () => Promise<T>, ok: (v: T) => boolean, what: string, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (ok(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(value)}`);
    await sleep(20);
  }
}

let podman: Podman;
let runtime: DockerodeRuntime;
let store: RouteStore;
let plane: DataPlane;
let source: DockerSource;
let port: number;

beforeAll(async () => {
  podman = await startPodman();
  runtime = new DockerodeRuntime({ host: { kind: 'unix', path: podman.socketPath } });
  store = (await RouteStore.open({ stateFile: null })).store;
  const global = defaultGlobalOptions();
  global.http_port = 0;
  plane = await DataPlane.start({ global, sites: [] }, [], {}, { bindHost: '127.0.0.1' });
  store.subscribe((snapshot) => plane.setRoutes(snapshot));
  port = plane.httpAddress.port;
  source = new DockerSource({
    runtime,
    sink: store,
    socket: podman.dockerHost,
    ownNetworks: null,
    resyncMs: 0,
    backoffMs: 100,
    maxBackoffMs: 400,
  });
  await source.start();
}, 90_000);

afterAll(async () => {
  await source?.stop();
  await runtime?.close();
  await plane?.close();
  await podman?.stop();
}, 60_000);

/** A host-network busybox httpd on a free loopback port, with `labels` and `proxy.port` set to that port. */
async function web(name: string, labels: Record<string, string>, extra: Partial<Parameters<Podman['run']>[0]> = {}) {
  const p = await freePort();
  return podman.run({ name, network: 'host', port: p, labels: { 'proxy.port': String(p), ...labels }, ...extra });
}

describe('DockerodeRuntime on Podman', () => {
  it('pings, reads the version, lists, inspects, and says null for a container that does not exist', async () => {
    await runtime.ping();
    expect(await runtime.version()).toMatchObject({ engine: 'podman', apiVersion: expect.stringMatching(/^1\.\d+$/) });
    const c = await web('inspect-me', { 'proxy.domain': 'inspect.test', 'proxy.tls': 'off' });
    try {
      const listed = (await runtime.listRunning()).find((s) => s.id === c.id);
      expect(listed).toMatchObject({ name: 'inspect-me', labels: { 'proxy.domain': 'inspect.test' } });
      expect(await runtime.inspect(c.id)).toMatchObject({
        id: c.id,
        name: 'inspect-me',
        running: true,
        health: 'none',
        networkMode: 'host',
        networks: [],
        labels: { 'proxy.domain': 'inspect.test', 'proxy.port': String(c.port) },
      });
    } finally {
      await c.remove();
    }
    expect(await runtime.inspect('0'.repeat(64))).toBeNull();
  });

  it('a bridge container: its network, address and exposed port (Podman reports no exposed port in host mode)', async () => {
    const c = await podman.run({ name: 'bridge-me', labels: { 'proxy.domain': 'bridge.test' } });
    try {
      const info = await runtime.inspect(c.id);
      expect(info).toMatchObject({ networkMode: 'bridge', exposedPorts: [8080] });
      expect(info?.networks).toEqual([{ name: 'podman', ipv4: c.ip, ipv6: '' }]);
    } finally {
      await c.remove();
    }
  });

  it('streams start, die and remove as normalised events', async () => {
    const stream = await runtime.subscribe();
    const seen: string[] = [];
    const reading = (async () => {
      for await (const e of stream) {
        if (e.kind !== 'invalid' && 'action' in e) seen.push(`${e.kind}:${e.action}`);
        if (seen.includes('gone:remove')) break;
      }
    })();
    const c = await web('events-me', { 'proxy.domain': 'events.test' });
    await c.stop();
    await c.remove();
    await Promise.race([reading, sleep(5000)]);
    stream.close();
    expect(seen).toEqual(expect.arrayContaining(['up:start', 'gone:die', 'gone:remove']));
  });
});

describe('DockerSource on Podman', () => {
  it('a labelled container serves within 1 s of starting; two share the domain round-robin; stopping one removes it', async () => {
    const a = await web('rr-a', { 'proxy.domain': 'rr.test', 'proxy.tls': 'off' });
    const t0 = performance.now();
    await until(
      () => get(port, 'rr.test'),
      (r) => r.status === 200,
      'rr-a to serve',
    );
    expect(performance.now() - t0).toBeLessThan(1000);
    const b = await web('rr-b', { 'proxy.domain': 'rr.test', 'proxy.tls': 'off' });
    await until(
      () => Promise.all([get(port, 'rr.test'), get(port, 'rr.test')]),
      (rs) => new Set(rs.map((r) => r.body)).size === 2,
      'both members',
    );
    const bodies = [];
    for (let i = 0; i < 4; i++) bodies.push((await get(port, 'rr.test')).body);
    expect(bodies.toSorted()).toEqual(['rr-a\n', 'rr-a\n', 'rr-b\n', 'rr-b\n']);
    expect(store.list().find((r) => r.domain === 'rr.test')).toMatchObject({ source: 'docker', tls: false });

    await a.stop();
    await until(
      () => Promise.all([get(port, 'rr.test'), get(port, 'rr.test')]),
      (rs) => rs.every((r) => r.body === 'rr-b\n'),
      'rr-a to leave',
    );
    await a.remove();
    await b.remove();
    await until(
      () => get(port, 'rr.test'),
      (r) => r.status === 404,
      'the route to go',
    );
  });

  it('an unhealthy member leaves rotation; with none left the route answers 503, not 404', async () => {
    const labels = { 'proxy.domain': 'health.test', 'proxy.tls': 'off' };
    const good = await web('hc-good', labels, { healthcheck: { test: ['CMD', 'true'], intervalMs: 300, retries: 1 } });
    const bad = await web('hc-bad', labels, { healthcheck: { test: ['CMD', 'false'], intervalMs: 300, retries: 1 } });
    try {
      await until(
        () => get(port, 'health.test'),
        (r) => r.body === 'hc-good\n',
        'the healthy member',
      );
      await until(
        async () => (await runtime.inspect(bad.id))?.health,
        (h) => h === 'unhealthy',
        'hc-bad to be unhealthy',
      );
      await source.settled();
      for (let i = 0; i < 4; i++) expect((await get(port, 'health.test')).body).toBe('hc-good\n');
      await good.remove();
      // A request racing the removal may meet the dead member first (502); then the empty pool answers.
      const empty = await until(
        () => get(port, 'health.test'),
        (r) => r.status === 503,
        'the empty pool',
      );
      expect(empty).toEqual({ status: 503, body: 'no healthy upstream\n' });
    } finally {
      await good.remove().catch(() => {});
      await bad.remove();
    }
  });

  it('a bridge container without proxy.port: its only network and its one exposed port', async () => {
    const c = await podman.run({ name: 'bridged', labels: { 'proxy.domain': 'bridged.test', 'proxy.tls': 'off' } });
    try {
      const answer = await until(
        () => get(port, 'bridged.test'),
        (r) => r.status === 200,
        'bridged to serve',
      );
      expect(answer.body).toBe('bridged\n');
      expect(store.list().find((r) => r.domain === 'bridged.test')?.upstream).toBe(`${c.ip}:8080`);
    } finally {
      await c.remove();
    }
  });

  it('invalid labels: a warning naming the container and label, and no route', async () => {
    const c = await podman.run({
      name: 'bad-labels',
      network: 'host',
      labels: { 'proxy.domain': 'bad.test', 'proxy.port': 'http', 'proxy.rate-limit': '5/s' },
    });
    try {
      await until(
        async () => source.warnings().filter((w) => w.container.name === 'bad-labels'),
        (ws) => ws.length === 2,
        'the warnings',
      );
      expect(source.warnings().filter((w) => w.container.name === 'bad-labels')).toEqual([
        {
          container: { name: 'bad-labels', id: c.id.slice(0, 12) },
          label: 'proxy.port',
          reason: '"http" is not 1-65535',
        },
        {
          container: { name: 'bad-labels', id: c.id.slice(0, 12) },
          label: 'proxy.rate-limit',
          reason: 'is not a proxyd label (did you mean proxy.rate_limit?)',
        },
      ]);
      expect(store.list().some((r) => r.domain === 'bad.test')).toBe(false);
    } finally {
      await c.remove();
    }
    await until(
      async () => source.warnings().length,
      (n) => n === 0,
      'the warnings to clear',
    );
  });

  it('a killed API service: routes kept; after its restart the source reconnects and follows events again', async () => {
    const a = await web('survivor', { 'proxy.domain': 'survivor.test', 'proxy.tls': 'off' });
    await until(
      () => get(port, 'survivor.test'),
      (r) => r.status === 200,
      'survivor to serve',
    );
    await podman.kill();
    await until(
      async () => source.status().connected,
      (c) => !c,
      'the disconnect',
    );
    expect(await get(port, 'survivor.test')).toEqual({ status: 200, body: 'survivor\n' });
    await podman.restart();
    await until(
      async () => source.status().connected,
      (c) => c,
      'the reconnect',
      10_000,
    );
    expect(await get(port, 'survivor.test')).toEqual({ status: 200, body: 'survivor\n' });
    const b = await web('newcomer', { 'proxy.domain': 'newcomer.test', 'proxy.tls': 'off' });
    await until(
      () => get(port, 'newcomer.test'),
      (r) => r.status === 200,
      'newcomer to serve',
    );
    await a.remove();
    await b.remove();
    await until(
      () => get(port, 'survivor.test'),
      (r) => r.status === 404,
      'survivor to go',
    );
  });
});
