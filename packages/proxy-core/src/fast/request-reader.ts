import type { Socket } from 'node:net';
import type { ListenerLimits } from '../connection-limits.js';
import { type DrainSocket, kDraining } from '../data-plane/client-connections.js';
import { freeRequestBytes, holdRequestBytes } from '../forward/exchange.js';
import { FastRequest } from './fast-request.js';
import { OK, PAUSED, Parser, REQUEST } from './llhttp.js';
import type { UpstreamConn } from './upstream-conn.js';

/** Node's `continueExpression`: an Expect value it answers with `100 Continue`. */
const CONTINUE = /(?:^|\W)100-continue(?:$|\W)/i;
/** `chunked` alone, as `transfer-encoding.ts` accepts it; any other Transfer-Encoding goes to node:http (400/501). */
const CHUNKED_ONLY = /^[ \t]*chunked[ \t]*$/i;

/** How the request being read frames its body. */
export const NO_BODY = 0;
export const LENGTH = 1;
export const CHUNKED = 2;

/** What the `clientError` handler answers a request whose body fails to parse or ends early (`client-errors.ts`). */
export const BAD_REQUEST_HEAD = 'HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n';
/** … and one whose body outlived `requestTimeoutMs`. */
const REQUEST_TIMEOUT_HEAD = 'HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n';

/**
 * Reading requests on a {@link FastConnection} (`fast-connection.ts`), one
 * llhttp parser per connection.
 *
 * The head: `req` as the forwarding helpers read it, and whether the fast
 * path may take the request at all — HTTP/1.1 or HTTP/1.0, one Host line,
 * an origin-form target, no Upgrade or TE, at most one `Expect:
 * 100-continue` (HTTP/1.1), a body framed by one Content-Length or by
 * `Transfer-Encoding: chunked` alone (HTTP/1.1), under `maxHead`, the
 * server not draining. Anything else makes `onHeadersComplete` fail the
 * parse ({@link reject}): the connection goes to node:http, which answers it
 * as before (llhttp already refused CL with TE, two Content-Lengths, a bad
 * one). A head that announces a body pauses the parser, so the request is
 * routed before a byte of its body is read.
 *
 * The body is read as node:http's path reads it (`forward/send.ts`,
 * `connection-limits.ts`). Content-Length bytes pass by llhttp (it is
 * paused after the head and reset after the body); a chunked body is
 * decoded by llhttp and re-chunked upstream, its trailers dropped. The
 * body is collected up to `REQUEST_BUFFER_BYTES` (within the process's
 * `REQUEST_BUFFER_TOTAL`) before the upstream request opens ({@link open}),
 * then written as it comes, the client's socket paused while the
 * upstream's is full ({@link pull}). A body silent for `bodyTimeoutMs`, or
 * slower than `bodyMinRate` over such a window, is cut ({@link cutBody}:
 * 408); one that outlives `requestTimeoutMs`, fails to parse or ends early
 * is refused ({@link refuseBody}). Time spent paused does not count.
 */
export abstract class RequestReader extends Parser {
  readonly req = new FastRequest();
  /** The head of the current message was refused (the parse fails): stop parsing, hand the connection over. */
  protected reject = false;
  /** A message's head is being parsed (from its first byte to the end of its headers). */
  protected inHead = false;
  /** The connection may stay open after this request (llhttp's verdict; the response may say otherwise). */
  protected keep = true;
  /** The request asks for `100 Continue`. */
  protected expect = false;
  /** An HTTP/1.0 request. */
  protected v10 = false;
  #inValue = false;
  #headBytes = 0;
  #hosts = 0;
  #other = false;
  #teLines = 0;
  #teValue = '';
  #expectLines = 0;
  /** The exchange in flight: its upstream connection (null between requests, and until the upstream request opens). */
  protected upstream: UpstreamConn | null = null;
  /** Bytes read after the current request (a pipelined one), parsed once it is answered. */
  protected pending: Buffer | null = null;
  /** llhttp finished a message (its body included) in the last `execute`. */
  protected complete = false;
  /** Per request: its framing ({@link NO_BODY}, {@link LENGTH}, {@link CHUNKED}) and its Content-Length (-1: none). */
  protected body = NO_BODY;
  protected declared = -1;
  /** The body is being read from the client. */
  protected receiving = false;
  /** The client's socket is paused until the upstream takes the body written so far. */
  protected bodyPaused = false;
  /** Body chunks read before the upstream request opened (null once it has). */
  protected collected: Buffer[] | null = null;
  #collectedBytes = 0;
  /** Content-Length bytes still to read. */
  #bodyLeft = 0;
  /** Body clocks: the request's start, the current rate window's start and the connection's bytes then (ms, bytes). */
  #requestAt = 0;
  #windowAt = 0;
  #windowBytes = 0;

