import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/**
 * How long a drain lets an idle connection be before it ends it, in ms: a
 * connection accepted just before the stop may have its request on the
 * wire already (the data plane's `DRAIN_IDLE_MS`, proxy-core).
 */
export const LISTENER_DRAIN_IDLE_MS = 250;

/**
 * How long a drain goes on taking the connections waiting in the listen
 * backlog at most, in ms (less when the grace period is shorter): a flood
 * cannot hold the listener open.
 */
export const LISTENER_DRAIN_ACCEPT_MS = 1_000;

/** A graceful stop of one HTTP listener (see {@link trackForDrain}). */
export interface ListenerDrain {
  /**
   * Stops accepting, answers what was accepted, then closes: resolves once
   * every connection is closed, or after `graceMs` with whatever is left
   * cut. Idempotent: a second call waits for the first.
   */
  drain(graceMs: number): Promise<void>;
}

/**
 * Tracks the connections of `server` (call before it listens) so that it
 * can stop as the data plane does (proxy-core `ProxyServer.drain`, issue
 * 28): the listener takes the connections waiting in its backlog (their
 * clients count as connected and may have sent their requests), then
 * closes (the kernel refuses new connections); a request in flight — its
 * body still arriving, or its handler still running — is answered, with
 * `Connection: close` when its head is still to be sent, and its
 * connection closes after it; a connection without a request gets
 * {@link LISTENER_DRAIN_IDLE_MS} for one to arrive (answered too), then
 * ends. What is still open after `graceMs` is destroyed.
 *
 * Node's own `server.close()` instead resets the backlog and destroys every
 * connection without a request in progress at once, one accepted a moment
 * ago whose request is not read yet included: their clients see a reset
 * for a request they sent before the stop. A Fastify app's `close()` also
 * answers 503 to requests it routes after close began; drain the server
 * first, then close the app (its `server.close()` then finds nothing to
 * do).
 */
export function trackForDrain(server: Server): ListenerDrain {
  /** Open connections and the responses each has in progress. */
  const sockets = new Map<Socket, number>();
  const responses = new Set<ServerResponse>();
  let draining: Promise<void> | null = null;
  let settled: (() => void) | null = null;

  let accepted = 0;
  server.on('connection', (socket: Socket) => {
    accepted++;
    sockets.set(socket, 0);
    socket.once('close', () => {
      sockets.delete(socket);
      if (sockets.size === 0) settled?.();
    });
  });
  // First, so that a listener answering at once already writes `Connection: close` while draining.
  server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => {
    const socket = req.socket as Socket;
    if (!sockets.has(socket)) return;
    sockets.set(socket, (sockets.get(socket) ?? 0) + 1);
    responses.add(res);
    if (draining !== null) res.shouldKeepAlive = false;
    res.once('close', () => {
      responses.delete(res);
      const active = sockets.get(socket);
      if (active === undefined) return;
      sockets.set(socket, active - 1);
      // A response whose keep-alive head went out before the drain: its connection ends after it.
      if (draining !== null && active === 1) socket.end();
    });
  });

  const run = async (graceMs: number): Promise<void> => {
    const deadline = Date.now() + graceMs;
    // Node's close() would also destroy every connection without a request in progress at once.
    server.closeIdleConnections = () => {};
    for (const res of responses) if (!res.headersSent) res.shouldKeepAlive = false;
    // Connections the kernel completed before the stop wait in the backlog, and a listener closed now would
    // reset them. Node accepts one per event-loop turn: turns run until one accepts nothing (the backlog is
    // empty), for at most LISTENER_DRAIN_ACCEPT_MS.
    const acceptUntil = Date.now() + Math.min(LISTENER_DRAIN_ACCEPT_MS, graceMs);
    for (let before = -1; server.listening && accepted !== before && Date.now() < acceptUntil; ) {
      before = accepted;
      await afterPoll();
    }
    if (server.listening) server.close();
    const closed = new Promise<void>((resolve) => {
      settled = resolve;
      if (sockets.size === 0) resolve();
    });
    await within(closed, Math.min(LISTENER_DRAIN_IDLE_MS, graceMs));
    if (sockets.size === 0) return;
    // A poll phase first reads what idle connections received meanwhile (a loaded process may run the timer
    // late, with a request waiting unread): only those still idle after it are ended.
    await afterPoll();
    for (const [socket, active] of sockets) if (active === 0) socket.end();
    await within(closed, deadline - Date.now());
    for (const socket of sockets.keys()) socket.destroy();
  };

  return {
    drain(graceMs) {
      draining ??= run(graceMs);
      return draining;
    },
  };
}

/** Resolves when `promise` does or after `ms`, whichever comes first. */
async function within(promise: Promise<void>, ms: number): Promise<void> {
  if (ms <= 0) return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([promise, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}

/**
 * Resolves after the event loop ran a poll phase (I/O: accepts, reads):
 * two check phases apart, whichever phase it is called from.
 */
function afterPoll(): Promise<void> {
  return new Promise((resolve) => setImmediate(() => setImmediate(resolve)));
}
