import net from 'node:net';
import { DataPlaneError, DataPlaneErrorCode } from '../errors.js';
import type { PoolMember } from '../pool/upstream-pool.js';
import { OK, PAUSED, Parser, RESPONSE } from './llhttp.js';

/** What an {@link UpstreamConn} reports to the exchange it carries (the client connection). */
export interface UpstreamClient {
  /** The method sent (a HEAD answer has no body, whatever its headers say). */
  readonly noBody: boolean;
  /** The response head: status and raw `[name, value, …]` lines. */
  respond(status: number, raw: string[]): void;
  /** A body chunk; false asks the upstream to wait for {@link UpstreamConn.flow}. */
  data(chunk: Buffer): boolean;
  /** The response ended. */
  end(): void;
  /** The upstream took what {@link UpstreamConn.write} queued (its socket drained): send more of the request body. */
  pull(): void;
  /** The exchange failed before (`started` false) or during the response; `code` as Node's error codes. */
  fail(code: string, started: boolean, reused: boolean): void;
  /**
   * Whether bytes passed to {@link data} since the last call may still be referenced (queued behind a
   * slow client, collected for a rewrite, handed to a transform): the upstream then reads into a new buffer.
   */
  holds(): boolean;
}

/** The fast path's upstream connections of one data plane: idle ones per member, and every open one. */
export class FastUpstreams {
  /** Idle keep-alive connections per member, most recently used last. */
  readonly idle = new WeakMap<PoolMember, UpstreamConn[]>();
  /** Every open connection (for close and the socket count). */
  readonly open = new Set<UpstreamConn>();
  /** Read buffers ({@link READ_BYTES} each) allocated so far: one per connection, and one per read a client held. */
  readBuffers = 0;

  constructor(
    readonly connectMs: number,
    readonly idleMs: number,
  ) {}

  /** An idle connection to `member`, or a new one. */
  take(member: PoolMember): UpstreamConn {
    const list = this.idle.get(member);
    if (list !== undefined) {
      let conn = list.pop();
      while (conn?.socket.destroyed) conn = list.pop();
      if (conn !== undefined) {
        conn.reused = true;
        conn.socket.ref();
        if (conn.socket.timeout !== this.idleMs) conn.socket.setTimeout(this.idleMs);
        return conn;
      }
    }
    return new UpstreamConn(this, member);
  }

  /** Open connections, in use or idle. */
  count(): number {
    return this.open.size;
  }

  /** Destroys every connection (the data plane closes). */
  closeAll(): void {
    for (const conn of this.open) conn.socket.destroy();
  }
}

const KEEP_ALIVE_TIMEOUT = /(?:^|[\s,])timeout\s*=\s*(\d+)/i;
/** Idle connections kept per member (as the agents keep: `UpstreamAgent`). */
const MAX_IDLE = 256;
/**
 * Bytes one read from an upstream takes (Node's own reads take 64 KiB into a new buffer each): a
 * 100 KB response mostly arrives in one read and leaves to the client in one write.
 */
export const READ_BYTES = 128 * 1024;

/**
 * One raw keep-alive connection to an upstream member, whose responses
 * llhttp parses: the fast path's `http.Agent` socket and `ClientRequest`
 * in one object, reused across requests. The same timeouts as the agents
 * (`forward/agents.ts`): connect (`PROXY_CONNECT_TIMEOUT`), idle while
 * waiting or pooled (`PROXY_IDLE_TIMEOUT`), the upstream's `Keep-Alive:
 * timeout` hint less a second for the time it sits in the pool, and a byte
 * arriving on an idle connection closes it.
 */
export class UpstreamConn extends Parser {
  readonly socket: net.Socket;
  client: UpstreamClient | null = null;
  /** The connection served a request before this one (a reset is then retried once). */
  reused = false;
  started = false;
  done = false;
  reuse = false;
  full = false;
  /**
   * The request's body is still being written: a response that ends before
   * it does leaves this connection out of step (never pooled).
   */
  sending = false;
  /** How long the connection may sit in the pool, ms. */
  pooledMs: number;
  error = '';
  /**
   * Body bytes still to come of a response framed by Content-Length: they
   * pass straight to the client, not through llhttp (no copy into wasm
   * memory); -1 when llhttp reads the body (chunked, EOF-delimited, none).
   */
  #bodyLeft = -1;
  readonly #raw: string[] = [];
  #inValue = false;
  readonly #member: PoolMember;
  readonly #idleMs: number;
  readonly #owner: FastUpstreams;
  /** Where reads land, reused while nothing holds on to what the last read put there. */
  #buf: Buffer;

