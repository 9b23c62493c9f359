import type http from 'node:http';
import type http2 from 'node:http2';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { ConnectionLimiter } from '../connection-limits.js';

/**
 * Makes `server` accept connections paused and hand each to its own
 * 'connection' listeners (HTTP's, or TLS's, and the server's bookkeeping)
 * only once `limiter` admits it: what the client sent meanwhile waits in
 * the kernel, unread. TLS reads the server's `pauseOnConnect` when it wraps
 * the socket: it is off for that call, so the TLS socket reads.
 */
export function holdUntilAdmitted(
  server: http.Server | http2.Http2SecureServer,
  limiter: ConnectionLimiter,
  secure: boolean,
) {
  const held = server as (http.Server | http2.Http2SecureServer) & { pauseOnConnect: boolean };
  held.pauseOnConnect = true;
  const listeners = server.listeners('connection') as ((socket: Duplex) => void)[];
  server.removeAllListeners('connection');
  server.on('connection', (socket: Socket) =>
    limiter.admit(socket, () => {
      if (secure) held.pauseOnConnect = false;
      for (const listener of listeners) listener.call(server, socket);
      if (secure) held.pauseOnConnect = true;
      else socket.resume();
    }),
  );
}
