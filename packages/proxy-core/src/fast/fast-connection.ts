import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';
import type { Transform } from 'node:stream';
import { kOwed } from '../client-errors.js';
import { type DrainSocket, kDraining } from '../data-plane/client-connections.js';
import { handRecord } from '../data-plane/request-record.js';
import { mayHoldBody } from '../forward/exchange.js';
import { forwardedFor } from '../forward/forwarded-headers.js';
import type { FastUpstream } from '../forward/forwarder.js';
import { responseHeaders } from '../forward/response-headers.js';
import { applyRewrite, transformFor, wholeRewriteFor } from '../forward/response-hooks.js';
import { isConnectFailure, isTimeout } from '../forward/retry.js';
import { buildUpstreamHeaders } from '../forward/upstream-headers.js';
import type { DataPlaneHooks, RequestContext } from '../hooks.js';
import type { FastPlan } from '../pipeline.js';
import type { PoolMember } from '../pool/upstream-pool.js';
import { normalizeHost } from '../route-table.js';
import { copyForWrite, keptCopy } from './chunk-copy.js';
import { FastEncode } from './fast-encode.js';
import type { FastListener, FastPath } from './fast-path.js';
import { fastRecord, peerIp } from './fast-request.js';
import { OK, PAUSED } from './llhttp.js';
import { BAD_REQUEST_HEAD, CHUNKED, NO_BODY, RequestReader } from './request-reader.js';
import { ResponseWriter } from './response-head.js';
import type { UpstreamClient, UpstreamConn } from './upstream-conn.js';

const TEXT = 'text/plain; charset=utf-8';
const EVENT_STREAM = /^text\/event-stream/i;
const RETRIABLE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
/** Methods Node's ClientRequest sends without framing when they have no body (the others: an empty chunked body). */
const NO_BODY_METHODS = new Set(['GET', 'HEAD', 'DELETE', 'OPTIONS', 'TRACE', 'CONNECT']);
const CONTINUE_HEAD = 'HTTP/1.1 100 Continue\r\n\r\n';
/** What `BodyWatch` answers a body that stalled or trickled (`connection-limits.ts`). */
const BODY_TIMEOUT = 'request timeout\n';

/**
 * One client connection on the HTTP/1.1 fast path: requests parsed by
 * llhttp on the raw socket, one at a time (a pipelined request waits for
 * the answer before it), each either served here — forwarded on a pooled
 * raw upstream connection ({@link UpstreamConn}) — or, at that request's
 * first byte, the connection is handed with its unread bytes to the
 * node:http server for good ({@link FastPath.fallback}). A request is served
 * here when it is HTTP/1.1 or HTTP/1.0 with exactly one Host line and an
 * origin-form target, no Upgrade or TE, at most an `Expect: 100-continue`
 * (HTTP/1.1), a body framed by one Content-Length or by `Transfer-Encoding:
 * chunked` alone (HTTP/1.1), and its route is fast (`FrontDoor.fastRoute`,
 * `CompiledSite.fast`, `HttpForwarder.fastUpstream`); a head may come in
 * several reads. Anything llhttp refuses goes to node:http too, which
 * answers it as before (same parser, same strictness: CL with TE, two
 * Content-Lengths, a bad one).
 *
 * A request is read as `request-reader.ts` says (head, body);
 * `100 Continue` first when the client expects it; a response that leaves
 * the body unread says `Connection: close` and the connection closes
 * lingering.
 */
