import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';
import type { Transform } from 'node:stream';
import { kOwed } from '../client-errors.js';
import { type DrainSocket, kDraining } from '../data-plane/client-connections.js';
import { forwardedFor } from '../forward/forwarded-headers.js';
import type { FastUpstream } from '../forward/forwarder.js';
import { responseHeaders } from '../forward/response-headers.js';
import { applyRewrite, rewriteFor, transformFor } from '../forward/response-hooks.js';
import { isConnectFailure, isTimeout } from '../forward/retry.js';
import { buildUpstreamHeaders } from '../forward/upstream-headers.js';
import { type RequestContext, type RequestRecord, SMALL_BODY_BYTES } from '../hooks.js';
import type { FastPlan } from '../pipeline.js';
import type { PoolMember } from '../pool/upstream-pool.js';
import { normalizeHost } from '../route-table.js';
import type { FastPath } from './fast-path.js';
import { FastRequest } from './fast-request.js';
import { PAUSED, Parser, REQUEST } from './llhttp.js';
import { responseHead } from './response-head.js';
import type { UpstreamClient, UpstreamConn } from './upstream-conn.js';

const TEXT = 'text/plain; charset=utf-8';
const EVENT_STREAM = /^text\/event-stream/i;
const RETRIABLE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * One client connection on the HTTP/1.1 fast path: requests parsed by
 * llhttp on the raw socket, one at a time (a pipelined request waits for
 * the answer before it), each either served here — forwarded on a pooled
 * raw upstream connection ({@link UpstreamConn}) — or, at that request's
 * first byte, the connection is handed with its unread bytes to the
 * node:http server for good ({@link FastPath.fallback}). A request is served
 * here when its head arrived whole in one read, it is HTTP/1.1 with exactly
 * one Host line, an origin-form target and no body, Expect or Upgrade, and
 * its route is fast (`FrontDoor.fastRoute`, `CompiledSite.fast`,
 * `HttpForwarder.fastUpstream`); anything llhttp refuses goes to node:http
 * too, which answers it as before (same parser, same strictness).
 */
export class FastConnection extends Parser implements UpstreamClient {
  readonly socket: Socket & DrainSocket;
  readonly #path: FastPath;
  readonly #secure: boolean;
  readonly req = new FastRequest();
  /** The exchange in flight: its upstream connection (null between requests). */
  #upstream: UpstreamConn | null = null;
  /** A chunk went to a rewrite or a transform since {@link holds} last asked. */
  #held = false;
  #busy = false;
  #pending: Buffer | null = null;
  #inValue = false;
  /** The head of the current message has been handed over or refused: stop parsing. */
  #reject = false;
  #headBytes = 0;
  #hosts = 0;
  #framed = false;
  #other = false;
  #keep = true;
  /** Per request. */
  #ctx: RequestContext | null = null;
  #plan: FastPlan | null = null;
  #fast: FastUpstream | null = null;
  #member: PoolMember | null = null;
  #head = '';
  #headersSent = false;
  #status = 0;
  #chunked = false;
  #bodyBytes = 0;
  #contentType: string | undefined = undefined;
  #retried = false;
  #startedAt = 0;
  #startedMono = 0;
  #recording = false;
  #whole: { status: number; headers: OutgoingHttpHeaders; rewrite: (b: Buffer) => Buffer; chunks: Buffer[] } | null =
    null;
  #transform: Transform | null = null;
  #writeTimer: NodeJS.Timeout | null = null;
  readonly #onData = (buf: Buffer) => this.feed(buf);
  readonly #onDrain = () => this.#upstream?.flow();
  readonly #onClose = () => this.#closed();
  readonly #onTimeout = () => this.#timedOut();
  readonly #onError = () => {};
  /** The client half-closed (the listener allows half-open connections, as node:http does): end ours too. */
  readonly #onEnd = () => {
    if (this.#busy) this.#keep = false;
    else this.socket.end();
  };

  /** A head longer than this (bytes, roughly as node:http counts them) is left to node:http. */
  readonly #maxHead: number;

