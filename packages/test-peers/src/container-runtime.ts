import http from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { BUSYBOX_IMAGE } from './busybox-image.js';
import type { EngineApi, EventWatch } from './engine-api.js';
import { freePort } from './pebble.js';

/** A Docker-style healthcheck; the runtime runs `test` every `intervalMs`. */
export interface HealthcheckOptions {
  /** Docker's form: `['CMD', 'wget', '-q', '-O-', 'http://127.0.0.1:8080/']` or `['CMD-SHELL', '…']`. */
  test: string[];
  /** Between checks, ms (default 1000). */
  intervalMs?: number;
  /** One check's limit, ms (default 3000). */
  timeoutMs?: number;
  /** Failures in a row before `unhealthy` (default 3). */
  retries?: number;
  /** Failures ignored after start, ms (default 0). */
  startPeriodMs?: number;
}

/** Options of {@link ContainerRuntime.run}. */
export interface RunOptions {
  /** The container's name; its page at `/` is this name and a newline. */
  name: string;
  labels?: Record<string, string>;
  /** `'bridge'` (the default network, the default), `'host'`, or a network's name. */
  network?: string;
  /** httpd's port: default 8080, or in host mode a free loopback port (httpd binds 127.0.0.1 there). */
  port?: number;
  healthcheck?: HealthcheckOptions;
  env?: Record<string, string>;
  /** Replaces the httpd command (e.g. `['sh', '-c', 'exit 3']`); the page is then not awaited. */
  cmd?: string[];
  /** Run under the runtime's init (catatonit / tini) so stop takes ~0.1 s (default true). */
  init?: boolean;
  /** Create only; `start()` later. */
  created?: boolean;
}

/** The subset of `GET /containers/{id}/json` the helpers read. */
export interface ContainerInspect {
  Id: string;
  Name: string;
  State: { Status: string; Running: boolean; ExitCode: number; Health?: { Status: string } };
  Config: { Labels: Record<string, string> | null };
  NetworkSettings: { IPAddress: string; Networks: Record<string, { IPAddress: string; NetworkID?: string }> | null };
}

/** A container made by {@link ContainerRuntime.run}. */
export interface TestContainer {
  readonly id: string;
  readonly name: string;
  /** Where the host reaches it: the address on its network (as of the last start), or 127.0.0.1 in host mode. */
  readonly ip: string;
  readonly port: number;
  /** `http://<ip>:<port>/`. */
  readonly url: string;
  /** Starts it (again) and waits for the page unless `cmd` was given. */
  start(): Promise<void>;
  /** `POST /stop` (SIGTERM, then SIGKILL after `timeoutSeconds`, default 5); no-op when stopped. */
  stop(timeoutSeconds?: number): Promise<void>;
  /** `POST /kill` with `signal` (default SIGKILL). */
  kill(signal?: string): Promise<void>;
  /** Force-removes it. */
  remove(): Promise<void>;
  inspect(): Promise<ContainerInspect>;
}

/** A network made by {@link ContainerRuntime.createNetwork}. */
export interface TestNetwork {
  readonly id: string;
  readonly name: string;
  remove(): Promise<void>;
}

/**
 * A container runtime serving the Docker Engine API on its own unix socket,
 * with its own store, and the local busybox httpd image.
 */
export interface ContainerRuntime {
  readonly kind: 'podman' | 'docker';
  readonly socketPath: string;
  /** `unix://<socketPath>`: the `DOCKER_HOST` of a client. */
  readonly dockerHost: string;
  /** The image `run` uses: `localhost/busybox-httpd:test`. */
  readonly image: string;
  /** The raw Engine API on the socket, for what the helpers do not cover. */
  readonly api: EngineApi;
  /** Creates and starts a busybox httpd serving a page that names it; waits until it answers. */
  run(options: RunOptions): Promise<TestContainer>;
  /** A bridge network of that name. */
  createNetwork(name: string): Promise<TestNetwork>;
  connectNetwork(container: string, network: string): Promise<void>;
  disconnectNetwork(container: string, network: string): Promise<void>;
  /** Subscribes to container events. */
  events(): Promise<EventWatch>;
  /** SIGKILLs the API service (containers keep running), for "runtime restarted" tests. */
  kill(): Promise<void>;
  /** Starts the API service again on the same socket and store (after `kill`, or while running). */
  restart(): Promise<void>;
  /** Removes every container of the store, stops the service and removes the temp dir. Idempotent. */
  stop(): Promise<void>;
  /** The end of the service's log, for failure messages. */
  log(): string;
}

/** GET `url`; the body when 200. */
export function httpGet(url: string, timeoutMs = 2000): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { timeout: timeoutMs, agent: false }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => {
        body += chunk.toString();
      });
      res.on('end', () => (res.statusCode === 200 ? resolve(body) : reject(new Error(`${url}: ${res.statusCode}`))));
    });
    req.on('timeout', () => req.destroy(new Error(`${url}: timed out`)));
    req.on('error', reject);
  });
}

