import { readFile } from 'node:fs/promises';
import { Value } from 'typebox/value';
import { describe, expect, it } from 'vitest';
import {
  AUTH,
  expectAuthAndRateLimit,
  expectPortFailuresHidden,
  memoryDiscovery,
  sampleDiscovery,
  testApp,
} from '../memory-ports.test-helpers.js';
import type { DiscoveryStatus } from '../ports.js';
import { DiscoveryResponse } from '../schemas.js';

const get = { method: 'GET' as const, url: '/discovery', headers: AUTH };

const OFF = {
  enabled: false,
  socket: null,
  connected: false,
  api_version: null,
  last_error: null,
  containers: 0,
  warnings: [],
};

describe('GET /discovery', () => {
  it('200 with the port’s state in snake_case, warnings sorted by container then label', async () => {
    const status = sampleDiscovery({
      socket: 'unix:///run/user/1000/podman/podman.sock',
      apiVersion: '4.9.3',
      lastError: 'read ECONNRESET',
      connected: false,
      containers: 7,
      warnings: [
        { container: 'web-2 (9b1c)', label: null, reason: 'on networks a_net, b_net: set proxy.network' },
        { container: 'api-1 (77aa)', label: 'proxy.rate_limit', reason: '"ten/s" is not <n>/s' },
        { container: 'web-2 (9b1c)', label: 'proxy.domain', reason: '"a..b" has an empty label' },
        { container: 'api-1 (77aa)', label: 'proxy.port', reason: '"0" is not 1-65535' },
      ],
    });
    const { app } = testApp({ discovery: memoryDiscovery(status) });
    const res = await app.inject(get);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.headers['access-control-allow-origin']).toBe('null');
    expect(res.json()).toEqual({
      enabled: true,
      socket: 'unix:///run/user/1000/podman/podman.sock',
      connected: false,
      api_version: '4.9.3',
      last_error: 'read ECONNRESET',
      containers: 7,
      warnings: [
        { container: 'api-1 (77aa)', label: 'proxy.port', reason: '"0" is not 1-65535' },
        { container: 'api-1 (77aa)', label: 'proxy.rate_limit', reason: '"ten/s" is not <n>/s' },
        { container: 'web-2 (9b1c)', label: null, reason: 'on networks a_net, b_net: set proxy.network' },
        { container: 'web-2 (9b1c)', label: 'proxy.domain', reason: '"a..b" has an empty label' },
      ],
    });
    expect(Value.Check(DiscoveryResponse, res.json())).toBe(true);
    await app.close();
  });

  it('passes a disabled or disconnected state through as the port reports it', async () => {
    const states: DiscoveryStatus[] = [
      sampleDiscovery({
        enabled: false,
        socket: null,
        connected: false,
        apiVersion: null,
        containers: 0,
        warnings: [],
      }),
      sampleDiscovery({
        socket: null,
        connected: false,
        apiVersion: null,
        lastError: 'no container runtime socket answered',
        containers: 0,
        warnings: [],
      }),
    ];
    for (const state of states) {
      const { app } = testApp({ discovery: memoryDiscovery(state) });
      const body = (await app.inject(get)).json();
      expect(body).toEqual({
        enabled: state.enabled,
        socket: state.socket,
        connected: state.connected,
        api_version: state.apiVersion,
        last_error: state.lastError,
        containers: state.containers,
        warnings: [],
      });
      await app.close();
    }
  });

  it('200 enabled false, zeros and nulls without a discovery port', async () => {
    const { app } = testApp();
    const res = await app.inject(get);
    expect(res.statusCode).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBe('null');
    expect(res.json()).toEqual(OFF);
    expect(Value.Check(DiscoveryResponse, res.json())).toBe(true);
    await app.close();
  });

  it('401 without or with a wrong token (the port is not asked), 429 over the limit', async () => {
    await expectAuthAndRateLimit('/discovery', (rateLimit) => {
      const port = memoryDiscovery(sampleDiscovery());
      return { app: testApp({ discovery: port, rateLimit }).app, port };
    });
  });

  it('405 with Allow: GET, HEAD for other methods', async () => {
    const { app } = testApp({ discovery: memoryDiscovery(sampleDiscovery()) });
    for (const method of ['POST', 'PUT', 'DELETE', 'PURGE', 'OPTIONS'] as const) {
      const res = await app.inject({ method, url: '/discovery', headers: AUTH });
      expect(res.statusCode, method).toBe(405);
      expect(res.headers.allow).toBe('GET, HEAD');
    }
    await app.close();
  });

  it('500 internal error when the port throws: the error is logged, its message never sent', async () => {
    await expectPortFailuresHidden(
      'connect EACCES /var/run/docker.sock',
      404,
      (method, logger) => testApp({ discovery: { status: method }, logger }),
      get,
    );
  });

  it('500 serialize error for a state the schema refuses (a count that is not one)', async () => {
    for (const containers of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      const { app } = testApp({ discovery: memoryDiscovery(sampleDiscovery({ containers })) });
      const res = await app.inject(get);
      expect(res.statusCode, String(containers)).toBe(500);
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      expect((res.json() as { error: string }).error).toMatch(/^serialize error: containers .+ is not a count$/);
      await app.close();
    }
  });

  it('answers the README example for the state it describes', async () => {
    const readme = await readFile(new URL('../../README.md', import.meta.url), 'utf8');
    const block = /<!-- discovery-example -->\s*```json\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(block, 'the README example').toBeDefined();
    const { app } = testApp({ discovery: memoryDiscovery(sampleDiscovery()) });
    expect((await app.inject(get)).json()).toEqual(JSON.parse(block ?? ''));
    await app.close();
    const off = /<!-- discovery-off-example -->\s*```json\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(JSON.parse(off ?? '')).toEqual(OFF);
  });
});
