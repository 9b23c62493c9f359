import type { RouteSpec } from '@proxyd/model';
import type { RouteSink } from '@proxyd/route-store';
import { DockerErrorCode, DockerSourceError } from './errors.js';
import { type ContainerMember, containerMember, hasProxyLabels } from './labels.js';
import { poolRoute } from './pools.js';
import { detectOwnNetworks } from './runtime/own-container.js';
import type {
  ContainerHealth,
  ContainerRuntime,
  EventStream,
  RuntimeEvent,
  RuntimeVersion,
} from './runtime/runtime.js';
import { compareWarnings, type LabelWarning, warningKey } from './warnings.js';

/** The log target of the container source. */
export const DOCKER_LOG_TARGET = 'proxy::docker';

/** The structured logger the source writes to (pino fits; the daemon passes one with target `proxy::docker`). */
export interface DockerLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** Options of {@link DockerSource}. */
export interface DockerSourceOptions {
  /** The runtime client (a `DockerodeRuntime` in the daemon). The source closes its event streams, not the client. */
  runtime: ContainerRuntime;
  /** Where the labels' routes go (the route store): `replaceOrigin('labels', …)`. */
  sink: RouteSink;
  /** For `status()`: the runtime's address, e.g. `unix:///var/run/docker.sock`. */
  socket?: string | null;
  /** Logger (default: none). Every line carries `target: "proxy::docker"`. */
  logger?: DockerLogger | null;
  /** The default network (the `docker_network` option) for containers on several networks; default none. */
  defaultNetwork?: string | null;
  /**
   * proxyd's own container networks: `detect` (default) inspects the
   * container this process runs in at every (re)connect, a list gives
   * them, null says proxyd runs outside a container.
   */
  ownNetworks?: readonly string[] | null | 'detect';
  /** Events within this window are applied together, ms (default 50). */
  debounceMs?: number;
  /** Full resync (list + inspect of every labelled container) every this many ms (default 60000; 0 disables). */
  resyncMs?: number;
  /** First reconnect delay, ms (default 500); doubles per failed attempt up to `maxBackoffMs`. */
  backoffMs?: number;
  /** Longest reconnect delay, ms (default 30000). */
  maxBackoffMs?: number;
  /** Inspects run at most this many at once (default 8). */
  inspectConcurrency?: number;
  /** Random source in [0, 1) for the backoff jitter (default `Math.random`; tests pin it). */
  random?: () => number;
}

/** What `status()` reports (for the admin API and logs). */
export interface DockerSourceStatus {
  /** The runtime's address; null when not given. */
  socket: string | null;
  /** Whether the event stream is up now. */
  connected: boolean;
  /** `docker`, `podman` or `unknown`; null before the first connection. */
  engine: RuntimeVersion['engine'] | null;
  /** The engine's version; null before the first connection. */
  version: string | null;
  /** The Engine API version; null before the first connection. */
  apiVersion: string | null;
  /** Running containers with `proxy.*` labels, routed or not. */
  containers: number;
  /** Label routes (domains) declared now. */
  routes: number;
  /** Label warnings now. */
  warnings: number;
  /** The last failure (connection, stream, inspect, sink), null when none since the last successful sync. */
  lastError: string | null;
  /** When the last full sync finished, ms since the epoch; null before the first. */
  lastSyncAt: number | null;
}

/** One running labelled container as last inspected. */
interface Tracked {
  health: ContainerHealth;
  /** Its pool member, or null when its labels gave warnings. */
  member: ContainerMember | null;
  warnings: LabelWarning[];
}

/** The current route of one domain. */
interface DomainState {
  key: string;
  route: RouteSpec;
  warnings: LabelWarning[];
}

const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));

/**
 * Container labels as a live route source. `start()` subscribes to the
 * runtime's events, lists and inspects the labelled containers and writes
 * their routes; then each event marks its container, and after
 * `debounceMs` the marked containers (only those) are inspected again and
 * their domains' pools rebuilt; the whole labels origin is written through
 * `RouteSink.replaceOrigin('labels', …)` when a route changed. Unchanged
 * routes keep their `RouteSpec` object. A full resync runs every
 * `resyncMs`. When the stream fails or ends, the routes stay; the source
 * reconnects with exponential backoff and jitter, re-lists and applies
 * the difference.
 */
