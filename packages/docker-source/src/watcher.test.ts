/**
 * The watcher against an in-memory fake runtime (`fake-runtime.test-helpers.ts`):
 * a fake so each test can order, repeat and cut events and count inspects.
 * The real runtime path is exercised in `docker-source.podman.test.ts`.
 */
import type { RouteSpec } from '@proxyd/model';
import type { RouteSink } from '@proxyd/route-store';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeRuntime, fakeContainer } from './runtime/fake-runtime.test-helpers.js';
import { type DockerLogger, DockerSource, type DockerSourceOptions } from './watcher.js';

/** A sink that records every write of the labels origin. */
class RecordingSink implements RouteSink {
  readonly writes: RouteSpec[][] = [];
  async replaceOrigin(origin: string, routes: readonly RouteSpec[]): Promise<void> {
    expect(origin).toBe('labels');
    this.writes.push([...routes]);
  }
  /** The last write as `domain → upstreams`. */
  get table(): Record<string, string[]> {
    const out: Record<string, string[]> = {};
    for (const r of this.writes.at(-1) ?? []) {
      const h = r.site.handler;
      out[r.domain] = h?.kind === 'reverse_proxy' ? h.upstreams.map((u) => `${u.host}:${u.port}`) : [];
    }
    return out;
  }
}

class MemoryLogger implements DockerLogger {
  readonly lines: Array<{ level: string; obj: Record<string, unknown>; msg: string }> = [];
  info(obj: object, msg: string) {
    this.lines.push({ level: 'info', obj: obj as Record<string, unknown>, msg });
  }
  warn(obj: object, msg: string) {
    this.lines.push({ level: 'warn', obj: obj as Record<string, unknown>, msg });
  }
  error(obj: object, msg: string) {
    this.lines.push({ level: 'error', obj: obj as Record<string, unknown>, msg });
  }
  of(level: string): string[] {
    return this.lines.filter((l) => l.level === level).map((l) => l.msg);
  }
}

