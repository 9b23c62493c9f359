import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ContainerInspect, type ContainerRuntime, httpGet } from './container-runtime.js';
import type { EngineEvent } from './engine-api.js';

const named = (name: string) => (e: EngineEvent) => e.Actor.Attributes.name === name;

/** The contract both runtimes keep, run against `start()`'s. */
export function describeContainerRuntime(title: string, start: () => Promise<ContainerRuntime>): void {
  describe(title, () => {
    let runtime: ContainerRuntime;
    beforeAll(async () => {
      runtime = await start();
    }, 60_000);
    afterAll(() => runtime?.stop(), 60_000);

    it('runs a labelled container in host mode on a free loopback port, serving a page that names it', async () => {
      const web = await runtime.run({ name: 'web-host', labels: { 'proxy.domain': 'host.test' }, network: 'host' });
      expect(web.ip).toBe('127.0.0.1');
      expect(await httpGet(web.url)).toBe('web-host\n');
      const filters = encodeURIComponent(JSON.stringify({ label: ['proxy.domain=host.test'] }));
      const { body } = await runtime.api.request('GET', `/containers/json?filters=${filters}`);
      expect(
        (body as { Id: string; Labels: Record<string, string> }[]).map((c) => [c.Id, c.Labels['proxy.domain']]),
      ).toEqual([[web.id, 'host.test']]);
      await web.remove();
    });

    it('gives a bridge container an address the host reaches; replicas answer apart', async () => {
      const [a, b] = await Promise.all([runtime.run({ name: 'web-a' }), runtime.run({ name: 'web-b' })]);
      expect(a?.ip).not.toBe(b?.ip);
      expect(a?.ip).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
      expect(await httpGet(`http://${a?.ip}:8080/`)).toBe('web-a\n');
      expect(await httpGet(b?.url ?? '')).toBe('web-b\n');
      await Promise.all([a?.remove(), b?.remove()]);
    });

    it('reports start and die, with the labels, on the events stream', async () => {
      const events = await runtime.events();
      try {
        const web = await runtime.run({ name: 'web-events', labels: { 'proxy.domain': 'events.test' } });
        const started = await events.next((e) => named('web-events')(e) && e.Action === 'start');
        expect(started.Actor.ID).toBe(web.id);
        expect(started.Actor.Attributes['proxy.domain']).toBe('events.test');
        const t0 = performance.now();
        await web.stop();
        // Under the init, httpd dies of the SIGTERM at once instead of waiting out the stop timeout.
        expect(performance.now() - t0).toBeLessThan(3000);
        const died = await events.next((e) => named('web-events')(e) && e.Action === 'die');
        expect(died.Actor.Attributes.exitCode).toBe('143');
        await web.remove();
      } finally {
        events.close();
      }
    });

    it('keeps containers running across a killed and restarted API service', async () => {
      const web = await runtime.run({ name: 'web-survivor', labels: { 'proxy.domain': 'survivor.test' } });
      await runtime.kill();
      expect(await runtime.api.ping()).toBe(false);
      expect(await httpGet(web.url)).toBe('web-survivor\n');
      await runtime.restart();
      expect((await web.inspect()).State.Running).toBe(true);
      expect(await httpGet(web.url)).toBe('web-survivor\n');
      const events = await runtime.events();
      try {
        await web.kill();
        expect((await events.next((e) => named('web-survivor')(e) && e.Action === 'die')).Action).toBe('die');
      } finally {
        events.close();
      }
      await web.remove();
    });

    it('creates networks, and connects a container to a second one', async () => {
      const [front, back] = [await runtime.createNetwork('tp-front'), await runtime.createNetwork('tp-back')];
      const web = await runtime.run({ name: 'web-multi', network: 'tp-front' });
      await runtime.connectNetwork(web.id, 'tp-back');
      const networks = (await web.inspect()).NetworkSettings.Networks ?? {};
      expect(Object.keys(networks).sort()).toEqual(['tp-back', 'tp-front']);
      for (const net of Object.values(networks))
        expect(await httpGet(`http://${net.IPAddress}:8080/`)).toBe('web-multi\n');
      await runtime.disconnectNetwork(web.id, 'tp-back');
      await web.remove();
      await Promise.all([front.remove(), back.remove()]);
    });

    it('runs healthchecks and reports health_status', async () => {
      const events = await runtime.events();
      try {
        const web = await runtime.run({
          name: 'web-health',
          healthcheck: { test: ['CMD', 'wget', '-q', '-O', '/dev/null', 'http://127.0.0.1:8080/'], intervalMs: 300 },
        });
        let info: ContainerInspect | undefined;
        for (let i = 0; i < 50 && info?.State.Health?.Status !== 'healthy'; i++) {
          await new Promise((resolve) => setTimeout(resolve, 100));
          info = await web.inspect();
        }
        expect(info?.State.Health?.Status).toBe('healthy');
        await events.next((e) => named('web-health')(e) && e.Action.startsWith('health_status'));
        await web.remove();
      } finally {
        events.close();
      }
    });

    it('reports a container that exits by itself, with its code', async () => {
      const events = await runtime.events();
      try {
        const quitter = await runtime.run({ name: 'quitter', cmd: ['sh', '-c', 'sleep 0.2; exit 3'] });
        const died = await events.next((e) => named('quitter')(e) && e.Action === 'die');
        expect(died.Actor.Attributes.exitCode).toBe('3');
        expect((await quitter.inspect()).State.ExitCode).toBe(3);
        await quitter.remove();
      } finally {
        events.close();
      }
    });
  });

  it(`${title}: stop() removes every container and the temp dir`, async () => {
    const runtime = await start();
    const web = await runtime.run({ name: 'web-left', network: 'host' });
    await runtime.run({ name: 'web-left-bridge' });
    await runtime.stop();
    expect(existsSync(path.dirname(runtime.socketPath))).toBe(false);
    await expect(httpGet(web.url, 500)).rejects.toThrow();
    await runtime.stop(); // idempotent
  }, 60_000);
}