export class DockerSource {
  readonly #runtime: ContainerRuntime;
  readonly #sink: RouteSink;
  readonly #logger: DockerLogger | null;
  readonly #socket: string | null;
  readonly #defaultNetwork: string | null;
  readonly #ownOption: readonly string[] | null | 'detect';
  readonly #debounceMs: number;
  readonly #resyncMs: number;
  readonly #backoffMs: number;
  readonly #maxBackoffMs: number;
  readonly #concurrency: number;
  readonly #random: () => number;

  readonly #tracked = new Map<string, Tracked>();
  readonly #domains = new Map<string, DomainState>();
  #dirty = new Set<string>();
  /**
   * Containers a `gone` event named whose inspect still said running, and
   * how many re-inspects they had: Podman writes `die` before its cleanup
   * process updates the state that inspect reads, and nothing is sent after
   * that. They are inspected again after 250 ms, doubling, at most 5 times.
   */
  readonly #lagging = new Map<string, number>();
  readonly #recheckTimers = new Set<NodeJS.Timeout>();
  #ownNetworks: readonly string[] | null = null;
  #logged = new Set<string>();
  #warnings: LabelWarning[] = [];

  #work: Promise<void> = Promise.resolve();
  #debounce: NodeJS.Timeout | null = null;
  #resync: NodeJS.Timeout | null = null;
  #stream: EventStream | null = null;
  #loop: Promise<void> | null = null;
  #wake: (() => void) | null = null;
  #stopped = false;
  #started = false;
  #flushFailed = false;

  #connected = false;
  #version: RuntimeVersion | null = null;
  #lastError: string | null = null;
  #lastSyncAt: number | null = null;

  constructor(options: DockerSourceOptions) {
    this.#runtime = options.runtime;
    this.#sink = options.sink;
    this.#logger = options.logger ?? null;
    this.#socket = options.socket ?? null;
    this.#defaultNetwork = options.defaultNetwork ?? null;
    this.#ownOption = options.ownNetworks === undefined ? 'detect' : options.ownNetworks;
    this.#debounceMs = options.debounceMs ?? 50;
    this.#resyncMs = options.resyncMs ?? 60_000;
    this.#backoffMs = options.backoffMs ?? 500;
    this.#maxBackoffMs = options.maxBackoffMs ?? 30_000;
    this.#concurrency = Math.max(1, options.inspectConcurrency ?? 8);
    this.#random = options.random ?? Math.random;
  }

