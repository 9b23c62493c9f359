import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import http2 from 'node:http2';

/**
 * HTTP/2 limits of the HTTPS listeners (each has a default, the one in
 * {@link HTTP2_DEFAULTS}).
 *
 * Floods are bounded by Node 24 and its nghttp2 (1.70) themselves, pinned
 * by `http2-abuse.loopback.test.ts`: a rapid reset (CVE-2023-44487, streams
 * opened and cancelled at once) meets nghttp2's stream-reset budget (1000
 * at once, then 33/s) and the session is ended, and its streams never reach
 * an upstream ({@link StreamAdmission}); a CONTINUATION flood
 * (CVE-2024-27316 class: a header block that never ends) closes the
 * connection; invalid frames and refused streams beyond
 * `maxSessionInvalidFrames`/`maxSessionRejectedStreams` close the session.
 * A header list over `maxHeaderListSize` resets its stream
 * (ENHANCE_YOUR_CALM) once the client acknowledged the server's SETTINGS;
 * over HTTP/1.1 it gets 431.
 */
export interface Http2Limits {
  /** Streams a client may have open at once on one session (SETTINGS_MAX_CONCURRENT_STREAMS); default 128. */
  maxConcurrentStreams: number;
  /** Largest request header list, bytes (SETTINGS_MAX_HEADER_LIST_SIZE; also HTTP/1.1's `maxHeaderSize`); default 16384. */
  maxHeaderListSize: number;
  /** Memory one session may hold before new streams are refused, MB (Node's `maxSessionMemory`); default 10. */
  maxSessionMemory: number;
  /** Invalid frames a session may send before it is closed; default 1000 (Node's). */
  maxSessionInvalidFrames: number;
  /** Streams refused (over the concurrency limit) before the session is closed; default 100 (Node's). */
  maxSessionRejectedStreams: number;
  /** A session with no frame either way for this long is closed (GOAWAY), ms; default 120000. */
  sessionIdleMs: number;
  /** A stream with no frame either way for this long is cancelled (RST_STREAM CANCEL), ms; default 120000. */
  streamIdleMs: number;
  /**
   * A client still sending its request (the body not ended) this long after
   * the stream opened has it cancelled (RST_STREAM CANCEL), ms; default
   * 300000, HTTP/1.1's `requestTimeout`. A slow upstream does not count:
   * only the client's side is timed.
   */
  requestTimeoutMs: number;
}

/** The defaults of {@link Http2Limits}. */
export const HTTP2_DEFAULTS: Readonly<Http2Limits> = {
  maxConcurrentStreams: 128,
  maxHeaderListSize: 16 * 1024,
  maxSessionMemory: 10,
  maxSessionInvalidFrames: 1000,
  maxSessionRejectedStreams: 100,
  sessionIdleMs: 120_000,
  streamIdleMs: 120_000,
  requestTimeoutMs: 300_000,
};

/** The `http2.createSecureServer` options that carry the limits (TLS and compat options are the caller's). */
export function http2ServerOptions(limits: Partial<Http2Limits>): http2.SecureServerOptions {
  const l = { ...HTTP2_DEFAULTS, ...limits };
  return {
    settings: { maxConcurrentStreams: l.maxConcurrentStreams, maxHeaderListSize: l.maxHeaderListSize },
    maxHeaderSize: l.maxHeaderListSize,
    maxSessionMemory: l.maxSessionMemory,
    maxSessionInvalidFrames: l.maxSessionInvalidFrames,
    maxSessionRejectedStreams: l.maxSessionRejectedStreams,
  } as http2.SecureServerOptions;
}

const kProtocolErrors = Symbol('proxyd.h2ProtocolErrors');
const kSettled = Symbol('proxyd.h2Settled');
const kProbe = Symbol('proxyd.h2Probe');
type WatchedSession = http2.ServerHttp2Session & {
  /** NGHTTP2_ERR_PROTO reports still to check with a SETTINGS frame before the session is ended. */
  [kProtocolErrors]: number;
  /** Whether the client's first SETTINGS arrived. */
  [kSettled]: boolean;
  /** The SETTINGS sent on the last such report, until acknowledged. */
  [kProbe]: SettingsProbe | undefined;
};

type SessionDestroy = http2.ServerHttp2Session['destroy'];
/** Node's own `destroy` of a server session (its prototype's, read before a session's is replaced). */
let nodeSessionDestroy: SessionDestroy | undefined;

/** How long a client has to acknowledge the SETTINGS that tell a stray PING ACK from a connection error, ms. */
export const SETTINGS_PROBE_MS = 1000;

