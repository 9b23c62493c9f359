import { Channel } from './channel.js';
import { DRAIN, INIT } from './worker-pool.js';

/** What a worker does on {@link INIT} and {@link DRAIN}. */
export interface WorkerHandlers<I> {
  /**
   * Starts serving with the primary's init body and registers the
   * channel's other handlers; its result (e.g. the bound ports) is the
   * primary's `onReady` answer. A rejection fails the worker's start.
   */
  init(body: I, channel: Channel): unknown;
  /** Stops accepting and finishes what it serves; the process exits after it resolves. */
  drain(body: { graceMs: number }): Promise<void> | void;
}

/**
 * The worker side of a {@link WorkerPool}: a channel to the primary over
 * this process's IPC. Messages other than init that arrive while init runs
 * are held and dispatched after it (they were sent after the init body was
 * built, so they are newer). The process exits when the primary goes away
 * (its IPC channel closes) and after a drain.
 */
export function connectToPrimary<I>(handlers: WorkerHandlers<I>): Channel {
  if (typeof process.send !== 'function') throw new Error('not a worker: no IPC channel to a primary');
  const channel = new Channel(process);
  channel.hold([INIT, DRAIN]);
  let ready: Promise<unknown> | null = null;
  channel.handle<I>(INIT, (body) => {
    ready = (async () => {
      try {
        return await handlers.init(body, channel);
      } finally {
        channel.release();
      }
    })();
    return ready;
  });
  channel.handle<{ graceMs: number }>(DRAIN, async (body) => {
    await ready?.catch(() => {});
    await handlers.drain(body);
    // After the answer is on its way.
    setImmediate(() => process.exit(0));
  });
  process.once('disconnect', () => process.exit(0));
  return channel;
}
