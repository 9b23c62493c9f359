import Docker from 'dockerode';
import { DockerErrorCode, DockerSourceError } from '../errors.js';
import { DEFAULT_MAX_LINE_BYTES, LineSplitter } from './event-lines.js';
import { parseEvent } from './events.js';
import type {
  ContainerHealth,
  ContainerInfo,
  ContainerNetwork,
  ContainerRuntime,
  ContainerSummary,
  EventStream,
  RuntimeEvent,
  RuntimeVersion,
} from './runtime.js';
import type { DockerHost } from './socket.js';

/** Options of {@link DockerodeRuntime}. */
export interface DockerodeRuntimeOptions {
  /** Where the Engine API listens (from `resolveDockerHost`). */
  host: DockerHost;
  /** Deadline of one list, inspect, ping or version call, ms (default 10000). The event stream has none. */
  requestTimeoutMs?: number;
  /** Longest event line kept, bytes (default 1 MiB); a longer one is dropped with an `invalid` event. */
  maxLineBytes?: number;
}

/**
 * {@link ContainerRuntime} over dockerode, for Docker Engine and Podman's
 * compatible service alike. The only file that imports dockerode.
 */
export class DockerodeRuntime implements ContainerRuntime {
  readonly #docker: Docker;
  readonly #timeoutMs: number;
  readonly #maxLine: number;
  readonly #streams = new Set<EventStream>();
  #closed = false;

  constructor(options: DockerodeRuntimeOptions) {
    const { host } = options;
    // Always an explicit address: docker-modem would otherwise read DOCKER_HOST itself.
    this.#docker =
      host.kind === 'unix'
        ? new Docker({ socketPath: host.path })
        : new Docker({ host: host.host, port: host.port, protocol: 'http' });
    this.#timeoutMs = options.requestTimeoutMs ?? 10_000;
    this.#maxLine = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
  }

  async ping(): Promise<void> {
    // dockerode 5 takes `{ abortSignal }` here too; @types/dockerode (4.x) does not say so yet.
    const ping = this.#docker.ping as unknown as (opts: { abortSignal: AbortSignal }) => Promise<unknown>;
    await this.#call('ping', (abortSignal) => ping.call(this.#docker, { abortSignal }));
  }