const app = (port = '8080') => ({ 'proxy.domain': 'app.test', 'proxy.port': port });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitFor(check: () => boolean, what: string, timeoutMs = 2000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

let source: DockerSource | null = null;
afterEach(async () => {
  await source?.stop();
  source = null;
});

function setup(options: Partial<DockerSourceOptions> = {}) {
  const runtime = new FakeRuntime();
  const sink = new RecordingSink();
  const logger = new MemoryLogger();
  source = new DockerSource({
    runtime,
    sink,
    logger,
    socket: 'unix:///fake.sock',
    ownNetworks: null,
    debounceMs: 20,
    resyncMs: 0,
    backoffMs: 10,
    maxBackoffMs: 40,
    random: () => 0.5,
    ...options,
  });
  return { runtime, sink, logger, source };
}

describe('DockerSource: start', () => {
  it('lists and inspects the labelled running containers, writes their routes, and reports its status', async () => {
    const { runtime, sink, logger, source } = setup();
    runtime.put(fakeContainer('web1', app()));
    runtime.put(fakeContainer('web2', app()));
    runtime.put(fakeContainer('other3', { 'com.example': 'x' }));
    runtime.put(fakeContainer('stopped4', { 'proxy.domain': 'b.test', 'proxy.port': '80' }, { running: false }));
    await source.start();
    expect(sink.writes).toHaveLength(1);
    expect(sink.table).toEqual({ 'app.test': ['10.0.0.3:8080', '10.0.0.4:8080'] });
    expect(sink.writes[0]?.[0]).toMatchObject({ origin: 'labels', source: 'docker' });
    // Only labelled containers are inspected.
    expect([...runtime.inspects.keys()].map((id) => id.slice(0, 6))).toEqual(['web100', 'web200']);
    expect(source.status()).toMatchObject({
      socket: 'unix:///fake.sock',
      connected: true,
      engine: 'podman',
      version: '4.3.1',
      apiVersion: '1.41',
      containers: 2,
      routes: 1,
      warnings: 0,
      lastError: null,
    });
    expect(logger.of('info')).toEqual(['watching containers through unix:///fake.sock (podman 4.3.1, API 1.41)']);
    expect(logger.lines[0]?.obj.target).toBe('proxy::docker');
  });

  it('a runtime that is down: start resolves, the error is in the status, and it connects later', async () => {
    const { runtime, sink, source } = setup();
    runtime.down = true;
    runtime.put(fakeContainer('web1', app()));
    await source.start();
    expect(source.status()).toMatchObject({ connected: false, lastError: 'connect ECONNREFUSED (fake)' });
    expect(sink.writes).toEqual([]);
    runtime.down = false;
    await waitFor(() => source.status().connected, 'the reconnect');
    await source.settled();
    expect(sink.table).toEqual({ 'app.test': ['10.0.0.3:8080'] });
  });
});

describe('DockerSource: events', () => {
  it('a start event adds the container to its pool; die/remove takes it out; the last one leaving removes the route', async () => {
    const { runtime, sink, source } = setup();
    await source.start();
    expect(sink.writes).toEqual([]);
    const a = runtime.start(fakeContainer('web1', app()));
    await waitFor(() => sink.writes.length === 1, 'the first write');
    expect(sink.table).toEqual({ 'app.test': ['10.0.0.3:8080'] });
    const b = runtime.start(fakeContainer('web2', app()));
    await waitFor(() => sink.writes.length === 2, 'the second write');
    expect(sink.table).toEqual({ 'app.test': ['10.0.0.3:8080', '10.0.0.4:8080'] });
    runtime.remove(a.id);
    await waitFor(() => sink.writes.length === 3, 'the removal');
    expect(sink.table).toEqual({ 'app.test': ['10.0.0.4:8080'] });
    runtime.remove(b.id);
    await waitFor(() => sink.writes.length === 4, 'the last removal');
    expect(sink.table).toEqual({});
  });

  it('debounce: a burst of events is applied with one write, each container inspected once', async () => {
    const { runtime, sink, source } = setup({ debounceMs: 50 });
    await source.start();
    const ids = [1, 2, 3, 4, 5].map((n) => runtime.start(fakeContainer(`web${n}`, app())).id);
    for (const id of ids) runtime.emit({ kind: 'up', id, action: 'restart', labels: app(), timeNano: 0n });
    await waitFor(() => sink.writes.length > 0, 'the write');
    await sleep(80);
    expect(sink.writes).toHaveLength(1);
    expect(sink.table['app.test']).toHaveLength(5);
    for (const id of ids) expect(runtime.inspects.get(id)).toBe(1);
  });

  it('events out of order: the inspected state decides, not the order events arrive in', async () => {
    const { runtime, sink, source } = setup();
    await source.start();
    // Podman sends stop before die, sometimes no stop at all; a health event can come before start is seen.
    const a = runtime.put(fakeContainer('web1', app()));
    runtime.emit({ kind: 'health', id: a.id, health: 'healthy', labels: app(), timeNano: 3n });
    runtime.emit({ kind: 'gone', id: a.id, action: 'die', labels: app(), timeNano: 1n });
    runtime.emit({ kind: 'up', id: a.id, action: 'start', labels: app(), timeNano: 2n });
    await waitFor(() => sink.writes.length === 1, 'the write');
    expect(sink.table).toEqual({ 'app.test': ['10.0.0.3:8080'] });
    // A late `start` of a container already gone is no route either.
    runtime.containers.delete(a.id);
    runtime.emit({ kind: 'gone', id: a.id, action: 'stop', labels: app(), timeNano: 4n });
    runtime.emit({ kind: 'up', id: a.id, action: 'start', labels: app(), timeNano: 2n });
    await waitFor(() => sink.writes.length === 2, 'the removal');
    expect(sink.table).toEqual({});
  });

  it("a gone event whose inspect still says running (Podman's lagging state) is inspected again until it is not", async () => {
    const { runtime, sink, source } = setup();
    await source.start();
    const a = runtime.start(fakeContainer('web1', app()));
    const b = runtime.start(fakeContainer('web2', app()));
    await waitFor(() => sink.table['app.test']?.length === 2, 'both members');
    // `die` arrives while inspect still reports the container running; nothing follows it.
    runtime.emit({ kind: 'gone', id: a.id, action: 'die', labels: app(), timeNano: 0n });
    await waitFor(() => (runtime.inspects.get(a.id) ?? 0) >= 2, 'the inspect after die');
    expect(sink.table['app.test']).toHaveLength(2);
    const info = runtime.containers.get(a.id);
    if (info) runtime.containers.set(a.id, { ...info, running: false });
    await waitFor(() => sink.table['app.test']?.length === 1, 'the re-inspect that sees it stopped', 2_000);
    expect(sink.table).toEqual({ 'app.test': ['10.0.0.4:8080'] });
    // A container that really is running again stops being re-inspected after a few tries.
    runtime.emit({ kind: 'gone', id: b.id, action: 'stop', labels: app(), timeNano: 0n });
    await sleep(250 + 500 + 1000 + 200);
    const tries = runtime.inspects.get(b.id) ?? 0;
    expect(tries).toBeGreaterThanOrEqual(4);
    expect(sink.table).toEqual({ 'app.test': ['10.0.0.4:8080'] });
  });

  it('events of containers without proxy.* labels are not even inspected', async () => {
    const { runtime, source } = setup();
    await source.start();
    const other = runtime.start(fakeContainer('db1', { 'com.example': 'x' }));
    runtime.remove(other.id);
    await sleep(50);
    await source.settled();
    expect(runtime.inspects.get(other.id)).toBeUndefined();
  });

  it('per-container work: an event re-inspects its container only; unchanged routes keep their object', async () => {
    const { runtime, sink, source } = setup();
    const a = runtime.put(fakeContainer('web1', app()));
    runtime.put(fakeContainer('api2', { 'proxy.domain': 'api.test', 'proxy.port': '9000' }));
    await source.start();
    const before = new Map(sink.writes[0]?.map((r) => [r.domain, r]));
    runtime.start(fakeContainer('web3', app()));
    await waitFor(() => sink.writes.length === 2, 'the write');
    expect(runtime.inspects.get(a.id)).toBe(1);
    const after = new Map(sink.writes[1]?.map((r) => [r.domain, r]));
    // The data plane keys pools by handler object: api.test keeps its pool and health state.
    expect(after.get('api.test')).toBe(before.get('api.test'));
    expect(after.get('app.test')).not.toBe(before.get('app.test'));
  });
});

describe('DockerSource: health', () => {
  it('unhealthy leaves rotation, the route stays with an empty pool, healthy brings it back', async () => {
    const { runtime, sink, source } = setup();
    const a = runtime.put(fakeContainer('web1', app(), { health: 'healthy' }));
    const b = runtime.put(fakeContainer('web2', app(), { health: 'healthy' }));
    await source.start();
    runtime.health(a.id, 'unhealthy');
    await waitFor(() => sink.writes.length === 2, 'a out');
    expect(sink.table).toEqual({ 'app.test': ['10.0.0.4:8080'] });
    runtime.health(b.id, 'unhealthy');
    await waitFor(() => sink.writes.length === 3, 'b out');
    expect(sink.table).toEqual({ 'app.test': [] });
    runtime.health(a.id, 'healthy');
    await waitFor(() => sink.writes.length === 4, 'a back');
    expect(sink.table).toEqual({ 'app.test': ['10.0.0.3:8080'] });
  });

  it("Podman's repeated health events: a repeated state is ignored without an inspect", async () => {
    const { runtime, sink, source } = setup();
    const a = runtime.put(fakeContainer('web1', app(), { health: 'healthy' }));
    await source.start();
    for (let i = 0; i < 10; i++) runtime.health(a.id, 'healthy');
    await sleep(50);
    await source.settled();
    expect(runtime.inspects.get(a.id)).toBe(1);
    expect(sink.writes).toHaveLength(1);
  });

  it('Podman 4.3 health events carry no state: inspected, but an unchanged state writes nothing', async () => {
    const { runtime, sink, source } = setup();
    const a = runtime.put(fakeContainer('web1', app(), { health: 'healthy' }));
    await source.start();
    runtime.health(a.id, 'healthy', false);
    await waitFor(() => runtime.inspects.get(a.id) === 2, 'the inspect');
    await source.settled();
    expect(sink.writes).toHaveLength(1);
    runtime.health(a.id, 'unhealthy', false);
    await waitFor(() => sink.writes.length === 2, 'the change');
    expect(sink.table).toEqual({ 'app.test': [] });
  });
});

describe('DockerSource: disconnects', () => {
  it('keeps the routes while the runtime is gone, reconnects with backoff, re-lists and applies the difference', async () => {
    const { runtime, sink, logger, source } = setup();
    const a = runtime.put(fakeContainer('web1', app()));
    runtime.put(fakeContainer('api2', { 'proxy.domain': 'api.test', 'proxy.port': '9000' }));
    await source.start();
    const first = new Map(sink.writes[0]?.map((r) => [r.domain, r]));
    expect(runtime.subscribeCalls).toBe(1);

    runtime.down = true;
    runtime.cut();
    await waitFor(() => !source.status().connected, 'the disconnect');
    expect(source.status().lastError).toBe('event stream failed: socket hang up');
    // While down: one container goes away and one starts, and no event reaches us.
    runtime.containers.delete(a.id);
    runtime.put(fakeContainer('web3', app()));
    await sleep(60);
    expect(sink.writes).toHaveLength(1);
    expect(runtime.subscribeCalls).toBe(1);

    runtime.down = false;
    await waitFor(() => source.status().connected, 'the reconnect');
    await waitFor(() => sink.writes.length === 2, 'the difference');
    expect(sink.table).toEqual({ 'app.test': ['10.0.0.5:8080'], 'api.test': ['10.0.0.4:9000'] });
    // The unchanged route is the same object as before the disconnect.
    expect(sink.writes[1]?.find((r) => r.domain === 'api.test')).toBe(first.get('api.test'));
    expect(source.status()).toMatchObject({ lastError: null, containers: 2 });
    const warns = logger.of('warn');
    expect(warns[0]).toMatch(
      /^container runtime: event stream failed: socket hang up; label routes kept, reconnecting in \d+ ms$/,
    );
  });

  it('a stream that ends cleanly is a disconnect too', async () => {
    const { runtime, source } = setup();
    await source.start();
    runtime.cut(null);
    await waitFor(() => runtime.subscribeCalls === 2, 'the resubscribe');
    await waitFor(() => source.status().connected, 'connected');
  });

  it('reconnect delays grow exponentially with jitter, up to the maximum', async () => {
    const { runtime, logger, source } = setup({ backoffMs: 8, maxBackoffMs: 32, random: () => 1 });
    runtime.down = true;
    await source.start();
    await waitFor(() => logger.of('warn').length >= 5, 'five attempts', 3000);
    const delays = logger.lines.filter((l) => l.level === 'warn').map((l) => l.obj.retry_ms);
    expect(delays.slice(0, 5)).toEqual([8, 16, 32, 32, 32]);
    const half = setup({ backoffMs: 8, maxBackoffMs: 32, random: () => 0 });
    half.runtime.down = true;
    await half.source.start();
    await waitFor(() => half.logger.of('warn').length >= 3, 'three attempts');
    expect(
      half.logger.lines
        .filter((l) => l.level === 'warn')
        .map((l) => l.obj.retry_ms)
        .slice(0, 3),
    ).toEqual([4, 8, 16]);
    await half.source.stop();
  });

  it('a failed inspect keeps the container as it was and is retried', async () => {
    const { runtime, sink, source } = setup();
    const a = runtime.put(fakeContainer('web1', app()));
    await source.start();
    runtime.down = true;
    runtime.emit({ kind: 'gone', id: a.id, action: 'die', labels: app(), timeNano: 0n });
    await waitFor(() => source.status().lastError !== null, 'the failure');
    expect(sink.table).toEqual({ 'app.test': ['10.0.0.3:8080'] });
    runtime.containers.delete(a.id);
    runtime.down = false;
    await waitFor(() => sink.writes.length === 2, 'the retry');
    expect(sink.table).toEqual({});
  });
});

describe('DockerSource: resync, networks, warnings', () => {
  it('the periodic resync catches what no event said', async () => {
    const { runtime, sink, source } = setup({ resyncMs: 40 });
    await source.start();
    runtime.put(fakeContainer('web1', app()));
    await waitFor(() => sink.writes.length === 1, 'the resync', 1000);
    expect(sink.table).toEqual({ 'app.test': ['10.0.0.3:8080'] });
  });

  it('a network connect re-inspects the container: a second network without proxy.network is a warning and no route', async () => {
    const { runtime, sink, source } = setup();
    const a = runtime.put(fakeContainer('web1', app()));
    await source.start();
    runtime.put({
      ...a,
      networks: [{ name: 'backend', ipv4: '172.18.0.3', ipv6: '' }, ...a.networks],
    });
    runtime.emit({ kind: 'network', id: a.id, action: 'connect', network: 'backend', timeNano: 0n });
    await waitFor(() => sink.writes.length === 2, 'the write');
    expect(sink.table).toEqual({});
    expect(source.warnings()).toEqual([
      {
        container: { name: 'web1', id: a.id.slice(0, 12) },
        label: 'proxy.network',
        reason:
          'the container is on several networks ("backend", "bridge") and none is chosen: set proxy.network (or the default network option)',
      },
    ]);
  });

  it('the default network and proxyd’s own networks choose among several', async () => {
    const two = [
      { name: 'backend', ipv4: '172.18.0.3', ipv6: '' },
      { name: 'frontend', ipv4: '172.19.0.3', ipv6: '' },
    ];
    const withDefault = setup({ defaultNetwork: 'frontend' });
    withDefault.runtime.put(fakeContainer('web1', app(), { networks: two }));
    await withDefault.source.start();
    expect(withDefault.sink.table).toEqual({ 'app.test': ['172.19.0.3:8080'] });
    await withDefault.source.stop();
    const shared = setup({ ownNetworks: ['backend'] });
    shared.runtime.put(fakeContainer('web1', app(), { networks: two }));
    await shared.source.start();
    expect(shared.sink.table).toEqual({ 'app.test': ['172.18.0.3:8080'] });
  });

  it('invalid labels: warnings listed and logged once each, no route; fixing them clears the warning', async () => {
    const { runtime, sink, logger, source } = setup();
    const bad = runtime.put(
      fakeContainer('web1', { 'proxy.domain': 'app.test', 'proxy.port': 'http', 'proxy.prot': '1' }),
    );
    runtime.put(fakeContainer('web2', app()));
    await source.start();
    expect(sink.table).toEqual({ 'app.test': ['10.0.0.4:8080'] });
    const id = bad.id.slice(0, 12);
    expect(source.warnings()).toEqual([
      { container: { name: 'web1', id }, label: 'proxy.port', reason: '"http" is not 1-65535' },
      {
        container: { name: 'web1', id },
        label: 'proxy.prot',
        reason: 'is not a proxyd label (did you mean proxy.port?)',
      },
    ]);
    expect(source.status()).toMatchObject({ containers: 2, warnings: 2 });
    await source.resync();
    await source.resync();
    expect(logger.of('warn')).toEqual([
      `container web1 (${id}): label proxy.port "http" is not 1-65535`,
      `container web1 (${id}): label proxy.prot is not a proxyd label (did you mean proxy.port?)`,
    ]);
    expect(logger.lines.find((l) => l.level === 'warn')?.obj).toEqual({
      target: 'proxy::docker',
      container: 'web1',
      container_id: id,
      label: 'proxy.port',
      reason: '"http" is not 1-65535',
    });
    // Docker labels cannot change on a running container: the fixed one is a new container.
    runtime.remove(bad.id);
    runtime.start(fakeContainer('web1', app()));
    await waitFor(() => source.warnings().length === 0, 'the warnings to clear');
    await source.settled();
    expect(sink.table['app.test']).toHaveLength(2);
  });

  it('dropped event lines are logged, and the stream goes on', async () => {
    const { runtime, sink, logger, source } = setup();
    await source.start();
    runtime.emit({ kind: 'invalid', reason: 'event line of 2000000+ bytes dropped (over the 1048576-byte cap)' });
    runtime.start(fakeContainer('web1', app()));
    await waitFor(() => sink.writes.length === 1, 'the write');
    expect(logger.of('warn')).toEqual([
      'container event dropped: event line of 2000000+ bytes dropped (over the 1048576-byte cap)',
    ]);
  });

  it('stop: the stream is closed, later events change nothing, routes stay in the sink', async () => {
    const { runtime, sink, source } = setup();
    runtime.put(fakeContainer('web1', app()));
    await source.start();
    await source.stop();
    expect(runtime.streamOpen).toBe(false);
    expect(source.status().connected).toBe(false);
    runtime.start(fakeContainer('web2', app()));
    await sleep(50);
    expect(sink.writes).toHaveLength(1);
  });
});
