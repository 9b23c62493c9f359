/**
 * An in-memory {@link ContainerRuntime} for the watcher's unit tests. It is
 * a fake on purpose: it lets a test order events, repeat them, cut the
 * stream and count inspects, which a real runtime does not allow on
 * demand. The real runtimes (Podman's API service through the dockerode
 * adapter) are exercised by `docker-source.podman.test.ts`.
 */
import { DockerErrorCode, DockerSourceError } from '../errors.js';
import type {
  ContainerInfo,
  ContainerRuntime,
  ContainerSummary,
  EventStream,
  RuntimeEvent,
  RuntimeVersion,
} from './runtime.js';

/** A container of the fake, with defaults for everything a test does not care about. */
export function fakeContainer(
  id: string,
  labels: Record<string, string>,
  overrides: Partial<ContainerInfo> = {},
): ContainerInfo {
  const n = Number.parseInt(id.replace(/\D/g, '') || '0', 10) % 250;
  return {
    id: id.padEnd(64, '0'),
    name: id,
    labels,
    running: true,
    health: 'none',
    networkMode: 'bridge',
    networks: [{ name: 'bridge', ipv4: `10.0.0.${n + 2}`, ipv6: '' }],
    exposedPorts: [],
    ...overrides,
  };
}

class FakeStream implements EventStream {
  readonly #queue: RuntimeEvent[] = [];
  #waiting: (() => void) | null = null;
  #ended = false;
  #error: Error | null = null;

  push(event: RuntimeEvent): void {
    this.#queue.push(event);
    this.#wake();
  }

  end(error: Error | null = null): void {
    this.#ended = true;
    this.#error = error;
    this.#wake();
  }

  close(): void {
    this.end();
  }

  get ended(): boolean {
    return this.#ended;
  }

  #wake(): void {
    const w = this.#waiting;
    this.#waiting = null;
    w?.();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<RuntimeEvent> {
    for (;;) {
      const next = this.#queue.shift();
      if (next) {
        yield next;
        continue;
      }
      if (this.#ended) {
        if (this.#error) throw this.#error;
        return;
      }
      await new Promise<void>((resolve) => {
        this.#waiting = resolve;
      });
    }
  }
}

/** The fake runtime: containers by full id, an event stream per subscription, call counters. */
export class FakeRuntime implements ContainerRuntime {
  readonly containers = new Map<string, ContainerInfo>();
  /** Inspect calls by full id. */
  readonly inspects = new Map<string, number>();
  listCalls = 0;
  subscribeCalls = 0;
  /** While true every call rejects with DOCKER_UNREACHABLE (the runtime is down). */
  down = false;
  version_: RuntimeVersion = { engine: 'podman', version: '4.3.1', apiVersion: '1.41' };
  #stream: FakeStream | null = null;

  /** Adds (or replaces) a running container, without an event. */
  put(info: ContainerInfo): ContainerInfo {
    this.containers.set(info.id, info);
    return info;
  }

  /** Sends an event on the open stream (dropped when none is open, as a real runtime would). */
  emit(event: RuntimeEvent): void {
    this.#stream?.push(event);
  }

  /** Starts a container and sends its `start` event. */
  start(info: ContainerInfo): ContainerInfo {
    this.put({ ...info, running: true });
    this.emit({ kind: 'up', id: info.id, action: 'start', labels: info.labels, timeNano: 0n });
    return info;
  }

  /** Removes a container and sends `die` then `remove` (Podman's order, without the unreliable `stop`). */
  remove(id: string): void {
    const info = this.containers.get(id);
    this.containers.delete(id);
    const labels = info?.labels ?? {};
    this.emit({ kind: 'gone', id, action: 'die', labels, timeNano: 0n });
    this.emit({ kind: 'gone', id, action: 'remove', labels, timeNano: 0n });
  }

  /** Changes a container's health and sends the event (`withState: false` is Podman 4.3's stateless event). */
  health(id: string, health: ContainerInfo['health'], withState = true): void {
    const info = this.containers.get(id);
    if (info) this.containers.set(id, { ...info, health });
    this.emit({ kind: 'health', id, health: withState ? health : null, labels: info?.labels ?? {}, timeNano: 0n });
  }

  /** Ends the open stream, with an error or cleanly. */
  cut(
    error: Error | null = new DockerSourceError(DockerErrorCode.STREAM_ENDED, 'event stream failed: socket hang up'),
  ): void {
    this.#stream?.end(error);
    this.#stream = null;
  }

  get streamOpen(): boolean {
    return this.#stream !== null && !this.#stream.ended;
  }

  #check(): void {
    if (this.down) throw new DockerSourceError(DockerErrorCode.UNREACHABLE, 'connect ECONNREFUSED (fake)');
  }

  async ping(): Promise<void> {
    this.#check();
  }

  async version(): Promise<RuntimeVersion> {
    this.#check();
    return this.version_;
  }

  async listRunning(): Promise<ContainerSummary[]> {
    this.#check();
    this.listCalls++;
    return [...this.containers.values()]
      .filter((c) => c.running)
      .map((c) => ({ id: c.id, name: c.name, labels: c.labels }));
  }

  async inspect(id: string): Promise<ContainerInfo | null> {
    this.#check();
    this.inspects.set(id, (this.inspects.get(id) ?? 0) + 1);
    return this.containers.get(id) ?? null;
  }

  async subscribe(): Promise<EventStream> {
    this.#check();
    this.subscribeCalls++;
    this.#stream = new FakeStream();
    return this.#stream;
  }

  async close(): Promise<void> {
    this.cut(null);
  }
}