  constructor(socket: Socket, path: FastPath, secure: boolean, maxHead: number) {
    super(REQUEST);
    this.#maxHead = maxHead;
    this.socket = socket as Socket & DrainSocket;
    this.#path = path;
    this.#secure = secure;
    this.req.socket = socket;
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
    if (this.#busy) {
      // A pipelined request: read after this answer (the socket pauses meanwhile).
      this.#pending = this.#pending === null ? buf : Buffer.concat([this.#pending, buf]);
      this.socket.pause();
      return;
    }
    const ret = this.execute(buf);
    if (ret === PAUSED && !this.#reject) {
      this.resume();
      this.#pending = this.pausedAt < buf.length ? buf.subarray(this.pausedAt) : null;
      this.#dispatch(buf);
      return;
    }
    // Refused by llhttp, not served here, or a head split over reads: node:http takes it from its first byte.
    this.#handOver(buf);
  }

  #handOver(buf: Buffer): void {
    const socket = this.socket;
    socket.removeListener('data', this.#onData);
    socket.removeListener('drain', this.#onDrain);
    socket.removeListener('close', this.#onClose);
    socket.removeListener('error', this.#onError);
    socket.removeListener('timeout', this.#onTimeout);
    socket.removeListener('end', this.#onEnd);
    socket.setTimeout(0);
    this.free();
    this.#path.fallback(socket, buf, this.#secure);
  }

  override onMessageBegin(): number {
    const req = this.req;
    req.reset();
    this.#inValue = false;
    this.#reject = false;
    this.#headBytes = 0;
    this.#hosts = 0;
    this.#framed = false;
    this.#other = false;
    return 0;
  }

  override onUrl(b: Buffer, s: number, e: number): number {
    this.req.url += b.toString('latin1', s, e);
    this.#headBytes += e - s;
    return 0;
  }

  override onHeaderField(b: Buffer, s: number, e: number): number {
    const raw = this.req.rawHeaders;
    if (this.#inValue || raw.length === 0) raw.push(b.toString('latin1', s, e), '');
    else raw[raw.length - 2] += b.toString('latin1', s, e);
    this.#inValue = false;
    this.#headBytes += e - s + 4;
    return 0;
  }

  override onHeaderValue(b: Buffer, s: number, e: number): number {
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
        if (lower === 'content-length' || lower === 'transfer-encoding') this.#framed = true;
        else if (lower === 'expect' || lower === 'upgrade' || lower === 'te') this.#other = true;
      } else if (n === 10 && name.toLowerCase() === 'connection') {
        req.connection = req.connection === undefined ? (raw[i + 1] as string) : `${req.connection}, ${raw[i + 1]}`;
      } else if (n === 15 && name.toLowerCase() === 'x-forwarded-for') {
        const v = raw[i + 1] as string;
        req.forwardedFor = req.forwardedFor === undefined ? v : `${req.forwardedFor}, ${v}`;
      }
    }
    req.method = this.method();
    this.#keep = keepAlive === 1;
    if (
      upgrade !== 0 ||
      this.#framed ||
      this.#other ||
      this.#hosts !== 1 ||
      this.version() !== 11 ||
      req.url.charCodeAt(0) !== 0x2f ||
      this.#headBytes + raw.length * 2 > this.#maxHead ||
      raw.length > 200 ||
      this.socket[kDraining] === true
    ) {
      this.#reject = true;
      return -1;
    }
    return 0;
  }

  override onMessageComplete(): number {
    return PAUSED;
  }

  /** Serves the parsed request here, or hands the connection over from its first byte (`buf`). */
  #dispatch(buf: Buffer): void {
    const req = this.req;
    const path = this.#path;
    const host = normalizeHost(req.host);
    const url = req.url;
    const q = url.indexOf('?');
    const urlPath = q < 0 ? url : url.slice(0, q);
    const route = path.door.fastRoute(host, urlPath, this.#secure);
    const plan = route?.compiled?.fast;
    const fast = plan === undefined ? null : path.forwarder.fastUpstream(plan.handler);
    if (route == null || plan === undefined || fast === null) {
      this.#handOver(buf);
      return;
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
      secure: this.#secure,
      site: route.site,
    };
    this.#ctx = ctx;
    this.#plan = plan;
    this.#fast = fast;
    this.#headersSent = false;
    this.#status = 0;
    this.#bodyBytes = 0;
    this.#contentType = undefined;
    this.#retried = false;
    this.#recording = path.hooks.onRequest !== undefined;
    if (this.#recording) {
      this.#startedAt = Date.now();
      this.#startedMono = performance.now();
      path.counts.inFlight++;
    }
    const member = fast.pool.pick(clientIp, undefined);
    if (member === null) {
      this.#answer(503, 'no healthy upstream\n', {
        'content-type': TEXT,
        'retry-after': String(fast.pool.retryAfterSeconds()),
      });
      return;
    }
    this.#member = member;
    member.active++;
    const lines = buildUpstreamHeaders(req as never, forwardedFor(req as never, ctx, path.clientIp), fast.headers, ctx);
    let head = `${req.method} ${url} HTTP/1.1\r\n`;
    for (let i = 0; i < lines.length; i += 2) head += `${lines[i]}: ${lines[i + 1]}\r\n`;
    this.#head = `${head}Connection: keep-alive\r\n\r\n`;
    this.#send();
  }

  #send(): void {
    const up = this.#path.upstreams.take(this.#member as PoolMember);
    this.#upstream = up;
    up.start(this, this.#head);
  }

  // UpstreamClient: the upstream's answer.

  respond(status: number, raw: string[]): void {
    const headers = responseHeaders(raw, null) as OutgoingHttpHeaders;
    if (status === 204 && headers['content-length'] !== undefined) delete headers['content-length'];
    const ctype = headers['content-type'];
    if (typeof ctype === 'string' && EVENT_STREAM.test(ctype)) this.#upstream?.socket.setTimeout(0);
    const plan = this.#plan as FastPlan;
    (this.#secure ? plan.secure : plan.plain)(headers, status);
    const hooks = this.#path.hooks;
    const ctx = this.#ctx as RequestContext;
    if (hooks.rewriteBody !== undefined) {
      const declared = headers['content-length'];
      if (declared !== undefined && Number(declared) <= SMALL_BODY_BYTES) {
        const rewrite = rewriteFor(hooks, ctx, this.req as never, status, headers as IncomingHttpHeaders);
        if (rewrite !== null) {
          this.#whole = { status, headers, rewrite, chunks: [] };
          return;
        }
      }
    }
    const transform =
      hooks.transformResponse === undefined
        ? null
        : transformFor(hooks, ctx, this.req as never, status, headers as IncomingHttpHeaders);
    this.#writeHead(status, headers);
    if (transform !== null) {
      this.#transform = transform;
      transform.on('data', (chunk: Buffer) => this.#write(chunk));
      transform.on('end', () => this.#finish());
      transform.on('error', () => this.socket.destroy());
    }
  }

  data(chunk: Buffer): boolean {
    if (this.#whole !== null) {
      this.#held = true;
      this.#whole.chunks.push(chunk);
      return true;
    }
    if (this.#transform !== null) {
      this.#held = true;
      return this.#transform.write(chunk) || true;
    }
    return this.#write(chunk);
  }

  holds(): boolean {
    const held = this.#held;
    this.#held = false;
    // A write the kernel did not take at once is queued with the chunk itself.
    return held || this.socket.writableLength > 0;
  }

  end(): void {
    this.#upstream = null;
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
    this.#upstream = null;
    if (!this.#busy) return;
    const member = this.#member as PoolMember;
    if (
      !started &&
      !this.#retried &&
      reused &&
      (code === 'ECONNRESET' || code === 'EPIPE') &&
      RETRIABLE_METHODS.has(this.req.method)
    ) {
      // The upstream closed a pooled connection as we reused it: nothing was processed, send it again once.
      this.#retried = true;
      this.#send();
      return;
    }
    this.#release();
    if (isConnectFailure(code)) (this.#fast as FastUpstream).pool.markFailed(member);
    if (started || this.#headersSent) {
      this.socket.destroy();
      return;
    }
    const timeout = isTimeout(code);
    this.#keep = false;
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

  /** Writes the head as `writeHead(status, headers)` does: chunked when a body follows without Content-Length. */
  #writeHead(status: number, headers: OutgoingHttpHeaders): void {
    const bodyless = this.req.method === 'HEAD' || status === 204 || status === 304;
    this.#chunked = !bodyless && headers['content-length'] === undefined;
    const type = headers['content-type'];
    if (typeof type === 'string') this.#contentType = type;
    if (headers.connection !== undefined) this.#keep = false;
    const keep = this.#keep && this.socket[kDraining] !== true;
    this.#keep = keep;
    this.#status = status;
    this.#headersSent = true;
    this.#bodyless = bodyless;
    const framing = this.#chunked ? 'Transfer-Encoding: chunked\r\n' : '';
    this.socket.write(responseHead(status, headers, keep, this.#path.keepAliveSeconds, framing), 'latin1');
  }

  #bodyless = false;
  /** A request was answered on this connection (a timeout is then the keep-alive one). */
  #served = false;

  #write(chunk: Buffer): boolean {
    if (this.#bodyless) return true;
    this.#bodyBytes += chunk.length;
    if (!this.#chunked) return this.socket.write(chunk);
    if (chunk.length === 0) return true;
    this.socket.write(`${chunk.length.toString(16)}\r\n`, 'latin1');
    this.socket.write(chunk);
    return this.socket.write('\r\n', 'latin1');
  }

  #finish(): void {
    if (this.#chunked) this.socket.write('0\r\n\r\n', 'latin1');
    this.#transform = null;
    this.#release();
    this.#record();
    this.#busy = false;
    this.socket[kOwed] = 0;
    if (this.#writeTimer !== null) {
      clearTimeout(this.#writeTimer);
      this.#writeTimer = null;
    }
    if (!this.#keep) {
      this.socket.end();
      return;
    }
    // From the first answer on, silence between requests is the keep-alive timeout (a timeout while a
    // request is in flight is ignored: the socket's timer re-arms with the answer's writes).
    if (!this.#served) this.socket.setTimeout(this.#path.limits.keepAliveTimeoutMs);
    this.#served = true;
    const pending = this.#pending;
    this.#pending = null;
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
    if (!this.#recording) return;
    this.#recording = false;
    const path = this.#path;
    path.counts.inFlight--;
    const req = this.req;
    const ctx = this.#ctx as RequestContext;
    const q = req.url.indexOf('?');
    const record: RequestRecord = {
      host: ctx.host,
      domain: ctx.domain,
      analytics: ctx.site.analytics,
      method: req.method,
      path: ctx.path,
      query: q < 0 ? undefined : req.url.slice(q + 1),
      status: this.#headersSent ? this.#status : 0,
      bytesSent: req.method === 'HEAD' || !this.#headersSent ? 0 : this.#bodyBytes,
      bytesReceived: 0,
      durationMs: performance.now() - this.#startedMono,
      clientIp: ctx.clientIp,
      referer: req.headers.referer,
      userAgent: req.headers['user-agent'],
      contentType: this.#contentType,
      startedAt: this.#startedAt,
      protocol: 'h1',
      events: 0,
    };
    try {
      (path.hooks.onRequest as (r: RequestRecord) => void)(record);
    } catch {
      // A throwing hook is ignored (hooks.ts contract).
    }
  }

  #timedOut(): void {
    if (this.#busy) return;
    if (this.#served) this.socket.destroy();
    else this.#path.timedOut(this.socket);
  }

  #closed(): void {
    this.free();
    if (this.#writeTimer !== null) clearTimeout(this.#writeTimer);
    if (!this.#busy) return;
    this.#busy = false;
    const up = this.#upstream;
    this.#upstream = null;
    up?.abort();
    this.#transform?.destroy();
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

function peerIp(ip: string | undefined): string {
  const s = ip ?? '';
  return s.startsWith('::ffff:') && s.indexOf('.') > 0 ? s.slice(7) : s;
}