/**
 * Arms a new session's idle timeout, and makes it ignore an unsolicited
 * PING ACK (module functions as listeners: no closure per session).
 *
 * RFC 9113 §6.7 only forbids answering a PING ACK. Node 24
 * (`HandlePingFrame` in `node_http2.cc`) destroys the session on one it
 * did not ask for, with the error (nghttp2's NGHTTP2_ERR_PROTO) it also
 * gives for a frame nghttp2 rejected, and nothing in JS tells the two
 * apart at that moment. So that error sends an empty SETTINGS frame
 * instead, which the client must acknowledge (RFC 9113 §6.5.3), and the
 * session goes on. After a frame nghttp2 rejected as a connection error,
 * nghttp2 sends its GOAWAY and Node reports the same error a second time
 * ("terminated internally") while that SETTINGS is unacknowledged: the
 * session is then destroyed at once, as Node would have. A SETTINGS not
 * acknowledged within {@link SETTINGS_PROBE_MS} also ends the session.
 * (A PING would do, but a client waiting for its own PING's ACK may read
 * ours first.) Beyond `maxSessionInvalidFrames` such errors, or before the
 * client's first SETTINGS (where the error means "SETTINGS expected"), the
 * session is destroyed at once.
 */
export function watchSession(session: http2.ServerHttp2Session, limits: Partial<Http2Limits>): void {
  session.setTimeout(limits.sessionIdleMs ?? HTTP2_DEFAULTS.sessionIdleMs, onSessionIdle);
  const watched = session as WatchedSession;
  nodeSessionDestroy = session.destroy;
  watched[kProtocolErrors] = limits.maxSessionInvalidFrames ?? HTTP2_DEFAULTS.maxSessionInvalidFrames;
  watched[kSettled] = false;
  watched[kProbe] = undefined;
  watched.destroy = destroyUnlessAcknowledged;
  session.once('remoteSettings', onFirstSettings);
}

function onFirstSettings(this: WatchedSession): void {
  this[kSettled] = true;
}

function destroyUnlessAcknowledged(this: WatchedSession, error?: Error, code?: number): void {
  if (
    this[kSettled] &&
    this[kProbe] === undefined &&
    this[kProtocolErrors] > 0 &&
    isProtocolError(error) &&
    !this.closed
  ) {
    this[kProtocolErrors]--;
    const probe = new SettingsProbe(this, error as Error);
    try {
      // Node ends the session itself when too many SETTINGS are unacknowledged (`maxOutstandingSettings`).
      this.settings({}, probe.acknowledged);
      this[kProbe] = probe;
      return;
    } catch {
      probe.cancel();
    }
  }
  this[kProbe]?.cancel();
  (nodeSessionDestroy as SessionDestroy).call(this, error, code);
}

/** The SETTINGS sent on an NGHTTP2_ERR_PROTO report: acknowledged, the session goes on; not, it is destroyed. */
class SettingsProbe {
  readonly #session: WatchedSession;
  readonly #error: Error;
  readonly #timer: NodeJS.Timeout;
  readonly acknowledged = (err: Error | null): void => {
    this.cancel();
    if (err !== null) this.#expire();
  };

  constructor(session: WatchedSession, error: Error) {
    this.#session = session;
    this.#error = error;
    this.#timer = setTimeout(() => this.#expire(), SETTINGS_PROBE_MS);
    this.#timer.unref();
  }

