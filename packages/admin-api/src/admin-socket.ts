import { lstat, unlink } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import { trackForDrain } from './listener-drain.js';

/** The socket path of `--admin-socket` given without a path (spec §1). */
export const DEFAULT_ADMIN_SOCKET = '/var/run/proxy-admin.sock';

/** A listening Unix-domain-socket HTTP server. */
export interface UnixSocketListener {
  path: string;
  /**
   * Stops accepting, answers the requests it accepted within `graceMs`
   * (default 0: cuts them), closes and removes the socket file
   * (`listener-drain.ts`).
   */
  close(graceMs?: number): Promise<void>;
}

/** Resolves true when a process accepts connections on the socket at `path`. */
function isLive(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = net.connect(path);
    probe.once('connect', () => {
      probe.destroy();
      resolve(true);
    });
    probe.once('error', () => resolve(false));
  });
}

/**
 * Serves `handler` on a Unix socket at `path`, mode 0600, owned by the
 * process user. A stale socket file (nobody listening) is replaced; a live
 * one, or a path that is not a socket, is an error (never unlinked). The
 * socket file is removed on close, after a drain (`listener-drain.ts`).
 * `configure` is called with the server before it listens, to attach the
 * listeners for requests that never reach `handler` (`clientError`,
 * `checkExpectation`, `connect`).
 */
export async function listenUnixSocket(
  path: string,
  handler: http.RequestListener,
  options: { configure?: (server: http.Server) => void } = {},
): Promise<UnixSocketListener> {
  const existing = await lstat(path).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return null;
    throw err;
  });
  if (existing) {
    if (!existing.isSocket())
      throw new Error(`admin socket ${path} exists and is not a socket; refusing to replace it`);
    if (await isLive(path)) throw new Error(`admin socket ${path} is in use by a running process`);
    await unlink(path);
  }
  const server = http.createServer(handler);
  const drain = trackForDrain(server);
  options.configure?.(server);
  // Create the socket file as 0600 from the start, so no other user can connect in between.
  const previous = process.umask(0o177);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(path, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } finally {
    process.umask(previous);
  }
  const closed = new Promise<void>((resolve) => server.once('close', () => resolve()));
  let closing: Promise<void> | null = null;
  return {
    path,
    close(graceMs = 0) {
      closing ??= (async () => {
        await drain.drain(graceMs);
        await closed;
        await unlink(path).catch(() => {});
      })();
      return closing;
    },
  };
}