  constructor(
    readonly socket: Socket & DrainSocket,
    protected readonly limits: Readonly<ListenerLimits>,
    /** A head longer than this (bytes, roughly as node:http counts them) is left to node:http. */
    readonly maxHead: number,
  ) {
    super(REQUEST);
    this.req.socket = socket;
  }

  /** Opens the upstream request: its head, then what {@link takeCollected} gives, then the body as it comes. */
  protected abstract open(): void;
  /** The body stalled or trickled: 408, or a reset once a response began. */
  protected abstract cutBody(): void;
  /** The body failed to parse, ended early, or outlived `requestTimeoutMs`: `head`, then the connection closes. */
  protected abstract refuseBody(head: string): void;

  override onMessageBegin(): number {
    const req = this.req;
    req.reset();
    this.#inValue = false;
    this.reject = false;
    this.inHead = true;
    this.#headBytes = 0;
    this.#hosts = 0;
    this.#other = false;
    this.declared = -1;
    this.#teLines = 0;
    this.#expectLines = 0;
    this.expect = false;
    return 0;
  }

  override onUrl(b: Buffer, s: number, e: number): number {
    this.req.url += b.toString('latin1', s, e);
    this.#headBytes += e - s;
    return 0;
  }

  override onHeaderField(b: Buffer, s: number, e: number): number {
    // Trailers of a chunked body: not forwarded (node:http's ClientRequest does not either).
    if (!this.inHead) return 0;
    const raw = this.req.rawHeaders;
    if (this.#inValue || raw.length === 0) raw.push(b.toString('latin1', s, e), '');
    else raw[raw.length - 2] += b.toString('latin1', s, e);
    this.#inValue = false;
    this.#headBytes += e - s + 4;
    return 0;
  }

  override onHeaderValue(b: Buffer, s: number, e: number): number {
    if (!this.inHead) return 0;
    const raw = this.req.rawHeaders;
    raw[raw.length - 1] += b.toString('latin1', s, e);
    this.#inValue = true;
    this.#headBytes += e - s;
    return 0;
  }

  override onHeadersComplete(_status: number, upgrade: number, keepAlive: number): number {
    const req = this.req;
    const raw = req.rawHeaders;
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i] as string;
      const n = name.length;
      // The names that decide framing or ask for a protocol step are looked at; the rest pass.
      if (n === 4) {
        if (name.toLowerCase() === 'host') {
          this.#hosts++;
          req.host = raw[i + 1] as string;
        }
      } else if (n === 14 || n === 17 || n === 6 || n === 7 || n === 2) {
        const lower = name.toLowerCase();
        // llhttp refused a second Content-Length, a bad one, and one beside Transfer-Encoding.
        if (lower === 'content-length') this.declared = Number((raw[i + 1] as string).trim());
        else if (lower === 'transfer-encoding') {
          this.#teLines++;
          this.#teValue = raw[i + 1] as string;
        } else if (lower === 'expect') {
          this.#expectLines++;
          this.expect = CONTINUE.test(raw[i + 1] as string);
        } else if (lower === 'upgrade' || lower === 'te') this.#other = true;
      } else if (n === 10 && name.toLowerCase() === 'connection') {
        req.connection = req.connection === undefined ? (raw[i + 1] as string) : `${req.connection}, ${raw[i + 1]}`;
      } else if (n === 15 && name.toLowerCase() === 'x-forwarded-for') {
        const v = raw[i + 1] as string;
        req.forwardedFor = req.forwardedFor === undefined ? v : `${req.forwardedFor}, ${v}`;
      }
    }
    req.method = this.method();
    this.keep = keepAlive === 1;
    this.inHead = false;
    const version = this.version();
    const v10 = version === 10;
    this.v10 = v10;
    req.httpVersionMinor = v10 ? 0 : 1;
    let body = NO_BODY;
    if (this.#teLines > 0) {
      // `chunked` alone on one line of an HTTP/1.1 request; anything else is refused by the front door (400/501).
      if (this.#teLines === 1 && !v10 && CHUNKED_ONLY.test(this.#teValue)) body = CHUNKED;
      else this.#other = true;
    } else if (this.declared > 0) body = LENGTH;
    else if (Number.isNaN(this.declared)) this.#other = true;
    // Expect: one `100-continue` on HTTP/1.1 (node:http answers anything else 417, and ignores it on HTTP/1.0).
    if (this.#expectLines > 0 && (this.#expectLines > 1 || !this.expect || v10)) this.#other = true;
    this.body = body;
    if (
      upgrade !== 0 ||
      this.#other ||
      this.#hosts !== 1 ||
      (version !== 11 && !v10) ||
      req.url.charCodeAt(0) !== 0x2f ||
      this.#headBytes + raw.length * 2 > this.maxHead ||
      raw.length > 200 ||
      this.socket[kDraining] === true
    ) {
      this.reject = true;
      return -1;
    }
    // A body: stop here, so the request is routed before a byte of it is read.
    return body === NO_BODY ? 0 : PAUSED;
  }

  /** The request's body starts: its clocks start now (`BodyWatch`: the request enters the data plane). */
  protected startBody(): void {
    this.receiving = true;
    this.#bodyLeft = this.declared;
    this.#requestAt = this.#windowAt = Date.now();
    this.#windowBytes = this.socket.bytesRead;
    this.socket.setTimeout(this.limits.bodyTimeoutMs);
  }

  /** The chunks collected so far, no longer counted as held (null: none). */
  protected takeCollected(): Buffer[] | null {
    const collected = this.collected;
    if (collected === null) return null;
    this.collected = null;
    freeRequestBytes(this.#collectedBytes);
    this.#collectedBytes = 0;
    return collected;
  }

  override onBody(b: Buffer, s: number, e: number): number {
    // A chunked body's data, decoded (a Content-Length body passes by llhttp: {@link readBody}).
    if (this.receiving && e > s) this.#bodyChunk(b.subarray(s, e));
    return 0;
  }

  override onMessageComplete(): number {
    this.complete = true;
    return PAUSED;
  }

  /** Bytes of the request body being received (`buf`: one read, or what followed the head in it). */
  protected readBody(buf: Buffer): void {
    const limits = this.limits;
    const now = Date.now();
    if (limits.requestTimeoutMs > 0 && now - this.#requestAt > limits.requestTimeoutMs) {
      this.refuseBody(REQUEST_TIMEOUT_HEAD);
      return;
    }
    const span = now - this.#windowAt;
    if (limits.bodyMinRate > 0 && limits.bodyTimeoutMs > 0 && span >= limits.bodyTimeoutMs) {
      const bytes = this.socket.bytesRead;
      if ((bytes - this.#windowBytes) * 1000 < limits.bodyMinRate * span) {
        this.cutBody();
        return;
      }
      this.#windowAt = now;
      this.#windowBytes = bytes;
    }
    if (this.body === LENGTH) {
      const n = Math.min(this.#bodyLeft, buf.length);
      this.#bodyLeft -= n;
      if (n > 0) this.#bodyChunk(n === buf.length ? buf : buf.subarray(0, n));
      if (this.#bodyLeft > 0 || !this.receiving) return;
      // The body passed by llhttp, paused after the head: it starts over at the next message.
      this.reset();
      this.#bodyEnd(n < buf.length ? buf.subarray(n) : null);
      return;
    }
    this.complete = false;
    const ret = this.execute(buf);
    if (!this.receiving) return;
    if (ret === PAUSED && this.complete) {
      this.resume();
      this.#bodyEnd(this.pausedAt < buf.length ? buf.subarray(this.pausedAt) : null);
    } else if (ret !== OK) this.refuseBody(BAD_REQUEST_HEAD);
  }

  /** A chunk of the request body: collected until the upstream request opens, then written upstream. */
  #bodyChunk(chunk: Buffer): void {
    const collected = this.collected;
    if (collected !== null) {
      collected.push(chunk);
      this.#collectedBytes += chunk.length;
      // Too big to hold: the upstream request opens and the body streams, from what arrived.
      if (!holdRequestBytes(this.#collectedBytes, chunk.length)) this.open();
      return;
    }
    this.sendChunk(chunk);
  }

  protected sendChunk(chunk: Buffer): void {
    const up = this.upstream;
    // The upstream answered and went already: the rest of the body is read and dropped.
    if (up === null) return;
    let ok: boolean;
    if (this.body === CHUNKED) {
      up.write(`${chunk.length.toString(16)}\r\n`);
      up.write(chunk);
      ok = up.write('\r\n');
    } else ok = up.write(chunk);
    if (!ok && !this.bodyPaused && this.receiving) {
      // The upstream is slower than the client: stop reading (and timing) it until it drains.
      this.bodyPaused = true;
      this.socket.pause();
    }
  }

  /** The request body was read to its end; `rest`: what followed it in the read (a pipelined request). */
  #bodyEnd(rest: Buffer | null): void {
    this.receiving = false;
    this.bodyPaused = false;
    if (rest !== null) {
      this.pending = rest;
      this.socket.pause();
    }
    if (this.collected !== null) {
      this.open();
      return;
    }
    const up = this.upstream;
    if (up === null) return;
    if (this.body === CHUNKED) up.write('0\r\n\r\n');
    up.sending = false;
  }

  /** No more of the body is read (answered or cut): what was collected is let go. */
  protected stopReceiving(): void {
    this.receiving = false;
    this.bodyPaused = false;
    this.takeCollected();
  }

  /** UpstreamClient: the upstream took the body written so far. */
  pull(): void {
    if (!this.bodyPaused) return;
    this.bodyPaused = false;
    if (!this.receiving) return;
    // The time it waited for the upstream does not count against the client.
    this.#windowAt = Date.now();
    this.#windowBytes = this.socket.bytesRead;
    this.socket.setTimeout(this.limits.bodyTimeoutMs);
    this.socket.resume();
  }
}