  cancel(): void {
    clearTimeout(this.#timer);
    if (this.#session[kProbe] === this) this.#session[kProbe] = undefined;
  }

  #expire(): void {
    this.cancel();
    if (!this.#session.destroyed) (nodeSessionDestroy as SessionDestroy).call(this.#session, this.#error);
  }
}

function isProtocolError(error: unknown): boolean {
  return (
    error instanceof Error &&
    (error as NodeJS.ErrnoException).code === 'ERR_HTTP2_ERROR' &&
    (error as NodeJS.ErrnoException).errno === NGHTTP2_ERR_PROTO
  );
}

/** nghttp2's `NGHTTP2_ERR_PROTO` (not among `http2.constants`). */
const NGHTTP2_ERR_PROTO = -505;

const kRequestTimer = Symbol('proxyd.h2RequestTimer');
type TimedStream = http2.ServerHttp2Stream & { [kRequestTimer]?: NodeJS.Timeout };

/**
 * Arms a new stream's idle timeout (Node's compat layer only reports a
 * stream timeout, it does not end it) and, when a body follows the headers,
 * its request timeout.
 */
export function watchStream(stream: http2.ServerHttp2Stream, limits: Partial<Http2Limits>): void {
  stream.setTimeout(limits.streamIdleMs ?? HTTP2_DEFAULTS.streamIdleMs, onStreamIdle);
  if (stream.endAfterHeaders) return;
  const timer = setTimeout(onRequestTimeout, limits.requestTimeoutMs ?? HTTP2_DEFAULTS.requestTimeoutMs, stream);
  timer.unref();
  (stream as TimedStream)[kRequestTimer] = timer;
  stream.once('close', clearRequestTimer);
}

function clearRequestTimer(this: TimedStream): void {
  clearTimeout(this[kRequestTimer]);
}

/** Cancels the stream when the client has not finished sending (open, or half-closed on the server's side only). */
function onRequestTimeout(stream: http2.ServerHttp2Stream): void {
  if (stream.closed || stream.destroyed) return;
  const state = stream.state.state;
  if (
    state === http2.constants.NGHTTP2_STREAM_STATE_OPEN ||
    state === http2.constants.NGHTTP2_STREAM_STATE_HALF_CLOSED_LOCAL
  ) {
    stream.close(http2.constants.NGHTTP2_CANCEL);
  }
}

/**
 * Holds HTTP/2 requests for one event-loop turn before they enter the data
 * plane, and drops those whose stream is closed by then: a rapid reset
 * (CVE-2023-44487) sends HEADERS and RST_STREAM back to back, and Node
 * emits the request before it reads the reset, so without the wait each
 * cancelled stream would still start an upstream request (measured: ~1,000
 * per attacking session, 0 with it). One `setImmediate` per turn, not per
 * request.
 */
export class StreamAdmission {
  readonly #enter: (req: IncomingMessage, res: ServerResponse) => void;
  /** Pending requests as `req, res` pairs. */
  #pending: unknown[] = [];
  #scheduled = false;
  readonly #flush = (): void => this.#run();

  constructor(enter: (req: IncomingMessage, res: ServerResponse) => void) {
    this.#enter = enter;
  }

  /** Queues a request; it enters on the next turn unless its stream closed meanwhile. */
  admit(req: IncomingMessage, res: ServerResponse): void {
    this.#pending.push(req, res);
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(this.#flush);
    }
  }

  #run(): void {
    const batch = this.#pending;
    this.#pending = [];
    this.#scheduled = false;
    for (let i = 0; i < batch.length; i += 2) {
      const req = batch[i] as IncomingMessage & { stream: http2.ServerHttp2Stream };
      const stream = req.stream;
      if (stream.closed || stream.destroyed) continue;
      this.#enter(req, batch[i + 1] as ServerResponse);
    }
  }
}

function onSessionIdle(this: http2.ServerHttp2Session): void {
  // Graceful: GOAWAY, streams still open finish (their own timeout bounds them).
  this.close();
}

function onStreamIdle(this: http2.ServerHttp2Stream): void {
  this.close(http2.constants.NGHTTP2_CANCEL);
}

/**
 * Whether a response header is one HTTP/2 forbids (RFC 9113 §8.2.2):
 * connection-specific fields, and `te` other than `trailers`. Node's compat
 * layer throws on most of them (`ERR_HTTP2_INVALID_CONNECTION_HEADERS`) and
 * drops `connection` with a warning.
 */
export function isH2Forbidden(name: string, value: unknown): boolean {
  switch (name.length) {
    case 2:
      return name.toLowerCase() === 'te' && String(value).toLowerCase() !== 'trailers';
    case 7:
      return name.toLowerCase() === 'upgrade';
    case 10: {
      const lower = name.toLowerCase();
      return lower === 'connection' || lower === 'keep-alive';
    }
    case 14:
      return name.toLowerCase() === 'http2-settings';
    case 16:
      return name.toLowerCase() === 'proxy-connection';
    case 17:
      return name.toLowerCase() === 'transfer-encoding';
    default:
      return false;
  }
}

/**
 * `writeHead`'s headers (an object or a flat `[name, value, …]` array)
 * without the fields HTTP/2 forbids: the same object when it holds none
 * (the common case, no copy), else a filtered copy.
 */
export function h2Headers(headers: unknown): unknown {
  if (headers === null || typeof headers !== 'object') return headers;
  if (Array.isArray(headers)) {
    let clean = true;
    for (let i = 0; i < headers.length; i += 2) {
      if (isH2Forbidden(String(headers[i]), headers[i + 1])) {
        clean = false;
        break;
      }
    }
    if (clean) return headers;
    const out: unknown[] = [];
    for (let i = 0; i < headers.length; i += 2) {
      if (!isH2Forbidden(String(headers[i]), headers[i + 1])) out.push(headers[i], headers[i + 1]);
    }
    return out;
  }
  const obj = headers as OutgoingHttpHeaders;
  let out: OutgoingHttpHeaders | null = null;
  for (const name in obj) {
    if (isH2Forbidden(name, obj[name])) {
      if (out === null) out = { ...obj };
      delete out[name];
    }
  }
  return out ?? obj;
}
