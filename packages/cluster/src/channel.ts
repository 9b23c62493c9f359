/**
 * What a {@link Channel} talks over: a forked child process (seen from the
 * primary) or `process` itself (seen from a worker). Both carry messages by
 * structured clone when forked with `serialization: 'advanced'`.
 */
export interface IpcEndpoint {
  // biome-ignore lint/suspicious/noExplicitAny: ChildProcess and process type `send` differently.
  send?: ((message: any, callback: (error: Error | null) => void) => boolean) | undefined;
  on(event: 'message', listener: (message: unknown) => void): unknown;
  off(event: 'message', listener: (message: unknown) => void): unknown;
  readonly connected?: boolean;
}

/** Answers a request or takes a notification; a thrown error (or rejection) goes back to the requester. */
export type Handler = (body: never) => unknown;

/** A request that got no answer in time, or whose peer went away. */
export class ChannelError extends Error {
  constructor(
    readonly code: 'TIMEOUT' | 'CLOSED' | 'REMOTE' | 'NO_HANDLER',
    message: string,
  ) {
    super(message);
    this.name = 'ChannelError';
  }
}

type Wire =
  | { k: 'q'; id: number; type: string; body: unknown }
  | { k: 'r'; id: number; ok: boolean; body: unknown }
  | { k: 'n'; type: string; body: unknown };

interface Pending {
  resolve(value: unknown): void;
  reject(error: Error): void;
  timer: NodeJS.Timeout;
  type: string;
}

/** Whether the peer is still there (read after a send, which may have found it gone). */
function stillConnected(endpoint: IpcEndpoint): boolean {
  return endpoint.connected !== false;
}

function isWire(message: unknown): message is Wire {
  return typeof message === 'object' && message !== null && 'k' in message;
}

/**
 * Typed messages between the primary and one worker: `request` (answered,
 * with a timeout) and `notify` (one way), both dispatched by `type` to the
 * handler registered with {@link handle}. A handler's return value (or
 * resolved promise) is the answer; its error is the requester's rejection
 * (`ChannelError` code `REMOTE`, the remote message kept). Messages go in
 * order; a request's answer may overtake later notifications.
 */
export class Channel {
  readonly #endpoint: IpcEndpoint;
  readonly #handlers = new Map<string, Handler>();
  readonly #pending = new Map<number, Pending>();
  #nextId = 1;
  #closed: string | null = null;
  /** While set: the types dispatched at once; other messages wait in {@link #held}. */
  #holdExcept: ReadonlySet<string> | null = null;
  #held: (Wire & { k: 'q' | 'n' })[] = [];
  readonly #onMessage = (message: unknown): void => this.#receive(message);

  constructor(endpoint: IpcEndpoint) {
    this.#endpoint = endpoint;
    endpoint.on('message', this.#onMessage);
  }

  /** Registers the handler of `type` (one per type; a later one replaces it). */
  handle<B>(type: string, handler: (body: B) => unknown): this {
    this.#handlers.set(type, handler as Handler);
    return this;
  }

  /** Sends a one-way message; false when the peer is gone. */
  notify(type: string, body: unknown): boolean {
    return this.#send({ k: 'n', type, body });
  }

  /** Sends a request; resolves with the peer's answer, rejects on its error, on timeout or when the channel closes. */
  request<T = unknown>(type: string, body: unknown, timeoutMs = 5000): Promise<T> {
    if (this.#closed !== null) return Promise.reject(new ChannelError('CLOSED', `${type}: ${this.#closed}`));
    const id = this.#nextId++;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        reject(new ChannelError('TIMEOUT', `${type}: no answer within ${timeoutMs} ms`));
      }, timeoutMs);
      timer.unref();
      this.#pending.set(id, { resolve: resolve as (v: unknown) => void, reject, timer, type });
      if (!this.#send({ k: 'q', id, type, body })) {
        clearTimeout(timer);
        this.#pending.delete(id);
        reject(new ChannelError('CLOSED', `${type}: the peer is gone`));
      }
    });
  }

  /**
   * Holds incoming requests and notifications, except those of `types`,
   * until {@link release}: a worker holds everything but init while it
   * starts, so what the primary sent after init is applied after it.
   */
  hold(types: readonly string[]): void {
    this.#holdExcept = new Set(types);
  }

  /** Dispatches what {@link hold} kept, in arrival order, and stops holding. */
  release(): void {
    this.#holdExcept = null;
    const held = this.#held;
    this.#held = [];
    for (const message of held) this.#dispatch(message);
  }

  /** Rejects every pending request (`CLOSED`, with `reason`) and stops listening. */
  close(reason: string): void {
    if (this.#closed !== null) return;
    this.#closed = reason;
    this.#endpoint.off('message', this.#onMessage);
    for (const [id, pending] of this.#pending) {
      clearTimeout(pending.timer);
      this.#pending.delete(id);
      pending.reject(new ChannelError('CLOSED', `${pending.type}: ${reason}`));
    }
  }

  /** Requests sent and not answered yet (tests, leaks). */
  get pendingRequests(): number {
    return this.#pending.size;
  }

  /**
   * Sends or queues `message`; false when the peer is gone. (`send` itself
   * also answers false for a message it only queued behind others, a big
   * route table for one: that is backpressure, not a closed channel.)
   */
  #send(message: Wire): boolean {
    const send = this.#endpoint.send;
    if (this.#closed !== null || send === undefined || this.#endpoint.connected === false) return false;
    try {
      // The callback swallows an EPIPE from a peer that exits meanwhile (its 'exit' handles it).
      send.call(this.#endpoint, message, () => {});
      return stillConnected(this.#endpoint);
    } catch {
      return false;
    }
  }

  #receive(message: unknown): void {
    if (!isWire(message)) return;
    if (message.k === 'r') {
      const pending = this.#pending.get(message.id);
      if (pending === undefined) return;
      this.#pending.delete(message.id);
      clearTimeout(pending.timer);
      if (message.ok) pending.resolve(message.body);
      else {
        const { code, message: text } = message.body as { code: ChannelError['code']; message: string };
        pending.reject(new ChannelError(code, text));
      }
      return;
    }
    if (this.#holdExcept !== null && !this.#holdExcept.has(message.type)) {
      this.#held.push(message);
      return;
    }
    this.#dispatch(message);
  }

  #dispatch(message: Wire & { k: 'q' | 'n' }): void {
    const handler = this.#handlers.get(message.type);
    if (message.k === 'n') {
      if (handler === undefined) return;
      try {
        const result = (handler as (b: unknown) => unknown)(message.body);
        if (result instanceof Promise) result.catch(() => {});
      } catch {
        // A notification has no one to tell.
      }
      return;
    }
    const { id, type } = message;
    if (handler === undefined) {
      this.#send({ k: 'r', id, ok: false, body: { code: 'NO_HANDLER', message: `${type}: no handler` } });
      return;
    }
    const fail = (err: unknown) =>
      this.#send({
        k: 'r',
        id,
        ok: false,
        body: { code: 'REMOTE', message: `${type}: ${err instanceof Error ? err.message : String(err)}` },
      });
    try {
      const result = (handler as (b: unknown) => unknown)(message.body);
      if (result instanceof Promise) {
        result.then((body) => this.#send({ k: 'r', id, ok: true, body }), fail);
      } else {
        this.#send({ k: 'r', id, ok: true, body: result });
      }
    } catch (err) {
      fail(err);
    }
  }
}
