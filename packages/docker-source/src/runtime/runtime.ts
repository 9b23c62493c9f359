/**
 * The container runtime as the watcher sees it: a few read-only calls
 * (`_ping`, `version`, list, inspect, events) over Docker's Engine API,
 * which Docker Engine and Podman's compatible service both speak. The
 * dockerode adapter (`dockerode-runtime.ts`) implements it; the unit tests
 * use an in-memory fake. Everything here is already normalised: Docker's
 * and Podman's differences stop at the adapter.
 */

/** Docker's health states; `none` when the container has no healthcheck. */
export type ContainerHealth = 'none' | 'starting' | 'healthy' | 'unhealthy';

/** What `/version` says about the runtime. */
export interface RuntimeVersion {
  /** `docker` or `podman` (from the version's components), `unknown` otherwise. */
  engine: 'docker' | 'podman' | 'unknown';
  /** The engine's own version, e.g. `4.3.1`. */
  version: string;
  /** The Engine API version it speaks, e.g. `1.41`. */
  apiVersion: string;
}

/** One running container as listed (no inspect). */
export interface ContainerSummary {
  /** Full 64-hex id. */
  id: string;
  /** Name without Docker's leading `/`. */
  name: string;
  labels: Readonly<Record<string, string>>;
}

/** One network a container is attached to, from inspect. */
export interface ContainerNetwork {
  /** Network name as the runtime shows it (`bridge` in Docker, `podman` in Podman for the default one). */
  name: string;
  /** IPv4 address on it; empty when none. */
  ipv4: string;
  /** Global IPv6 address on it; empty when none. */
  ipv6: string;
}

/** A container, inspected and normalised. */
export interface ContainerInfo {
  /** Full 64-hex id. */
  id: string;
  /** Name without Docker's leading `/`. */
  name: string;
  labels: Readonly<Record<string, string>>;
  /** Running and not paused: a candidate pool member. */
  running: boolean;
  health: ContainerHealth;
  /** `HostConfig.NetworkMode`: `host`, `bridge`, `none`, `container:<id>`, a network name… */
  networkMode: string;
  /** Attached networks, sorted by name. */
  networks: readonly ContainerNetwork[];
  /** TCP ports of `Config.ExposedPorts`, ascending. */
  exposedPorts: readonly number[];
}

/**
 * One event of the stream, normalised from Docker's and Podman's shapes.
 * `up`/`gone`/`health`/`network` name a container (`id`); `invalid` is a
 * line that was dropped (over the buffer cap, or not an event), kept so
 * the watcher can log it.
 */
export type RuntimeEvent =
  | {
      /** `start`, `restart`, `unpause`: the container may now serve. */
      kind: 'up';
      id: string;
      action: string;
      labels: Readonly<Record<string, string>>;
      /** Event time, ns since the epoch, to about 1 µs (JSON numbers are doubles); 0 when the runtime gave none. */
      timeNano: bigint;
    }
  | {
      /** `die`, `stop`, `destroy`, `remove`, `pause`, `oom`: the container no longer serves. */
      kind: 'gone';
      id: string;
      action: string;
      labels: Readonly<Record<string, string>>;
      timeNano: bigint;
    }
  | {
      /** Docker's `health_status: <state>`, Podman's `health_status` (state in the attributes from Podman 4.6). */
      kind: 'health';
      id: string;
      /** The new state; null when the runtime did not say (Podman 4.3): the watcher inspects. */
      health: ContainerHealth | null;
      labels: Readonly<Record<string, string>>;
      timeNano: bigint;
    }
  | {
      /** A network `connect`/`disconnect` of container `id`. */
      kind: 'network';
      id: string;
      action: 'connect' | 'disconnect';
      /** Network name (Docker); empty when the runtime does not say (Podman 4). */
      network: string;
      timeNano: bigint;
    }
  | { kind: 'invalid'; reason: string };

/** A live subscription to the runtime's events. */
export interface EventStream extends AsyncIterable<RuntimeEvent> {
  /** Ends the subscription; the iteration then finishes. */
  close(): void;
}

/**
 * The runtime calls the watcher needs; all read-only (a socket proxy
 * allowing `GET /_ping`, `/version`, `/containers/json`,
 * `/containers/{id}/json` and `/events` is enough). Failures reject with a
 * `DockerSourceError` (`DOCKER_UNREACHABLE`, `DOCKER_API_ERROR`).
 */
export interface ContainerRuntime {
  /** `GET /_ping`: resolves when the runtime answers. */
  ping(): Promise<void>;
  /** `GET /version`. */
  version(): Promise<RuntimeVersion>;
  /** Running containers (all of them: label filtering is the caller's, see Podman's key-only filter). */
  listRunning(): Promise<ContainerSummary[]>;
  /** One container; null when it no longer exists (404). */
  inspect(id: string): Promise<ContainerInfo | null>;
  /**
   * Subscribes to container and network events. Resolves once the runtime
   * accepted the subscription (so a list made after it misses nothing);
   * the iteration ends when the stream ends, and throws when it fails.
   */
  subscribe(): Promise<EventStream>;
  /** Closes open streams; later calls reject with `DOCKER_CLOSED`. */
  close(): Promise<void>;
}