  constructor(owner: FastUpstreams, member: PoolMember) {
    super(RESPONSE);
    const { connectMs, idleMs } = owner;
    this.#owner = owner;
    this.#member = member;
    this.#idleMs = idleMs;
    this.pooledMs = idleMs;
    this.#buf = Buffer.allocUnsafe(READ_BYTES);
    owner.readBuffers++;
    const socket = net.connect({
      host: member.address.host,
      port: member.address.port,
      noDelay: true,
      onread: { buffer: () => this.#buf, callback: (n, buf) => this.#read(n, buf as Buffer) },
    });
    this.socket = socket;
    owner.open.add(this);
    const timer = setTimeout(() => {
      socket.destroy(
        new DataPlaneError(DataPlaneErrorCode.CONNECT_TIMEOUT, `upstream connect timed out after ${connectMs} ms`),
      );
    }, connectMs);
    socket.once('connect', () => clearTimeout(timer));
    socket.setKeepAlive(true, 1000);
    socket.setTimeout(idleMs);
    socket.on('timeout', () =>
      socket.destroy(new DataPlaneError(DataPlaneErrorCode.IDLE_TIMEOUT, `upstream idle for ${socket.timeout} ms`)),
    );
    socket.on('drain', () => this.client?.pull());
    socket.on('error', (err: NodeJS.ErrnoException) => {
      this.error ||= err.code ?? 'ECONNRESET';
    });
    socket.once('close', () => {
      clearTimeout(timer);
      this.closed();
    });
  }

  /** One read of `n` bytes into `buf` (this connection's {@link #buf}). */
  #read(n: number, buf: Buffer): boolean {
    const c = this.client;
    this.feed(buf.subarray(0, n));
    // The client still holds bytes of this buffer: the next read takes a new one (`onread.buffer` is asked after each read).
    if (c?.holds() === true) {
      this.#buf = Buffer.allocUnsafe(READ_BYTES);
      this.#owner.readBuffers++;
    }
    // `feed` pauses the socket itself when the client is full.
    return true;
  }

  /** Sends one request's head for `client`; its body, if any, follows with {@link write}. */
  start(client: UpstreamClient, head: string): void {
    this.client = client;
    this.started = false;
    this.done = false;
    this.full = false;
    this.socket.write(head, 'latin1');
  }

  /** Writes request body bytes (framed by the caller); false: wait for {@link UpstreamClient.pull}. */
  write(chunk: Buffer | string): boolean {
    return typeof chunk === 'string' ? this.socket.write(chunk, 'latin1') : this.socket.write(chunk);
  }

  /** The client's socket drained: read on. */
  flow(): void {
    this.socket.resume();
  }

  /** The client went away: this connection's response is unwanted, so it goes. */
  abort(): void {
    this.client = null;
    this.socket.destroy();
  }

