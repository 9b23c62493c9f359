import type { CacheIndexUpdate, SharedCacheEntry } from './cache-index.js';
import type { RouteUpdate } from './route-tables.js';

/**
 * The control↔data contract: what the control plane (route store, sources,
 * certificates, history, admin API) says to a process that serves traffic,
 * and what that process asks back. Every type that crosses it is plain
 * data (structured-clone-able), so a transport may carry it over IPC today
 * and over a network later; callers see only {@link DataPlaneNode} and the
 * `Fleet`.
 */

/** One certificate as the control plane supplies it: the name it serves, its chain and key (PEM). */
export interface CertificatePem {
  name: string;
  cert: string;
  key: string;
}

/**
 * What changed of the certificates, for a node that pulls them: names
 * (exact or `*.parent`) now served — installed or renewed, so a copy the
 * node holds is stale — and names no longer served. Names only: the node
 * asks {@link CertificateSupply.certificateFor} at a handshake.
 */
export interface CertificateUpdate {
  served: string[];
  unserved: string[];
}

/**
 * An ACME challenge the CA is about to check (HTTP-01: `token` →
 * `keyAuthorization`; TLS-ALPN-01: also the challenge certificate; DNS-01:
 * answered by the DNS provider, not by a node, but carried alike). The
 * certificates package's `PresentedChallenge` satisfies it.
 */
export type Challenge =
  | { type: 'http-01'; identifier: string; token: string; keyAuthorization: string }
  | { type: 'dns-01'; identifier: string; wildcard: boolean; token: string; keyAuthorization: string }
  | {
      type: 'tls-alpn-01';
      identifier: string;
      token: string;
      keyAuthorization: string;
      certificatePem: string;
      privateKeyPem: string;
    };

/** What one node saw of an upstream (a probe or a passive failure); proxy-core's `HealthEvent` satisfies it. */
export interface HealthEvent {
  upstream: string;
  healthy?: boolean;
  downUntil?: number;
}

/** A node's answer to a route update. */
export type RouteAck =
  /** It serves `version` now (or already served it or a newer one). */
  | { version: number; needsSnapshot?: undefined }
  /** It missed a version (it has `version`): it needs a compact snapshot of the whole table. */
  | { version: number; needsSnapshot: true };

/** Requests in flight and connections open on a node now. */
export interface NodeStats {
  requestsInFlight: number;
  openConnections: number;
}

/**
 * How a node gets certificates:
 * - `shared`: it reads the control plane's own store (same process; no copy
 *   travels, {@link DataPlaneNode.certificatesChanged} only says "look again");
 * - `pulled`: it knows the names served (given at its start, then
 *   {@link CertificateUpdate}s) and holds a bounded cache of certificates,
 *   filled at a handshake by {@link CertificateSupply.certificateFor}; an
 *   update drops what it names.
 */
export type CertificateMode = 'shared' | 'pulled';

/**
 * The port a node calls on an SNI miss: the control plane answers the
 * name's certificate (read from storage when not in its cache), checks and
 * obtains an on-demand name (`ask`), moves a managed name still waiting for
 * its first certificate to the front of its queue, or answers null.
 */
export interface CertificateSupply {
  certificateFor(name: string): Promise<CertificatePem | null>;
}

/**
 * What a node's telemetry answers carry, left to the daemon (this package
 * does not know metrics or analytics): a metrics snapshot, the analytics
 * collectors' state, a history rollup.
 */
export interface Telemetry {
  metrics: unknown;
  analytics: unknown;
  rollup: unknown;
}

/**
 * One process that serves traffic, as the control plane drives it. Every
 * method that changes what the node serves resolves once the node serves
 * it (an acknowledgement), so a route write can answer after every node
 * swapped. Implemented by the node itself in this process (the in-process
 * transport) and by a proxy that forwards each call to a worker (IPC).
 */
export interface DataPlaneNode<T extends Telemetry = Telemetry> {
  /** Which node of the fleet (0-based; a replacement keeps it). */
  readonly index: number;
  readonly certificateMode: CertificateMode;
  /**
   * Applies a route update: a delta on the version the node has, or a
   * compact snapshot of the whole table. A delta that does not follow the
   * node's version is not applied: the answer says so
   * (`needsSnapshot`), and the fleet sends the snapshot.
   */
  applyRoutes(update: RouteUpdate): Promise<RouteAck>;
  /** Certificates changed: the update (a `pulled` node), or null (a `shared` node looks again). */
  certificatesChanged(update: CertificateUpdate | null): Promise<void>;
  /** Starts answering an ACME challenge; resolves once it does. */
  presentChallenge(challenge: Challenge): Promise<void>;
  /** Stops answering it. */
  cleanUpChallenge(challenge: Challenge): Promise<void>;
  /** Purges a response-cache key; answers whether the node had it. */
  purge(key: string): Promise<boolean>;
  /**
   * What changed in the node's shared response-cache index (one way): the
   * node's copy follows it. Only nodes of a fleet that shares its cache
   * (workers) get it; a node with its own cache ignores it.
   */
  applyCacheIndex(update: CacheIndexUpdate): void;
  /** Applies what another node saw of an upstream (one way). */
  applyHealth(event: HealthEvent): void;
  /** The node's metrics snapshot (null: the node keeps none). */
  metrics(): Promise<T['metrics'] | null>;
  /** The analytics collectors' state, of one domain or (null) all. */
  analyticsState(domain: string | null): Promise<T['analytics']>;
  /** The complete minutes before `now` (epoch ms), forgotten by the node. */
  drainRollups(now: number): Promise<T['rollup'][]>;
  /** The day's visitor salt: visitors are hashed with it from now on. */
  setVisitorSalt(salt: Uint8Array): Promise<void>;
  /** The TLS session-ticket keys (48 bytes) every HTTPS listener uses from now on (shared by a fleet on Redis). */
  setTicketKeys(keys: Uint8Array): Promise<void>;
  /** Requests in flight and connections open. */
  stats(): Promise<NodeStats>;
  /** Stops accepting; what is in flight finishes within `graceMs`, then the node closes. */
  stop(graceMs: number): Promise<void>;
}

/** What a node asks of its fleet (the control plane), whatever carries it. */
export interface FleetPort extends CertificateSupply {
  /** Node `from` saw this of an upstream: the fleet passes it to the others. */
  reportHealth(from: number, event: HealthEvent): void;
  /** `rate_limit` admissions of node-wide limits, `[limit, domain, ip, …]`: 1 admitted, 0 over, per request. */
  admitRateLimited(batch: readonly unknown[]): Uint8Array;
  /** New capped connections of node `from`, by client key: 1 admitted, 0 over the node's cap. */
  acquireConnections(from: number, keys: readonly string[]): Uint8Array;
  /** Connections of node `from` that closed. */
  releaseConnections(from: number, keys: readonly string[]): void;
  /** Node `index` went away: what it held is released. */
  nodeGone(index: number): void;
  /**
   * Node `from` wrote a response's body to its file and stored it in its
   * copy of the shared cache index: the index takes it (or refuses it) and
   * every node's copy follows (`DataPlaneNode.applyCacheIndex`).
   */
  cacheStored(from: number, entry: SharedCacheEntry): void;
  /** Node `from` served these keys from the shared cache (their recency, for eviction). */
  cacheTouched(from: number, keys: readonly string[]): void;
  /** Node `from` no longer serves these sites (by number): their cache entries go. */
  cacheReleased(from: number, sites: readonly number[]): void;
}