  /**
   * Connects and writes the first set of label routes. Resolves after the
   * first sync, or after the first failure (then the source keeps retrying
   * in the background: a runtime that is down never stops the daemon).
   * Never rejects.
   */
  start(): Promise<void> {
    if (this.#started) return Promise.resolve();
    this.#started = true;
    let firstDone!: () => void;
    const first = new Promise<void>((resolve) => {
      firstDone = resolve;
    });
    this.#loop = this.#run(firstDone);
    if (this.#resyncMs > 0) {
      this.#resync = setInterval(() => {
        if (this.#connected) void this.resync();
      }, this.#resyncMs);
      this.#resync.unref();
    }
    return first;
  }

  /** Stops watching: timers cleared, the stream closed, pending work finished. Label routes stay in the sink. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#debounce) clearTimeout(this.#debounce);
    if (this.#resync) clearInterval(this.#resync);
    this.#debounce = null;
    this.#resync = null;
    for (const timer of this.#recheckTimers) clearTimeout(timer);
    this.#recheckTimers.clear();
    this.#stream?.close();
    this.#wake?.();
    await this.#loop;
    await this.#work;
  }

  /** Lists and inspects every labelled container now and applies the difference (the periodic safety net). */
  resync(): Promise<void> {
    return this.#enqueue(() => this.#fullSync());
  }

  /** Resolves when the events seen so far are applied (the debounce window included). */
  async settled(): Promise<void> {
    await this.#work;
    while ((this.#debounce !== null || this.#dirty.size > 0) && !this.#stopped) {
      if (this.#debounce) clearTimeout(this.#debounce);
      this.#debounce = null;
      await this.#enqueue(() => this.#flush());
      if (this.#flushFailed) break;
    }
  }

  /** The current label warnings, sorted by container name and label. */
  warnings(): LabelWarning[] {
    return this.#warnings.map((w) => ({ ...w, container: { ...w.container } }));
  }

  /** The label routes declared now, by domain. */
  routes(): RouteSpec[] {
    return [...this.#domains.values()].map((d) => d.route);
  }

  status(): DockerSourceStatus {
    return {
      socket: this.#socket,
      connected: this.#connected,
      engine: this.#version?.engine ?? null,
      version: this.#version?.version ?? null,
      apiVersion: this.#version?.apiVersion ?? null,
      containers: this.#tracked.size,
      routes: this.#domains.size,
      warnings: this.#warnings.length,
      lastError: this.#lastError,
      lastSyncAt: this.#lastSyncAt,
    };
  }

  // --- connection loop -------------------------------------------------------------------------

  async #run(firstDone: () => void): Promise<void> {
    let attempt = 0;
    while (!this.#stopped) {
      let stream: EventStream | null = null;
      try {
        // Subscribe before listing, so no event between the list and the stream is missed.
        stream = await this.#runtime.subscribe();
        this.#stream = stream;
        if (this.#stopped) break;
        const version = await this.#runtime.version();
        this.#version = version;
        this.#connected = true;
        this.#info(
          { socket: this.#socket, engine: version.engine, version: version.version, api_version: version.apiVersion },
          `watching containers through ${this.#socket ?? 'the container runtime'} (${version.engine} ${version.version}, API ${version.apiVersion})`,
        );
        await this.#enqueue(() => this.#fullSync());
        attempt = 0;
        firstDone();
        for await (const event of stream) {
          if (this.#stopped) break;
          this.#onEvent(event);
        }
        if (this.#stopped) break;
        throw new DockerSourceError(DockerErrorCode.STREAM_ENDED, 'event stream ended');
      } catch (err) {
        stream?.close();
        this.#stream = null;
        const wasConnected = this.#connected;
        this.#connected = false;
        if (this.#stopped) break;
        this.#lastError = messageOf(err);
        const delay = this.#backoff(attempt++);
        this.#log(
          'warn',
          { err: this.#lastError, retry_ms: delay, was_connected: wasConnected },
          `container runtime: ${this.#lastError}; label routes kept, reconnecting in ${delay} ms`,
        );
        firstDone();
        await this.#sleep(delay);
      }
    }
    this.#connected = false;
    firstDone();
  }

  /** Exponential backoff with jitter: between half and all of min(max, base · 2^attempt). */
  #backoff(attempt: number): number {
    const ceiling = Math.min(this.#maxBackoffMs, this.#backoffMs * 2 ** Math.min(attempt, 30));
    return Math.round(ceiling / 2 + (this.#random() * ceiling) / 2);
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.#wake = () => {
        this.#wake = null;
        done();
      };
    });
  }

  // --- events ----------------------------------------------------------------------------------

  #onEvent(event: RuntimeEvent): void {
    if (event.kind === 'invalid') {
      this.#log('warn', { reason: event.reason }, `container event dropped: ${event.reason}`);
      return;
    }
    const tracked = this.#tracked.get(event.id);
    if (event.kind === 'network') {
      if (tracked) this.#mark(event.id);
      return;
    }
    if (!tracked && !hasProxyLabels(event.labels)) return;
    if (event.kind === 'gone') this.#lagging.set(event.id, 0);
    else if (event.kind === 'up') this.#lagging.delete(event.id);
    // Podman repeats health_status at every probe: act on changes only.
    if (event.kind === 'health' && tracked?.health === event.health) return;
    this.#mark(event.id);
  }

  #mark(id: string): void {
    this.#dirty.add(id);
    this.#schedule(this.#debounceMs);
  }

  /** Flushes the marked containers in `ms` (unless a flush is already scheduled). */
  #schedule(ms: number): void {
    if (this.#debounce !== null || this.#stopped) return;
    this.#debounce = setTimeout(() => {
      this.#debounce = null;
      void this.#enqueue(() => this.#flush());
    }, ms);
  }

  #enqueue(task: () => Promise<void>): Promise<void> {
    const next = this.#work.then(task).catch((err: unknown) => {
      this.#lastError = messageOf(err);
      this.#log('error', { err: this.#lastError }, `container source: ${this.#lastError}`);
    });
    this.#work = next;
    return next;
  }

  // --- applying --------------------------------------------------------------------------------

