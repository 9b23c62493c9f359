import type { Duplex } from 'node:stream';
import { LISTENER_DEFAULTS, type ListenerLimits } from './connection-limits.js';

/**
 * Responses owed on an HTTP/1 connection: requests Node has handed to the
 * data plane whose response has not closed yet (counted by the server's
 * response class).
 */
export const kOwed = Symbol('proxyd.owedResponses');

const kOwedAnswer = Symbol('proxyd.owedAnswer');

/** The error answer a connection sends once the responses it owes are out. */
interface OwedAnswer {
  readonly head: string;
  /** Cuts the connection if the owed responses take longer than the wait. */
  readonly timer: NodeJS.Timeout;
  readonly lingerMs: number;
}

/** An HTTP/1 client connection as the error handler sees it (Node's parser state included). */
type ClientSocket = Duplex & {
  [kOwed]?: number;
  [kOwedAnswer]?: OwedAnswer;
  /** Node's HTTP parser; `incoming` is the request whose body it is reading (or the last one). */
  parser?: { incoming?: { complete: boolean } | null } | null;
  _httpMessage?: { headersSent?: boolean } | null;
};

/** The answer to a request the HTTP parser refused (as Node's default handler gives). */
function errorHead(code: string | undefined): string {
  const status =
    code === 'HPE_HEADER_OVERFLOW'
      ? '431 Request Header Fields Too Large'
      : code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? '408 Request Timeout'
        : '400 Bad Request';
  return `HTTP/1.1 ${status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n`;
}

/**
 * The listeners' `clientError` handler: a request the HTTP parser refuses
 * (a malformed head, a head over the limit, a head or request timeout) gets
 * `400`, `431` or `408`, then the connection closes. When it came pipelined
 * behind requests still being answered, those answers go out first, in
 * order, then the error (nginx's order; before issue 28 the error went out
 * at once and the connection was cut, so a request that had reached its
 * upstream never got its answer). Meanwhile nothing more is read, and the
 * wait is bounded: after `requestTimeoutMs` (else `headersTimeoutMs`, else
 * the default 300 s) the connection is cut.
 */
export function clientErrorHandler(
  limits: Readonly<ListenerLimits>,
): (err: NodeJS.ErrnoException, socket: Duplex) => void {
  const waitMs = limits.requestTimeoutMs || limits.headersTimeoutMs || LISTENER_DEFAULTS.requestTimeoutMs;
  const lingerMs = limits.lingerMs;
  return (err, duplex) => {
    const socket = duplex as ClientSocket;
    // Already answering: the parser fails again on every byte that still arrives.
    if (socket[kOwedAnswer] !== undefined) return;
    const head = errorHead(err.code);
    const incoming = socket.parser?.incoming;
    // An error inside the body of a request already handed over (its answer is the one owed) is answered at once.
    if ((socket[kOwed] ?? 0) > 0 && socket.writable && (incoming == null || incoming.complete)) {
      socket.pause();
      const timer = setTimeout(cut, waitMs, socket);
      timer.unref();
      socket.once('close', () => clearTimeout(timer));
      socket[kOwedAnswer] = { head, timer, lingerMs };
      return;
    }
    if (socket.writable && !socket._httpMessage?.headersSent) socket.end(head);
    socket.destroy();
  };
}

/**
 * Called when a connection's owed responses are all out (its last
 * response closed): sends the error answer kept by the handler, if any,
 * then closes with a lingering close — what the client still sends is read
 * and discarded until it closes, at most `lingerMs` (a reset could erase
 * the answers from its buffers). Nothing when Node is already closing the
 * connection (the last response said `Connection: close`).
 */
export function sendOwedAnswer(duplex: Duplex): void {
  const socket = duplex as ClientSocket;
  const owed = socket[kOwedAnswer];
  if (owed === undefined) return;
  clearTimeout(owed.timer);
  if (socket.destroyed || !socket.writable) return;
  socket.end(owed.head);
  socket.resume();
  const timer = setTimeout(cut, owed.lingerMs, socket);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
}

function cut(socket: Duplex): void {
  socket.destroy();
}
