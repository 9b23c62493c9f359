import { readFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import tls, { checkServerIdentity, type PeerCertificate } from 'node:tls';
import type { UpstreamAddress, UpstreamTls } from '@proxyd/model';
import { DataPlaneError, DataPlaneErrorCode } from '../errors.js';

/** The error an upstream connect that takes too long fails with (mapped to 504). */
function connectTimeout(ms: number): DataPlaneError {
  return new DataPlaneError(DataPlaneErrorCode.CONNECT_TIMEOUT, `upstream connect timed out after ${ms} ms`);
}

/** The error an upstream socket that stays silent too long fails with (mapped to 504). */
function idleTimeout(ms: number): DataPlaneError {
  return new DataPlaneError(DataPlaneErrorCode.IDLE_TIMEOUT, `upstream idle for ${ms} ms`);
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

/** The agent that owns a socket, and the socket's idle limit while pooled. */
const kAgent = Symbol('proxyd.agent');
const kPooledIdleMs = Symbol('proxyd.pooledIdleMs');

type UpstreamSocket = Duplex & {
  [kAgent]: UpstreamAgent;
  /** How long this socket may sit in the pool (the upstream's `Keep-Alive: timeout` hint, less 1 s). */
  [kPooledIdleMs]: number;
  timeout?: number;
  _httpMessage?: (http.ClientRequest & { shouldKeepAlive?: boolean }) | null;
  setTimeout(ms: number): void;
  setKeepAlive?(enable: boolean, delay: number): void;
  ref(): void;
  unref(): void;
};

/** What Node's ClientRequest calls on its agent and what it offers an agent (not in @types/node). */
interface AgentRequest extends http.ClientRequest {
  onSocket(socket: Duplex): void;
  reusedSocket: boolean;
}

/**
 * A keep-alive agent for exactly one upstream (address + TLS settings).
 *
 * Node's `http.Agent` serves any host: per request it spreads the options
 * into a new object, derives a pool name and a TLS server name, and looks
 * the pool up by that name (about a quarter of a small proxied request's
 * CPU, measured with `bench/proxy`). An upstream agent knows its one
 * destination, so it keeps a single LIFO stack of idle sockets: a request
 * pops one (or connects), and the socket's `free` event pushes it back.
 * ClientRequest's contract with its agent is unchanged: `addRequest` hands
 * it a socket with `onSocket`; keep-alive and `agentRemove` (WebSocket
 * upgrades) come back as socket events.
 *
 * Each socket gets one connect timer at creation and one idle timer for its
 * whole life (refreshed by its own traffic): 504 while waiting for a
 * response, dropped from the pool when idle that long. An upstream's
 * `Keep-Alive: timeout=N` hint (see {@link noteKeepAliveHint}) shortens the
 * pooled idle time to N−1 s, so the proxy closes first instead of racing
 * the upstream's close.
 */
export class UpstreamAgent extends http.Agent {
  readonly #idle: UpstreamSocket[] = [];
  readonly #connect: () => Duplex;
  readonly #connectEvent: 'connect' | 'secureConnect';
  readonly #connectTimeoutMs: number;
  readonly #idleTimeoutMs: number;
  readonly #maxIdle: number;
  #open = 0;

  constructor(connect: () => Duplex, secure: boolean, options: AgentPoolOptions) {
    super({ keepAlive: true });
    // Node's pooling listens for 'free' on the agent; ours listens on the socket.
    this.removeAllListeners('free');
    // ClientRequest checks that its module (http/https) matches the agent's protocol.
    (this as { protocol?: string }).protocol = secure ? 'https:' : 'http:';
    (this as { defaultPort?: number }).defaultPort = secure ? 443 : 80;
    this.#connect = connect;
    this.#connectEvent = secure ? 'secureConnect' : 'connect';
    this.#connectTimeoutMs = options.connectTimeoutMs;
    this.#idleTimeoutMs = options.idleTimeoutMs;
    this.#maxIdle = options.maxFreeSockets ?? 1024;
  }

  /** Sockets open to the upstream, in use or idle (leak tests, metrics). */
  get openSockets(): number {
    return this.#open;
  }

  /** Called by ClientRequest: hands it an idle socket, or a new one. */
  addRequest(req: http.ClientRequest): void {
    const idle = this.#idle;
    let socket = idle.pop();
    while (socket?.destroyed) socket = idle.pop();
    if (socket === undefined) {
      socket = this.#create();
    } else {
      socket.removeListener('data', onPooledData);
      socket.ref();
      if (socket.timeout !== this.#idleTimeoutMs) socket.setTimeout(this.#idleTimeoutMs);
      (req as AgentRequest).reusedSocket = true;
    }
    (req as AgentRequest).onSocket(socket);
  }

  override destroy(): void {
    for (const socket of this.#idle.splice(0)) socket.destroy();
    super.destroy();
  }

  /** A finished exchange released its socket: pool it, or close it. */
  release(socket: UpstreamSocket): void {
    const req = socket._httpMessage;
    if (!socket.writable || req == null || req.shouldKeepAlive !== true || this.#idle.length >= this.#maxIdle) {
      socket.destroy();
      return;
    }
    socket._httpMessage = null;
    const pooledMs = socket[kPooledIdleMs];
    if (pooledMs <= 0) {
      socket.destroy();
      return;
    }
    // Bytes already read past the response (a body on a 204 or a HEAD
    // answer): the connection is out of step with its requests.
    if (socket.readableLength > 0) {
      socket.destroy();
      return;
    }
    // A stream's socket had its timeout turned off, a handler's read_timeout changed it: the pool's again.
    const pooledTimeout = Math.min(pooledMs, this.#idleTimeoutMs);
    if (socket.timeout !== pooledTimeout) socket.setTimeout(pooledTimeout);
    // Nothing may arrive on an idle connection; a byte that does (late
    // bytes of such a body) would be read as the next request's response.
    socket.on('data', onPooledData);
    socket.unref();
    this.#idle.push(socket);
  }

  /** A socket closed, or left the pool for good (WebSocket upgrade). */
  forget(socket: UpstreamSocket): void {
    this.#open--;
    const i = this.#idle.indexOf(socket);
    if (i >= 0) this.#idle.splice(i, 1);
  }

  #create(): UpstreamSocket {
    const socket = this.#connect() as UpstreamSocket;
    this.#open++;
    socket[kAgent] = this;
    socket[kPooledIdleMs] = this.#idleTimeoutMs;
    const connectMs = this.#connectTimeoutMs;
    const timer = setTimeout(() => socket.destroy(connectTimeout(connectMs)), connectMs);
    const clear = () => clearTimeout(timer);
    socket.once(this.#connectEvent, clear);
    socket.once('close', clear);
    socket.setKeepAlive?.(true, 1000);
    socket.setTimeout(this.#idleTimeoutMs);
    socket.on('timeout', onSocketTimeout);
    socket.on('free', onSocketFree);
    socket.on('close', onSocketClose);
    socket.on('agentRemove', onSocketRemoved);
    // An idle pooled socket can be reset by the upstream; its 'close' cleans up.
    socket.on('error', ignoreError);
    return socket;
  }
}

function onSocketTimeout(this: UpstreamSocket): void {
  this.destroy(idleTimeout(this.timeout ?? 0));
}

/** Bytes on a pooled (idle) socket: it is desynchronised, so closed (as nginx's keepalive does). */
function onPooledData(this: UpstreamSocket): void {
  this.destroy();
}

function onSocketFree(this: UpstreamSocket): void {
  this[kAgent].release(this);
}

function onSocketClose(this: UpstreamSocket): void {
  this[kAgent].forget(this);
}

/** ClientRequest detached the socket (an upgrade): it no longer belongs to the pool. */
function onSocketRemoved(this: UpstreamSocket): void {
  this[kAgent].forget(this);
  this.removeListener('free', onSocketFree);
  this.removeListener('close', onSocketClose);
  this.removeListener('agentRemove', onSocketRemoved);
  this.removeListener('timeout', onSocketTimeout);
  this.removeListener('error', ignoreError);
  this.setTimeout(0);
}

function ignoreError(): void {}

const KEEP_ALIVE_TIMEOUT = /(?:^|[\s,])timeout\s*=\s*(\d+)/i;

/**
 * Records an upstream's `Keep-Alive` response header on the socket that
 * carried it: the socket may then sit in the pool for at most the announced
 * timeout less one second (no reuse at all when that is under a second).
 */
export function noteKeepAliveHint(socket: object | null, value: string): void {
  const match = KEEP_ALIVE_TIMEOUT.exec(value);
  if (match === null || socket === null || !(kAgent in socket)) return;
  (socket as UpstreamSocket)[kPooledIdleMs] = Number(match[1]) * 1000 - 1000;
}

/**
 * One {@link UpstreamAgent} per upstream and TLS setting, shared by every
 * pool that names it.
 */
export class AgentPool {
  readonly #agents = new Map<string, UpstreamAgent>();
  readonly #options: AgentPoolOptions;

  constructor(options: AgentPoolOptions) {
    this.#options = options;
  }

  /** The agent of `address` with `tls` (plain HTTP when `tls.enabled` is false). */
  agentFor(address: UpstreamAddress, tls: UpstreamTls): UpstreamAgent {
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
    for (const agent of this.#agents.values()) n += agent.openSockets;
    return n;
  }

  /** Destroys every agent and its sockets. */
  destroy(): void {
    for (const agent of this.#agents.values()) agent.destroy();
    this.#agents.clear();
  }

  #create(address: UpstreamAddress, settings: UpstreamTls): UpstreamAgent {
    const { host, port } = address;
    if (!settings.enabled) {
      return new UpstreamAgent(() => net.connect({ host, port, noDelay: true }), false, this.#options);
    }
    let ca: Buffer | undefined;
    if (settings.ca_file !== null) {
      try {
        ca = readFileSync(settings.ca_file);
      } catch (cause) {
        throw new DataPlaneError(DataPlaneErrorCode.CA_LOAD_FAILED, `cannot read ca_file ${settings.ca_file}`, {
          cause,
        });
      }
    }
    // SNI and the verified name: `server_name`, else the upstream host (never an IP as SNI).
    const serverName = settings.server_name;
    const sni = serverName ?? (net.isIP(host) === 0 ? host : undefined);
    const options: tls.ConnectionOptions = {
      host,
      port,
      rejectUnauthorized: !settings.insecure_skip_verify,
      ALPNProtocols: ['http/1.1'],
      ...(ca ? { ca } : {}),
      ...(sni !== undefined ? { servername: sni } : {}),
      ...(serverName !== null
        ? { checkServerIdentity: (_host: string, cert: PeerCertificate) => checkServerIdentity(serverName, cert) }
        : {}),
    };
    // The last TLS session is offered on the next connect (resumption saves a full handshake).
    let session: Buffer | undefined;
    const remember = (next: Buffer) => {
      session = next;
    };
    return new UpstreamAgent(
      () => {
        const socket = tls.connect(session === undefined ? options : { ...options, session });
        socket.setNoDelay(true);
        socket.on('session', remember);
        return socket;
      },
      true,
      this.#options,
    );
  }
}
