import {
  type ContainerRuntime,
  type EventWatch,
  startDockerd,
  startPodman,
  type TestContainer,
} from '@proxyd/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, adminCall, waitUntil } from './support/admin.js';
import { type RunningProxyd, request, startProxyd } from './support/proxyd.js';

interface DiscoveryBody {
  connected: boolean;
  containers: number;
  warnings: { container: string; label: string | null; reason: string }[];
}

const RUNTIMES = [
  ['Podman', startPodman],
  ['Docker Engine', startDockerd],
] as const;

describe.each(RUNTIMES)('container labels through a real %s API service (built daemon)', (_name, start) => {
  let runtime: ContainerRuntime;
  let proxyd: RunningProxyd;
  let events: EventWatch;
  let seq = 0;
  const name = (stem: string) => `${stem}-${process.pid}-${++seq}`;

  const via = (host: string, path = '/') => request(proxyd.httpPort, { headers: { host }, path });
  const discovery = async (): Promise<DiscoveryBody> =>
    JSON.parse((await adminCall(proxyd.adminPort, 'GET', '/discovery')).body) as DiscoveryBody;
  const routeOf = async (domain: string) => {
    const routes = JSON.parse((await adminCall(proxyd.adminPort, 'GET', '/routes')).body) as {
      domain: string;
      source: string | null;
    }[];
    return routes.find((r) => r.domain === domain);
  };
  /** The replicas answering for `host` over `n` requests, by page (each container serves its name). */
  const answers = async (host: string, n: number) => {
    const seen = new Map<string, number>();
    for (let i = 0; i < n; i++) {
      const res = await via(host);
      const key = res.status === 200 ? res.body.trim() : `status ${res.status}`;
      seen.set(key, (seen.get(key) ?? 0) + 1);
    }
    return seen;
  };
  const web = (domain: string, extra: Record<string, string> = {}) => ({
    'proxy.domain': domain,
    'proxy.port': '8080',
    ...extra,
  });

  beforeAll(async () => {
    runtime = await start();
    events = await runtime.events();
    proxyd = await startProxyd({
      sites: 'http://shadow.test {\n\trespond "from the Proxyfile"\n}\n',
      env: { PROXY_ADMIN_TOKEN: ADMIN_TOKEN },
      args: ['--docker-host', runtime.dockerHost],
    });
    await waitUntil(async () => (await discovery()).connected, 10_000);
  });

  afterAll(async () => {
    events?.close();
    await proxyd?.stop();
    await runtime?.stop();
  });

  it('a labelled container serves within 1 s of its start event; a replica shares round-robin; stopping one removes it', async () => {
    const domain = `web-${seq}.test`;
    const first = await runtime.run({ name: name('web-a'), labels: web(domain) });
    const started = await events.next((e) => e.Actor.ID === first.id && e.Action === 'start');
    // The runtime's own timestamp of the start (same host clock).
    const seenAt = started.timeNano === undefined ? started.time * 1000 : started.timeNano / 1e6;
    await waitUntil(async () => (await via(domain)).status === 200, 5_000);
    expect(Date.now() - seenAt).toBeLessThan(1_000);
    expect((await via(domain)).body.trim()).toBe(first.name);
    expect(await routeOf(domain)).toMatchObject({ domain, source: 'docker' });

    const second = await runtime.run({ name: name('web-b'), labels: web(domain) });
    await waitUntil(async () => (await answers(domain, 4)).has(second.name), 5_000);
    const spread = await answers(domain, 20);
    expect([...spread.keys()].sort()).toEqual([first.name, second.name].sort());
    expect(spread.get(first.name)).toBe(10);

    await first.stop();
    let last = new Map<string, number>();
    await waitUntil(async () => {
      last = await answers(domain, 4);
      return last.size === 1 && last.has(second.name);
    }, 10_000).catch(async () => {
      throw new Error(
        `after stopping ${first.name}: ${JSON.stringify([...last])}; events ${JSON.stringify(
          events.seen.filter((e) => e.Actor.ID === first.id).map((e) => e.Action),
        )}; discovery ${JSON.stringify(await discovery())}\n${proxyd.output().slice(-3000)}`,
      );
    });
    await second.stop();
    await waitUntil(async () => (await routeOf(domain)) === undefined, 5_000);
  });

  it('an unhealthy replica leaves rotation and comes back when healthy', async () => {
    const domain = `health-${seq}.test`;
    const healthcheck = { test: ['CMD', '/bin/busybox', 'test', '!', '-f', '/tmp/sick'], intervalMs: 500, retries: 1 };
    const steady = await runtime.run({ name: name('steady'), labels: web(domain) });
    const flaky = await runtime.run({ name: name('flaky'), labels: web(domain), healthcheck });
    await waitUntil(async () => (await answers(domain, 4)).size === 2, 10_000);
    await exec(runtime, flaky, ['/bin/busybox', 'touch', '/tmp/sick']);
    await waitUntil(async () => {
      const now = await answers(domain, 6);
      return now.size === 1 && now.has(steady.name);
    }, 15_000);
    await exec(runtime, flaky, ['/bin/busybox', 'rm', '/tmp/sick']);
    await waitUntil(async () => (await answers(domain, 6)).has(flaky.name), 15_000);
    await steady.stop();
    await flaky.stop();
  });

  it('a container on two networks without proxy.network, and invalid labels: warnings and no route', async () => {
    const [one, two] = [await runtime.createNetwork(name('net-a')), await runtime.createNetwork(name('net-b'))];
    const domain = `twonets-${seq}.test`;
    const both = await runtime.run({ name: name('two-nets'), labels: web(domain), network: one.name, created: true });
    await runtime.connectNetwork(both.id, two.name);
    await both.start();
    const bad = await runtime.run({
      name: name('bad-labels'),
      labels: { 'proxy.domain': `bad-${seq}.test`, 'proxy.port': 'eighty', 'proxy.rate_limt': '3/s' },
    });
    await waitUntil(async () => {
      const { warnings } = await discovery();
      return (
        warnings.some((w) => w.container.startsWith(both.name) && w.label === 'proxy.network') &&
        warnings.some((w) => w.container.startsWith(bad.name) && w.label === 'proxy.port')
      );
    }, 10_000);
    const { warnings } = await discovery();
    const network = warnings.find((w) => w.container.startsWith(both.name));
    expect(network?.reason).toContain(one.name);
    expect(network?.reason).toContain(two.name);
    expect(warnings.find((w) => w.label === 'proxy.rate_limt')?.reason).toContain('proxy.rate_limit');
    expect(await routeOf(domain)).toBeUndefined();
    expect(await routeOf(`bad-${seq}.test`)).toBeUndefined();
    expect((await via(domain)).status).toBe(404);
    expect(proxyd.output()).toMatch(/"target":"proxy::docker".*proxy\.port/);
    await both.stop();
    await bad.stop();
  });

  it('proxy.header.*, proxy.rate_limit and proxy.tls off take effect', async () => {
    const domain = `labelled-${seq}.test`;
    const container = await runtime.run({
      name: name('labelled'),
      labels: web(domain, { 'proxy.header.X-Served-By': 'labels', 'proxy.rate_limit': '2/s', 'proxy.tls': 'off' }),
    });
    await waitUntil(async () => (await via(domain)).status === 200, 5_000);
    const res = await via(domain, '/?fresh');
    expect(res.headers['x-served-by']).toBe('labels');
    const burst = await Promise.all(Array.from({ length: 6 }, () => via(domain)));
    expect(burst.some((r) => r.status === 429)).toBe(true);
    // tls off: no certificate is managed for it.
    const certs = JSON.parse((await adminCall(proxyd.adminPort, 'GET', '/certificates')).body) as { name: string }[];
    expect(certs.map((c) => c.name)).not.toContain(domain);
    await container.stop();
  });

  it('a domain the Proxyfile declares wins over labels, with a warning', async () => {
    const container = await runtime.run({ name: name('shadowed'), labels: web('shadow.test') });
    await waitUntil(
      () => /"target":"proxy::docker".*shadow\.test: the Proxyfile declares this domain/.test(proxyd.output()),
      5_000,
    );
    expect((await via('shadow.test')).body).toBe('from the Proxyfile');
    expect(await routeOf('shadow.test')).toMatchObject({ source: null });
    await container.stop();
  });

  it('killing and restarting the runtime service loses no route, and a container started meanwhile is picked up', async () => {
    const domain = `survivor-${seq}.test`;
    const survivor = await runtime.run({ name: name('survivor'), labels: web(domain) });
    // A bound for a loaded machine (the container's start and its first answer), not a speed check.
    await waitUntil(async () => (await via(domain)).status === 200, 20_000);
    events.close();
    await runtime.kill();
    await waitUntil(async () => !(await discovery()).connected, 10_000);
    expect((await via(domain)).body.trim()).toBe(survivor.name);
    await runtime.restart();
    const late = `late-${seq}.test`;
    const newcomer = await runtime.run({ name: name('newcomer'), labels: web(late) });
    await waitUntil(async () => (await via(late)).status === 200, 20_000);
    expect((await via(late)).body.trim()).toBe(newcomer.name);
    expect((await via(domain)).body.trim()).toBe(survivor.name);
    events = await runtime.events();
    await survivor.stop();
    await newcomer.stop();
  });
});

/** Runs `cmd` inside `container` through the Engine API (exec create + start, detached); its effect is what the test waits for. */
async function exec(runtime: ContainerRuntime, container: TestContainer, cmd: string[]): Promise<void> {
  const created = await runtime.api.request('POST', `/containers/${container.id}/exec`, {
    Cmd: cmd,
    AttachStdout: false,
    AttachStderr: false,
  });
  const { Id } = created.body as { Id: string };
  await runtime.api.request('POST', `/exec/${Id}/start`, { Detach: true, Tty: false });
}