const ms = (n: number) => Math.round(n * 1e6);

/** Runs a healthcheck the runtime would not (podman without systemd); returns a stop function. */
export type HealthcheckDriver = (id: string, intervalMs: number) => () => void;

/** The container helpers every runtime shares, on `api`. */
export function containerHelpers(
  api: EngineApi,
  options: { healthcheckDriver?: HealthcheckDriver } = {},
): Pick<ContainerRuntime, 'run' | 'createNetwork' | 'connectNetwork' | 'disconnectNetwork' | 'events'> & {
  /** Stops the emulated healthchecks. */
  dispose(): void;
} {
  const drivers = new Map<string, () => void>();
  const inspect = async (id: string) => (await api.request('GET', `/containers/${id}/json`)).body as ContainerInspect;
  const addressOf = (info: ContainerInspect, network: string) => {
    if (network === 'host') return '127.0.0.1';
    const networks = info.NetworkSettings.Networks ?? {};
    const ip = networks[network]?.IPAddress || info.NetworkSettings.IPAddress || Object.values(networks)[0]?.IPAddress;
    if (!ip) throw new Error(`container ${info.Name} has no address on ${network}`);
    return ip;
  };

  const run = async (o: RunOptions): Promise<TestContainer> => {
    const network = o.network ?? 'bridge';
    const host = network === 'host';
    const port = o.port ?? (host ? await freePort() : 8080);
    const env = { CONTAINER_NAME: o.name, HTTPD_LISTEN: host ? `127.0.0.1:${port}` : String(port), ...o.env };
    const hc = o.healthcheck;
    const { body } = await api.request('POST', `/containers/create?name=${encodeURIComponent(o.name)}`, {
      Image: BUSYBOX_IMAGE,
      Cmd: o.cmd ?? [
        '/bin/sh',
        '-c',
        'echo "$CONTAINER_NAME" > /www/index.html && exec httpd -f -p "$HTTPD_LISTEN" -h /www',
      ],
      Env: Object.entries(env).map(([k, v]) => `${k}=${v}`),
      Labels: o.labels ?? {},
      ExposedPorts: { [`${port}/tcp`]: {} },
      ...(hc === undefined
        ? {}
        : {
            Healthcheck: {
              Test: hc.test,
              Interval: ms(hc.intervalMs ?? 1000),
              Timeout: ms(hc.timeoutMs ?? 3000),
              Retries: hc.retries ?? 3,
              StartPeriod: ms(hc.startPeriodMs ?? 0),
            },
          }),
      HostConfig: { NetworkMode: network, Init: o.init ?? true },
    });
    const id = (body as { Id: string }).Id;
    let ip = host ? '127.0.0.1' : '';
    const container: TestContainer = {
      id,
      name: o.name,
      get ip() {
        return ip;
      },
      port,
      get url() {
        return `http://${ip.includes(':') ? `[${ip}]` : ip}:${port}/`;
      },
      async start() {
        await api.request('POST', `/containers/${id}/start`);
        ip = addressOf(await inspect(id), network);
        if (hc !== undefined && options.healthcheckDriver && !drivers.has(id)) {
          drivers.set(id, options.healthcheckDriver(id, hc.intervalMs ?? 1000));
        }
        if (o.cmd !== undefined) return;
        for (let attempt = 0; ; attempt++) {
          try {
            await httpGet(container.url, 500);
            return;
          } catch (err) {
            if (attempt >= 200)
              throw new Error(`${o.name} does not answer on ${container.url}: ${(err as Error).message}`);
            await delay(25);
          }
        }
      },
      async stop(timeoutSeconds = 5) {
        await api.request('POST', `/containers/${id}/stop?t=${timeoutSeconds}`, undefined, {
          timeoutMs: (timeoutSeconds + 30) * 1000,
        });
      },
      async kill(signal = 'SIGKILL') {
        await api.request('POST', `/containers/${id}/kill?signal=${signal}`);
      },
      async remove() {
        drivers.get(id)?.();
        drivers.delete(id);
        await api.request('DELETE', `/containers/${id}?force=true`);
      },
      inspect: () => inspect(id),
    };
    if (!o.created) {
      try {
        await container.start();
      } catch (err) {
        await container.remove().catch(() => {});
        throw err;
      }
    }
    return container;
  };

  return {
    run,
    async createNetwork(name) {
      const { body } = await api.request('POST', '/networks/create', { Name: name, Driver: 'bridge' });
      const id = (body as { Id: string }).Id;
      return { id, name, remove: async () => void (await api.request('DELETE', `/networks/${id}`)) };
    },
    async connectNetwork(container, network) {
      await api.request('POST', `/networks/${encodeURIComponent(network)}/connect`, { Container: container });
    },
    async disconnectNetwork(container, network) {
      await api.request('POST', `/networks/${encodeURIComponent(network)}/disconnect`, {
        Container: container,
        Force: true,
      });
    },
    events: () => api.events(),
    dispose() {
      for (const stop of drivers.values()) stop();
      drivers.clear();
    },
  };
}
