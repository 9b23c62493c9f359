import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import { checkServerIdentity, type PeerCertificate } from 'node:tls';
import { DataPlaneError, DataPlaneErrorCode } from '../errors.js';
import type { UpstreamAddress, UpstreamTls } from '../model/index.js';

/** The error an upstream connect that takes too long fails with (mapped to 504). */
export class ConnectTimeoutError extends Error {
  readonly code = 'PROXY_CONNECT_TIMEOUT';
  constructor(ms: number) {
    super(`upstream connect timed out after ${ms} ms`);
  }
}

/** The error an upstream socket that stays silent too long fails with (mapped to 504). */
export class IdleTimeoutError extends Error {
  readonly code = 'PROXY_IDLE_TIMEOUT';
  constructor(ms: number) {
    super(`upstream idle for ${ms} ms`);
  }
}

/** Options shared by every upstream agent. */
export interface AgentPoolOptions {
  /** Connect timeout, ms (default 5000). */
  connectTimeoutMs: number;
  /** Idle timeout of an upstream socket (waiting for the response or between keep-alive requests), ms. */
  idleTimeoutMs: number;
  /** Idle keep-alive sockets kept per upstream (default 256). */
  maxFreeSockets?: number;
}

/**
 * One keep-alive agent per upstream and TLS setting, shared by every pool
 * that names it. Sockets get a connect timeout at creation (no per-request
 * timer) and the agent's idle timeout.
 */
export class AgentPool {
  readonly #agents = new Map<string, http.Agent>();
  readonly #options: AgentPoolOptions;

  constructor(options: AgentPoolOptions) {
    this.#options = options;
  }

  /** The agent of `address` with `tls` (plain HTTP when `tls.enabled` is false). */
  agentFor(address: UpstreamAddress, tls: UpstreamTls): http.Agent {
    const key = tls.enabled
      ? `tls|${address.host}|${address.port}|${tls.server_name ?? ''}|${tls.ca_file ?? ''}|${tls.insecure_skip_verify}`
      : `${address.host}|${address.port}`;
    let agent = this.#agents.get(key);
    if (agent === undefined) {
      agent = this.#create(address, tls);
      this.#agents.set(key, agent);
    }
    return agent;
  }

  /** Total sockets (in use and idle) across every agent; used by leak tests. */
  socketCount(): number {
    let n = 0;
    for (const agent of this.#agents.values()) {
      for (const list of Object.values(agent.sockets)) n += list?.length ?? 0;
      for (const list of Object.values(agent.freeSockets)) n += list?.length ?? 0;
    }
    return n;
  }

  /** Destroys every agent and its sockets. */
  destroy(): void {
    for (const agent of this.#agents.values()) agent.destroy();
    this.#agents.clear();
  }

  #create(address: UpstreamAddress, tls: UpstreamTls): http.Agent {
    const base = {
      keepAlive: true,
      maxFreeSockets: this.#options.maxFreeSockets ?? 256,
      scheduling: 'lifo' as const,
    };
    let agent: http.Agent;
    if (tls.enabled) {
      let ca: Buffer | undefined;
      if (tls.ca_file !== null) {
        try {
          ca = readFileSync(tls.ca_file);
        } catch (cause) {
          throw new DataPlaneError(DataPlaneErrorCode.CA_LOAD_FAILED, `cannot read ca_file ${tls.ca_file}`, {
            cause,
          });
        }
      }
      const servername = tls.server_name ?? (net.isIP(address.host) === 0 ? address.host : undefined);
      agent = new https.Agent({
        ...base,
        rejectUnauthorized: !tls.insecure_skip_verify,
        ...(ca ? { ca } : {}),
        ...(servername !== undefined ? { servername } : {}),
        ...(tls.server_name !== null
          ? {
              checkServerIdentity: (_host: string, cert: PeerCertificate) =>
                checkServerIdentity(tls.server_name as string, cert),
            }
          : {}),
      });
    } else {
      agent = new http.Agent(base);
    }
    const ms = this.#options.connectTimeoutMs;
    const idleMs = this.#options.idleTimeoutMs;
    // Node's default resets a pooled socket's timeout to the agent's (none);
    // keep ours so the idle timer also covers reused sockets.
    agent.keepSocketAlive = (socket) => {
      const tcp = socket as net.Socket;
      tcp.setKeepAlive(true, 1000);
      tcp.unref();
      return true;
    };
    const connectEvent = tls.enabled ? 'secureConnect' : 'connect';
    type CreateConnection = (options: object, callback?: (err: Error | null, socket: Duplex) => void) => Duplex;
    const withCreate = agent as unknown as { createConnection: CreateConnection };
    const create = withCreate.createConnection.bind(agent);
    withCreate.createConnection = (options, callback) => {
      const socket = create(options, callback);
      const timer = setTimeout(() => socket.destroy(new ConnectTimeoutError(ms)), ms);
      const clear = () => clearTimeout(timer);
      socket.once(connectEvent, clear);
      socket.once('close', clear);
      // One idle timer per socket, refreshed by its own traffic: no per-request
      // setTimeout. It fires while waiting for a response (→ 504) or when a
      // pooled socket sat idle (the agent drops it).
      (socket as Duplex & { setTimeout(ms: number): void }).setTimeout(idleMs);
      socket.on('timeout', () => socket.destroy(new IdleTimeoutError(idleMs)));
      return socket;
    };
    return agent;
  }
}