export class FastConnection extends RequestReader implements UpstreamClient {
  readonly #path: FastPath;
  readonly #listener: FastListener;
  /** A chunk too large to copy (`keptCopy`) went to a rewrite or a transform since {@link holds} last asked. */
  #held = false;
  /** Bytes of the upstream's read buffer went to the socket uncopied since the last {@link holds}. */
  #shared = false;
  #busy = false;
  /** The bytes of a head that came in several reads, from its first byte (handed over whole if need be). */
  #partial: Buffer | null = null;
  /** Bounds a head that comes in several reads (`headersTimeoutMs`, as node:http's). */
  #headTimer: NodeJS.Timeout | null = null;
  /** After a response that closes the connection: what the client still sends is read and dropped. */
  #discard = false;
  #sent100 = false;
  /** Per request. */
  #ctx: RequestContext | null = null;
  #plan: FastPlan | null = null;
  #fast: FastUpstream | null = null;
  #member: PoolMember | null = null;
  #head = '';
  /** The response to the request in flight. */
  readonly #res: ResponseWriter;
  #retried = false;
  #startedAt = 0;
  #startedMono = 0;
  /** The `onRequest` hook this request's record goes to once it ends; null: none, or already handed. */
  #recordTo: NonNullable<DataPlaneHooks['onRequest']> | null = null;
  #whole: { status: number; headers: OutgoingHttpHeaders; rewrite: (b: Buffer) => Buffer; chunks: Buffer[] } | null =
    null;
  #transform: Transform | null = null;
  /** The site's `encode` (made on the first request that needs it), and whether this request goes through it. */
  #enc: FastEncode | null = null;
  #encoding = false;
  #writeTimer: NodeJS.Timeout | null = null;
  readonly #onData = (buf: Buffer) => this.feed(buf);
  readonly #onDrain = () => {
    this.#enc?.resume();
    this.upstream?.flow();
  };
  readonly #onClose = () => this.#closed();
  readonly #onTimeout = () => this.#timedOut();
  readonly #onError = () => {};
  /** The client half-closed (the listener allows half-open connections, as node:http does): end ours too. */
  readonly #onEnd = () => {
    // A body cut short: node:http's parser fails at the end of input (400).
    if (this.receiving) this.refuseBody(BAD_REQUEST_HEAD);
    else if (this.#busy) this.keep = false;
    else if (!this.#discard) this.socket.end();
  };

  constructor(socket: Socket, path: FastPath, listener: FastListener) {
    // A head near the listener's limit goes to node:http, which answers 431 over it.
    super(socket as Socket & DrainSocket, path.limits, listener.maxHeaderSize - 512);
    this.#res = new ResponseWriter(socket);
    this.#path = path;
    this.#listener = listener;
    socket.on('data', this.#onData);
    socket.on('drain', this.#onDrain);
    socket.on('close', this.#onClose);
    socket.on('error', this.#onError);
    socket.on('timeout', this.#onTimeout);
    socket.on('end', this.#onEnd);
    socket.setTimeout(path.limits.headersTimeoutMs);
  }

  /** Whether the upstream's HEAD answer has no body. */
  get noBody(): boolean {
    return this.req.method === 'HEAD';
  }

  feed(buf: Buffer): void {
    if (this.#discard) return;
    if (this.receiving) {
      this.readBody(buf);
      return;
    }
    if (this.#busy) {
      // A pipelined request: read after this answer (the socket pauses meanwhile).
      this.pending = this.pending === null ? buf : Buffer.concat([this.pending, buf]);
      this.socket.pause();
      return;
    }
    const partial = this.#partial;
    // From the request's first byte: what node:http gets if it must take the request.
    const start = partial === null ? buf : Buffer.concat([partial, buf]);
    this.complete = false;
    const ret = this.execute(buf);
    if (!this.reject) {
      if (ret === PAUSED) {
        this.#headDone();
        if (this.complete) {
          // A message without body.
          this.resume();
          this.pending = this.pausedAt < buf.length ? buf.subarray(this.pausedAt) : null;
          this.#dispatch(start);
          return;
        }
        // Paused after a head that announces a body: what follows in this read is body.
        const at = this.pausedAt;
        if (this.#dispatch(start) && this.receiving) {
          if (this.body === CHUNKED) this.resume();
          if (at < buf.length) this.readBody(buf.subarray(at));
        }
        return;
      }
      if (ret === OK) {
        if (!this.inHead) return;
        // A head still incomplete: wait for the rest (node:http answers 431 over the size limit).
        if (start.length <= this.maxHead) {
          this.#partial = start;
          if (this.#headTimer === null) {
            this.#headTimer = setTimeout(headTimedOut, this.#path.limits.headersTimeoutMs, this);
            this.#headTimer.unref();
          }
          return;
        }
      }
    }
    // Refused by llhttp, not served here, or a head too long: node:http takes it from its first byte.
    this.#handOver(start);
  }

  #headDone(): void {
    this.#partial = null;
    if (this.#headTimer !== null) {
      clearTimeout(this.#headTimer);
      this.#headTimer = null;
    }
  }

  /** A head that came in several reads was not complete within `headersTimeoutMs`: 408, as node:http. */
  headTimedOut(): void {
    this.#headTimer = null;
    if (this.#partial !== null && !this.#busy) this.#listener.timedOut(this.socket);
  }

  #handOver(buf: Buffer): void {
    this.#headDone();
    const socket = this.socket;
    socket.removeListener('data', this.#onData);
    socket.removeListener('drain', this.#onDrain);
    socket.removeListener('close', this.#onClose);
    socket.removeListener('error', this.#onError);
    socket.removeListener('timeout', this.#onTimeout);
    socket.removeListener('end', this.#onEnd);
    socket.setTimeout(0);
    this.free();
    this.#path.fallback(socket, buf, this.#listener);
  }

  /** The body stalled or trickled (`bodyTimeoutMs`, `bodyMinRate`): 408, or a reset once a response began. */
  protected override cutBody(): void {
    this.stopReceiving();
    const up = this.upstream;
    this.upstream = null;
    up?.abort();
    this.#transform?.destroy();
    this.#transform = null;
    this.#whole = null;
    this.#enc?.abort();
    if (this.#res.headersSent) {
      this.socket.destroy();
      return;
    }
    this.keep = false;
    this.#answer(408, BODY_TIMEOUT, {
      'content-type': TEXT,
      'content-length': BODY_TIMEOUT.length,
      connection: 'close',
    });
  }

  /** The body failed to parse, the client ended it early, or the request outlived `requestTimeoutMs`: as the `clientError` handler answers. */
  protected override refuseBody(head: string): void {
    this.stopReceiving();
    const up = this.upstream;
    this.upstream = null;
    up?.abort();
    if (!this.#res.headersSent && this.socket.writable) this.socket.end(head);
    this.socket.destroy();
  }

  /** Serves the parsed request here (true), or hands the connection over from its first byte (`buf`). */
  #dispatch(buf: Buffer): boolean {
    const req = this.req;
    const path = this.#path;
    const host = normalizeHost(req.host);
    const url = req.url;
    const q = url.indexOf('?');
    const urlPath = q < 0 ? url : url.slice(0, q);
    const route = path.door.fastRoute(host, urlPath, this.#listener.secure);
    const plan = route?.compiled?.fast;
    const fast = plan === undefined ? null : path.forwarder.fastUpstream(plan.handler);
    // `basic_auth`: only remembered credentials here; node:http answers or verifies the others.
    const denied = plan?.auth?.remembered(req.headers.authorization) === false;
    if (route == null || plan === undefined || fast === null || denied) {
      this.#handOver(buf);
      return false;
    }
    this.#busy = true;
    path.served++;
    this.socket[kOwed] = 1;
    if (path.writeTimeoutMs > 0) this.#writeTimer = setTimeout(cutUnwritten, path.writeTimeoutMs, this);
    const clientIp = path.clientIp.enabled
      ? path.clientIp.resolve(this.socket.remoteAddress, req.forwardedFor)
      : peerIp(this.socket.remoteAddress);
    const ctx: RequestContext = {
      domain: route.domain,
      host,
      path: urlPath,
      clientIp,
      secure: this.#listener.secure,
      site: route.site,
    };
    this.#ctx = ctx;
    this.#plan = plan;
    this.#fast = fast;
    this.#encoding = plan.encoder !== null && (this.#enc ?? this.#newEncode()).start(plan.encoder, req);
    this.#res.reset();
    this.#retried = false;
    this.#sent100 = false;
    this.#recordTo = path.hooks.onRequest ?? null;
    if (this.#recordTo !== null) {
      this.#startedAt = Date.now();
      this.#startedMono = performance.now();
      path.counts.inFlight++;
    }
    const body = this.body;
    if (body !== NO_BODY) this.startBody();
    const member = fast.pool.pick(clientIp, undefined);
    if (member === null) {
      this.#answer(503, 'no healthy upstream\n', {
        'content-type': TEXT,
        'retry-after': String(fast.pool.retryAfterSeconds()),
      });
      return true;
    }
    this.#member = member;
    member.active++;
    const lines = buildUpstreamHeaders(req as never, forwardedFor(req as never, ctx, path.clientIp), fast.headers, ctx);
    let head = `${req.method} ${url} HTTP/1.1\r\n`;
    for (let i = 0; i < lines.length; i += 2) head += `${lines[i]}: ${lines[i + 1]}\r\n`;
    // As node:http's ClientRequest sends a request without body: an empty chunked one but for GET and its kind.
    const empty = body === NO_BODY && this.declared < 0 && !NO_BODY_METHODS.has(req.method);
    this.#head = `${head}Connection: keep-alive\r\n${empty ? 'Transfer-Encoding: chunked\r\n\r\n0\r\n' : ''}\r\n`;
    // The client waits for `100 Continue` before its body (Expect is not forwarded).
    if (this.expect && (body !== NO_BODY || this.declared === 0)) {
      this.#sent100 = true;
      this.socket.write(CONTINUE_HEAD, 'latin1');
    }
    // A body is read first, up to REQUEST_BUFFER_BYTES, before the upstream request opens (`forward/send.ts`).
    if (body !== NO_BODY && mayHoldBody()) this.collected = [];
    else this.open();
    return true;
  }

  /** Opens the upstream request: its head, the body collected so far, its end when read whole. */
  protected override open(): void {
    const up = this.#path.upstreams.take(this.#member as PoolMember);
    this.upstream = up;
    up.sending = this.receiving;
    if (this.collected === null && !this.receiving && this.body !== CHUNKED) {
      up.start(this, this.#head);
      return;
    }
    up.socket.cork();
    up.start(this, this.#head);
    const collected = this.takeCollected();
    if (collected !== null) for (const chunk of collected) this.sendChunk(chunk);
    if (!this.receiving && this.body === CHUNKED) up.write('0\r\n\r\n');
    up.socket.uncork();
  }

  // UpstreamClient: the upstream's answer.

  respond(status: number, raw: string[]): void {
    const headers = responseHeaders(raw, null) as OutgoingHttpHeaders;
    if (status === 204 && headers['content-length'] !== undefined) delete headers['content-length'];
    const ctype = headers['content-type'];
    if (typeof ctype === 'string' && EVENT_STREAM.test(ctype)) this.upstream?.socket.setTimeout(0);
    const plan = this.#plan as FastPlan;
    const ctx = this.#ctx as RequestContext;
    // A plan with placeholders or matchers builds its edit for this request (`terminal.ts` alike).
    const edit = plan.dynamic?.editFor(this.req as never, ctx) ?? (this.#listener.secure ? plan.secure : plan.plain);
    edit(headers, status);
    const hooks = this.#path.hooks;
    const rewrite = wholeRewriteFor(hooks, ctx, this.req as never, status, headers as IncomingHttpHeaders);
    if (rewrite !== null) {
      this.#whole = { status, headers, rewrite, chunks: [] };
      return;
    }
    const transform = transformFor(hooks, ctx, this.req as never, status, headers as IncomingHttpHeaders);
    this.#writeHead(status, headers);
    if (transform !== null) {
      this.#transform = transform;
      transform.on('data', (chunk: Buffer) => this.#write(chunk));
      transform.on('end', () => this.#finish());
      transform.on('error', () => this.socket.destroy());
    }
  }

  data(chunk: Buffer): boolean {
    if (this.#whole !== null || this.#transform !== null) {
      const copy = keptCopy(chunk);
      const kept = copy ?? chunk;
      if (copy === null) this.#held = true;
      if (this.#whole !== null) {
        this.#whole.chunks.push(kept);
        return true;
      }
      return (this.#transform as Transform).write(kept) || true;
    }
    const copy = this.#encoding ? null : copyForWrite(chunk, this.socket, this.#listener.secure);
    if (copy !== null) return this.#res.write(copy);
    this.#shared = true;
    return this.#write(chunk);
  }

  holds(): boolean {
    // A write the kernel did not take at once is queued with the chunk itself.
    const held = this.#held || (this.#shared && this.socket.writableLength > 0);
    this.#held = false;
    this.#shared = false;
    return held;
  }

  end(): void {
    this.upstream = null;
    const whole = this.#whole;
    if (whole !== null) {
      this.#whole = null;
      const chunks = whole.chunks;
      const body = applyRewrite(whole.rewrite, chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks));
      whole.headers['content-length'] = String(body.length);
      this.socket.cork();
      this.#writeHead(whole.status, whole.headers);
      this.#write(body);
      this.socket.uncork();
      this.#finish();
      return;
    }
    if (this.#transform !== null) {
      this.#transform.end();
      return;
    }
    this.#finish();
  }

  fail(code: string, started: boolean, reused: boolean): void {
    this.upstream = null;
    if (!this.#busy) return;
    const member = this.#member as PoolMember;
    if (
      !started &&
      !this.#retried &&
      reused &&
      (code === 'ECONNRESET' || code === 'EPIPE') &&
      this.body === NO_BODY &&
      this.declared < 0 &&
      RETRIABLE_METHODS.has(this.req.method)
    ) {
      // The upstream closed a pooled connection as we reused it: nothing was processed, send it again once.
      this.#retried = true;
      this.open();
      return;
    }
    this.#release();
    if (isConnectFailure(code)) (this.#fast as FastUpstream).pool.markFailed(member);
    if (started || this.#res.headersSent) {
      this.socket.destroy();
      return;
    }
    const timeout = isTimeout(code);
    this.keep = false;
    this.#answer(timeout ? 504 : 502, timeout ? 'gateway timeout\n' : 'bad gateway\n', {
      'content-type': TEXT,
      connection: 'close',
    });
  }

  /** One of the forwarder's own short answers (502, 503, 504), as `res.writeHead(status, headers); res.end(body)` sends it (chunked). */
  #answer(status: number, body: string, headers: OutgoingHttpHeaders): void {
    this.socket.cork();
    this.#writeHead(status, headers);
    this.#write(Buffer.from(body, 'latin1'));
    this.socket.uncork();
    this.#finish();
  }

  /** The response head, through the site's `encode` when it has one. */
  #writeHead(status: number, headers: OutgoingHttpHeaders): void {
    if (this.#encoding) (this.#enc as FastEncode).head(status, headers);
    else this.#sendHead(status, headers);
  }

  /** Writes the head (`ResponseWriter`); `Connection: close` while the request body is unread, or after an `Expect` not answered with `100 Continue`. */
  #sendHead(status: number, headers: OutgoingHttpHeaders, lazy = false): void {
    if (this.receiving || (this.expect && !this.#sent100)) this.keep = false;
    this.keep = this.#res.writeHead(
      status,
      headers,
      this.req.method === 'HEAD',
      this.v10,
      this.keep && this.socket[kDraining] !== true,
      this.#path.keepAliveSeconds,
      lazy,
    );
  }

  #write(chunk: Buffer): boolean {
    return this.#encoding ? (this.#enc as FastEncode).write(chunk) : this.#res.write(chunk);
  }

  #newEncode(): FastEncode {
    this.#enc = new FastEncode({
      sendHead: (status, headers, lazy) => this.#sendHead(status, headers, lazy),
      sendBody: (chunk) => this.#res.write(chunk),
      sendEnd: () => this.#finish(),
      flow: () => this.upstream?.flow(),
      cut: () => this.socket.destroy(),
    });
    return this.#enc;
  }

  /** A request was answered on this connection (a timeout is then the keep-alive one). */
  #served = false;

  #finish(): void {
    // The compressor still flushes: it calls back when its last bytes are out.
    if (this.#encoding && !(this.#enc as FastEncode).end()) return;
    this.#encoding = false;
    this.#res.end();
    this.#transform = null;
    this.#release();
    this.#record();
    this.#busy = false;
    this.socket[kOwed] = 0;
    if (this.#writeTimer !== null) {
      clearTimeout(this.#writeTimer);
      this.#writeTimer = null;
    }
    const unread = this.receiving;
    if (unread) {
      this.stopReceiving();
      this.keep = false;
    }
    if (!this.keep) {
      this.#discard = true;
      this.pending = null;
      this.socket.end();
      // A body left unread: what the client still sends is read and dropped until it closes, at most
      // `lingerMs` (a reset could erase the answer from its buffers), as `BodyWatch`'s lingering close.
      const lingerMs = this.#path.limits.lingerMs;
      if (unread && lingerMs > 0) {
        this.socket.resume();
        setTimeout(destroyLingering, lingerMs, this.socket).unref();
      }
      return;
    }
    // From the first answer on, silence between requests is the keep-alive timeout (a timeout while a
    // request is in flight is ignored: the socket's timer re-arms with the answer's writes).
    const keepAliveMs = this.#path.limits.keepAliveTimeoutMs;
    if (this.socket.timeout !== keepAliveMs) this.socket.setTimeout(keepAliveMs);
    this.#served = true;
    const pending = this.pending;
    this.pending = null;
    this.socket.resume();
    if (pending !== null) this.feed(pending);
  }

  #release(): void {
    const member = this.#member;
    if (member !== null) {
      member.active--;
      this.#member = null;
    }
  }

  #record(): void {
    const hook = this.#recordTo;
    if (hook === null) return;
    this.#recordTo = null;
    this.#path.counts.inFlight--;
    const duration = performance.now() - this.#startedMono;
    const record = fastRecord(
      this.req,
      this.#ctx as RequestContext,
      this.#res,
      this.declared,
      this.#startedAt,
      duration,
    );
    handRecord(hook, record);
  }

  #timedOut(): void {
    if (this.receiving) {
      // No body byte for `bodyTimeoutMs` while it was read (a paused read does not count).
      if (!this.bodyPaused) this.cutBody();
      return;
    }
    if (this.#busy) return;
    if (this.#served) this.socket.destroy();
    else this.#listener.timedOut(this.socket);
  }

  #closed(): void {
    this.#path.closed(this.socket);
    this.free();
    this.#headDone();
    this.stopReceiving();
    if (this.#writeTimer !== null) clearTimeout(this.#writeTimer);
    if (!this.#busy) return;
    this.#busy = false;
    const up = this.upstream;
    this.upstream = null;
    up?.abort();
    this.#transform?.destroy();
    this.#enc?.abort();
    this.#release();
    this.#record();
  }

  /** The write timeout fired: an unfinished response is cut with its connection. */
  cut(): void {
    if (this.#busy) this.socket.destroy();
  }
}

function cutUnwritten(conn: FastConnection): void {
  conn.cut();
}

function headTimedOut(conn: FastConnection): void {
  conn.headTimedOut();
}

function destroyLingering(socket: Socket): void {
  socket.destroy();
}