  /** Lists running containers; every labelled one and every tracked one is inspected. */
  async #fullSync(): Promise<void> {
    if (this.#ownOption === 'detect') {
      this.#ownNetworks = await detectOwnNetworks(this.#runtime);
    } else {
      this.#ownNetworks = this.#ownOption;
    }
    const listed = await this.#runtime.listRunning();
    for (const c of listed) if (hasProxyLabels(c.labels)) this.#dirty.add(c.id);
    for (const id of this.#tracked.keys()) this.#dirty.add(id);
    await this.#flush();
    this.#lastSyncAt = Date.now();
    if (this.#dirty.size === 0) this.#lastError = null;
  }

  /** Inspects the marked containers, updates their pools and writes the labels origin when a route changed. */
  async #flush(): Promise<void> {
    const ids = [...this.#dirty];
    this.#dirty = new Set();
    if (ids.length === 0) return;
    const affected = new Set<string>();
    const failed: string[] = [];
    let failure: unknown = null;
    let next = 0;
    const worker = async () => {
      while (next < ids.length) {
        const id = ids[next++] as string;
        try {
          const info = await this.#runtime.inspect(id);
          const before = this.#tracked.get(id);
          for (const d of before?.member?.domains ?? []) affected.add(d);
          if (!info?.running || !hasProxyLabels(info.labels)) {
            this.#lagging.delete(id);
            this.#tracked.delete(id);
            continue;
          }
          this.#recheckIfLagging(id);
          const result = containerMember(info, {
            defaultNetwork: this.#defaultNetwork,
            ownNetworks: this.#ownNetworks,
          });
          const tracked: Tracked = result.ok
            ? { health: info.health, member: result.member, warnings: [] }
            : { health: info.health, member: null, warnings: result.warnings };
          this.#tracked.set(id, tracked);
          for (const d of tracked.member?.domains ?? []) affected.add(d);
        } catch (err) {
          failed.push(id);
          failure = err;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.#concurrency, ids.length) }, worker));
    // A failed inspect keeps the container as it was; it is tried again after the backoff delay.
    for (const id of failed) this.#dirty.add(id);
    this.#flushFailed = failure !== null;
    await this.#apply(affected);
    if (failure !== null) {
      this.#schedule(this.#backoffMs);
      throw new DockerSourceError(
        DockerErrorCode.UNREACHABLE,
        `inspect of ${failed.length} container(s) failed, kept as they were: ${messageOf(failure)}`,
        { cause: failure },
      );
    }
  }

  /** After a `gone` event, a container inspect still calls running is looked at again shortly (see {@link #lagging}). */
  #recheckIfLagging(id: string): void {
    const attempts = this.#lagging.get(id);
    if (attempts === undefined) return;
    if (attempts >= 5) {
      this.#lagging.delete(id);
      return;
    }
    this.#lagging.set(id, attempts + 1);
    const timer = setTimeout(
      () => {
        this.#recheckTimers.delete(timer);
        if (!this.#stopped && this.#lagging.has(id)) this.#mark(id);
      },
      250 * 2 ** attempts,
    );
    timer.unref();
    this.#recheckTimers.add(timer);
  }

  /** Rebuilds the pools of `affected` domains; writes the origin when any route changed. */
  async #apply(affected: ReadonlySet<string>): Promise<void> {
    let changed = false;
    if (affected.size > 0) {
      const members = new Map<string, ContainerMember[]>();
      for (const d of affected) members.set(d, []);
      for (const tracked of this.#tracked.values()) {
        for (const d of tracked.member?.domains ?? []) members.get(d)?.push(tracked.member as ContainerMember);
      }
      for (const [domain, list] of members) {
        const before = this.#domains.get(domain);
        if (list.length === 0) {
          if (before) {
            this.#domains.delete(domain);
            changed = true;
          }
          continue;
        }
        const pool = poolRoute(domain, list);
        if (before?.key === pool.key) {
          before.warnings = pool.warnings;
          continue;
        }
        this.#domains.set(domain, { key: pool.key, route: pool.route, warnings: pool.warnings });
        changed = true;
      }
    }
    this.#updateWarnings();
    if (changed) {
      const routes = [...this.#domains.values()].map((d) => d.route);
      await this.#sink.replaceOrigin('labels', routes);
    }
  }

  #updateWarnings(): void {
    const all: LabelWarning[] = [];
    for (const t of this.#tracked.values()) all.push(...t.warnings);
    for (const d of this.#domains.values()) all.push(...d.warnings);
    all.sort(compareWarnings);
    const keys = new Set<string>();
    for (const w of all) {
      const key = warningKey(w);
      keys.add(key);
      if (!this.#logged.has(key)) {
        this.#log(
          'warn',
          { container: w.container.name, container_id: w.container.id, label: w.label, reason: w.reason },
          `container ${w.container.name} (${w.container.id}): label ${w.label} ${w.reason}`,
        );
      }
    }
    this.#logged = keys;
    this.#warnings = all;
  }

  #info(obj: object, msg: string): void {
    this.#log('info', obj, msg);
  }

  #log(level: 'info' | 'warn' | 'error', obj: object, msg: string): void {
    this.#logger?.[level]({ target: DOCKER_LOG_TARGET, ...obj }, msg);
  }
}
