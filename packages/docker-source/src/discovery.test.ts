import { defaultGlobalOptions, type RouteSpec } from '@proxyd/model';
import { describe, expect, it } from 'vitest';
import { startDockerDiscovery } from './discovery.js';

function recorder() {
  const lines: { level: string; msg: string }[] = [];
  const log = (level: string) => (_obj: object, msg: string) => lines.push({ level, msg });
  return { lines, logger: { info: log('info'), warn: log('warn'), error: log('error') } };
}

const sink = { replaceOrigin: async (_origin: 'proxyfile' | 'labels', _routes: readonly RouteSpec[]) => {} };

describe('startDockerDiscovery', () => {
  it('--no-docker and `docker off`: one info line, GET /discovery says disabled', async () => {
    for (const [disabled, docker, why] of [
      [true, { enabled: true, host: null, network: null }, '--no-docker'],
      [false, { enabled: false, host: null, network: null }, 'docker off'],
    ] as const) {
      const { lines, logger } = recorder();
      const discovery = await startDockerDiscovery({
        global: { ...defaultGlobalOptions(), docker },
        disabled,
        sink,
        originOf: () => undefined,
        logger,
      });
      expect(discovery.source).toBeNull();
      expect(await discovery.status()).toMatchObject({ enabled: false, socket: null, connected: false });
      expect(lines).toHaveLength(1);
      expect(lines[0]?.msg).toContain(why);
      await discovery.close();
    }
  });

  it('a runtime that does not answer never stops the start: disconnected, the cause in GET /discovery', async () => {
    const { logger } = recorder();
    const discovery = await startDockerDiscovery({
      global: defaultGlobalOptions(),
      host: 'unix:///nonexistent/proxyd-test/docker.sock',
      sink,
      originOf: () => undefined,
      logger,
    });
    const status = await discovery.status();
    expect(status).toMatchObject({
      enabled: true,
      socket: 'unix:///nonexistent/proxyd-test/docker.sock',
      connected: false,
      containers: 0,
    });
    expect(status.lastError).toMatch(/ENOENT|nonexistent/);
    await discovery.close();
  });
});