  async version(): Promise<RuntimeVersion> {
    const version = this.#docker.version as unknown as (opts: {
      abortSignal: AbortSignal;
    }) => Promise<Docker.DockerVersion>;
    const v = await this.#call('version', (abortSignal) => version.call(this.#docker, { abortSignal }));
    return toVersion(v);
  }

  async listRunning(): Promise<ContainerSummary[]> {
    const list = await this.#call('list containers', (abortSignal) => this.#docker.listContainers({ abortSignal }));
    return list.map((c) => ({
      id: c.Id,
      name: (c.Names?.[0] ?? '').replace(/^\//, ''),
      labels: c.Labels ?? {},
    }));
  }

  async inspect(id: string): Promise<ContainerInfo | null> {
    try {
      const raw = await this.#call(`inspect ${id.slice(0, 12)}`, (abortSignal) =>
        this.#docker.getContainer(id).inspect({ abortSignal }),
      );
      return toInfo(raw);
    } catch (err) {
      if (err instanceof DockerSourceError && err.status === 404) return null;
      throw err;
    }
  }

  async subscribe(): Promise<EventStream> {
    this.#checkOpen();
    // type=container and type=network only: Podman's key-only label filter matches no event at all,
    // so labels are filtered by the watcher.
    const res = (await this.#call(
      'events',
      () => this.#docker.getEvents({ filters: { type: ['container', 'network'] } }),
      false,
    )) as NodeJS.ReadableStream & { destroy(): void };
    let closed = false;
    const splitter = new LineSplitter(this.#maxLine);
    const max = this.#maxLine;
    const streams = this.#streams;
    const stream: EventStream = {
      close() {
        closed = true;
        streams.delete(stream);
        res.destroy();
      },
      async *[Symbol.asyncIterator](): AsyncGenerator<RuntimeEvent> {
        try {
          for await (const chunk of res) {
            const { lines, dropped } = splitter.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
            for (const bytes of dropped) {
              yield { kind: 'invalid', reason: `event line of ${bytes}+ bytes dropped (over the ${max}-byte cap)` };
            }
            for (const line of lines) {
              const event = parseEvent(line);
              if (event) yield event;
            }
          }
        } catch (err) {
          if (closed) return;
          throw new DockerSourceError(DockerErrorCode.STREAM_ENDED, `event stream failed: ${messageOf(err)}`, {
            cause: err,
          });
        } finally {
          streams.delete(stream);
        }
      },
    };
    streams.add(stream);
    return stream;
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const stream of this.#streams) stream.close();
    this.#streams.clear();
  }

  #checkOpen(): void {
    if (this.#closed) throw new DockerSourceError(DockerErrorCode.CLOSED, 'container runtime client is closed');
  }

  async #call<T>(what: string, run: (signal: AbortSignal) => Promise<T>, deadline = true): Promise<T> {
    this.#checkOpen();
    const signal = deadline ? AbortSignal.timeout(this.#timeoutMs) : new AbortController().signal;
    try {
      return await run(signal);
    } catch (err) {
      throw toError(what, err);
    }
  }
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** dockerode's errors: `statusCode` + `json.message` for an answer, a Node error (`code`) for no answer. */
function toError(what: string, err: unknown): DockerSourceError {
  const e = err as { statusCode?: unknown; json?: { message?: unknown } | null; code?: unknown; name?: unknown };
  if (typeof e?.statusCode === 'number') {
    const detail = typeof e.json?.message === 'string' ? e.json.message : messageOf(err);
    return new DockerSourceError(DockerErrorCode.API_ERROR, `${what}: HTTP ${e.statusCode}: ${detail.trim()}`, {
      cause: err,
      status: e.statusCode,
    });
  }
  const reason = e?.name === 'TimeoutError' || e?.name === 'AbortError' ? 'no answer in time' : messageOf(err);
  return new DockerSourceError(DockerErrorCode.UNREACHABLE, `${what}: ${reason}`, { cause: err });
}

function toVersion(v: Docker.DockerVersion): RuntimeVersion {
  const components = (v as { Components?: Array<{ Name?: string }> }).Components ?? [];
  const names = components.map((c) => c.Name ?? '').join(' ');
  const engine = /podman/i.test(names) ? 'podman' : /engine/i.test(names) ? 'docker' : 'unknown';
  return { engine, version: v.Version ?? '', apiVersion: v.ApiVersion ?? '' };
}

const HEALTH: ReadonlySet<string> = new Set<ContainerHealth>(['starting', 'healthy', 'unhealthy']);

/** Inspect data → {@link ContainerInfo}. Podman gives `State.Health` with an empty status when there is no healthcheck. */
export function toInfo(raw: Docker.ContainerInspectInfo): ContainerInfo {
  const status = raw.State?.Health?.Status ?? '';
  const networks: ContainerNetwork[] = Object.entries(raw.NetworkSettings?.Networks ?? {})
    .map(([name, n]) => ({ name, ipv4: n?.IPAddress ?? '', ipv6: n?.GlobalIPv6Address ?? '' }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const exposedPorts = Object.keys(raw.Config?.ExposedPorts ?? {})
    .map((key) => /^(\d+)(?:\/tcp)?$/.exec(key)?.[1])
    .filter((port): port is string => port !== undefined)
    .map(Number)
    .filter((port) => port >= 1 && port <= 65535)
    .sort((a, b) => a - b);
  return {
    id: raw.Id,
    name: (raw.Name ?? '').replace(/^\//, ''),
    labels: raw.Config?.Labels ?? {},
    running: raw.State?.Running === true && raw.State?.Paused !== true,
    health: HEALTH.has(status) ? (status as ContainerHealth) : 'none',
    networkMode: raw.HostConfig?.NetworkMode ?? '',
    networks,
    exposedPorts: [...new Set(exposedPorts)],
  };
}