  feed(buf: Buffer): void {
    const c = this.client;
    if (c === null) {
      // Bytes on an idle connection: out of step with its requests (as nginx's keepalive closes it).
      this.socket.destroy();
      return;
    }
    // Corked: the response head and the body parsed from one read leave in one write (writev).
    const out = (c as { socket?: { cork(): void; uncork(): void } }).socket;
    out?.cork();
    let ret = OK;
    if (this.#bodyLeft > 0) this.#passBody(c, buf, 0);
    else {
      ret = this.execute(buf);
      // Paused after a head with Content-Length: what follows in this read is body.
      if (ret === PAUSED && this.#bodyLeft > 0) {
        ret = OK;
        this.#passBody(c, buf, this.pausedAt);
      }
    }
    out?.uncork();
    if (ret !== OK) {
      // A parse error; or bytes after a complete message (a body on a 204 or a HEAD answer):
      // the response is whole when done, but this connection is never reused.
      this.reuse = false;
      if (!this.done) this.error = 'HPE_INVALID';
      this.socket.destroy();
      if (!this.done) return;
    }
    if (this.full) {
      this.full = false;
      // Once the response is whole there is nothing to hold back: the next exchange reads at once.
      if (!this.done) this.socket.pause();
    }
    if (this.done && this.client !== null) {
      this.client = null;
      if (this.reuse && !this.sending && !this.socket.destroyed) this.#pool();
      else this.socket.destroy();
      c.end();
    }
  }

  /** Hands body bytes of a Content-Length response from `buf[from]` on to the client; at its end the parser starts over. */
  #passBody(c: UpstreamClient, buf: Buffer, from: number): void {
    const n = Math.min(this.#bodyLeft, buf.length - from);
    if (n > 0 && !c.data(from === 0 && n === buf.length ? buf : buf.subarray(from, from + n))) this.full = true;
    this.#bodyLeft -= n;
    if (this.#bodyLeft > 0) return;
    this.#bodyLeft = -1;
    this.done = true;
    this.reset();
    // Bytes past the declared body: the connection is out of step, never reused.
    if (from + n < buf.length) this.reuse = false;
  }

  #pool(): void {
    const socket = this.socket;
    if (this.pooledMs <= 0) {
      socket.destroy();
      return;
    }
    const idle = this.#owner.idle;
    let list = idle.get(this.#member);
    if (list === undefined) {
      list = [];
      idle.set(this.#member, list);
    }
    if (list.length >= MAX_IDLE) {
      socket.destroy();
      return;
    }
    const pooled = Math.min(this.pooledMs, this.#idleMs);
    if (socket.timeout !== pooled) socket.setTimeout(pooled);
    socket.unref();
    list.push(this);
  }

  closed(): void {
    this.#owner.open.delete(this);
    const list = this.#owner.idle.get(this.#member);
    if (list !== undefined) {
      const i = list.indexOf(this);
      if (i !== -1) list.splice(i, 1);
    }
    const c = this.client;
    this.client = null;
    if (c !== null) {
      // An EOF-delimited body ends at close.
      if (this.started && !this.done && this.error === '' && this.needsEof()) {
        this.client = c;
        this.finish();
        this.client = null;
      }
      if (this.done) c.end();
      else c.fail(this.error || 'ECONNRESET', this.started, this.reused);
    }
    this.free();
  }

  override onMessageBegin(): number {
    this.#raw.length = 0;
    this.#inValue = false;
    return 0;
  }

  override onHeaderField(b: Buffer, s: number, e: number): number {
    const raw = this.#raw;
    if (this.#inValue || raw.length === 0) raw.push(b.toString('latin1', s, e), '');
    else raw[raw.length - 2] += b.toString('latin1', s, e);
    this.#inValue = false;
    return 0;
  }

  override onHeaderValue(b: Buffer, s: number, e: number): number {
    const raw = this.#raw;
    raw[raw.length - 1] += b.toString('latin1', s, e);
    this.#inValue = true;
    return 0;
  }

  override onHeadersComplete(status: number, _upgrade: number, keepAlive: number): number {
    // 1xx (no Expect is sent upstream): skipped, the final response follows.
    if (status < 200) return 0;
    // Read here: llhttp resets its flags once the message completes.
    this.reuse = keepAlive === 1;
    const raw = this.#raw;
    this.pooledMs = this.#idleMs;
    let length = -1;
    let chunked = false;
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i] as string;
      const n = name.length;
      if (n === 10 && name.toLowerCase() === 'keep-alive') {
        const match = KEEP_ALIVE_TIMEOUT.exec(raw[i + 1] as string);
        if (match !== null) this.pooledMs = Number(match[1]) * 1000 - 1000;
      } else if (n === 14 && name.toLowerCase() === 'content-length') {
        // llhttp refused a second or malformed one before this callback.
        length = Number(raw[i + 1]);
      } else if (n === 17 && name.toLowerCase() === 'transfer-encoding') chunked = true;
    }
    this.started = true;
    const c = this.client as UpstreamClient;
    c.respond(status, raw);
    // 1: no body follows (the answer to HEAD, a 204 or 304), whatever the headers say.
    if (c.noBody || status === 204 || status === 304) return 1;
    if (length > 0 && !chunked) {
      this.#bodyLeft = length;
      return PAUSED;
    }
    return 0;
  }

  override onBody(b: Buffer, s: number, e: number): number {
    const c = this.client;
    if (c !== null && !c.data(b.subarray(s, e))) this.full = true;
    return 0;
  }

  override onMessageComplete(): number {
    if (this.started) this.done = true;
    return 0;
  }
}
