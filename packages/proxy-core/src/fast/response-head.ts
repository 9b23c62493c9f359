import { type OutgoingHttpHeaders, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';

let dateSecond = 0;
let dateValue = '';

/** The `Date` value Node's responses carry, computed once per second. */
function httpDate(): string {
  const now = Date.now();
  const second = Math.floor(now / 1000);
  if (second !== dateSecond) {
    dateSecond = second;
    dateValue = new Date(now).toUTCString();
  }
  return dateValue;
}

/**
 * A response head as `ServerResponse.writeHead(status, headers)` writes it
 * on an HTTP/1.1 connection, byte for byte: the status line with Node's
 * reason phrase, the given lines in order (an array value as repeated
 * lines), then what Node adds: `Date` unless given, `Connection:
 * keep-alive` and `Keep-Alive: timeout=N` (or `Connection: close`) unless a
 * Connection line was given, then `framing`: the `Transfer-Encoding:
 * chunked` or `Content-Length` line Node adds itself (decided by the
 * caller), or ''.
 */
export function responseHead(
  status: number,
  headers: OutgoingHttpHeaders,
  keepAlive: boolean,
  keepAliveSeconds: number,
  framing: string,
): string {
  let head = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'unknown'}\r\n`;
  let date = false;
  let connection = false;
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined) continue;
    if (name === 'date') date = true;
    else if (name === 'connection') connection = true;
    if (Array.isArray(value)) {
      for (const v of value) head += `${name}: ${v}\r\n`;
    } else head += `${name}: ${value}\r\n`;
  }
  if (!date) head += `Date: ${httpDate()}\r\n`;
  if (!connection) {
    head += keepAlive
      ? keepAliveSeconds > 0
        ? `Connection: keep-alive\r\nKeep-Alive: timeout=${keepAliveSeconds}\r\n`
        : 'Connection: keep-alive\r\n'
      : 'Connection: close\r\n';
  }
  return `${head}${framing}\r\n`;
}

/**
 * The response of a fast-path connection as `ServerResponse` writes it:
 * the head as `writeHead(status, headers)` does ({@link responseHead}),
 * chunked when a body follows without Content-Length (to HTTP/1.0:
 * unframed, and the connection closes after it), no body after HEAD, 204
 * or 304. One per connection, {@link reset} per request.
 */
export class ResponseWriter {
  headersSent = false;
  status = 0;
  /** Body bytes written (before chunk framing). */
  bodyBytes = 0;
  contentType: string | undefined = undefined;
  #chunked = false;
  #bodyless = false;
  /** A head written lazily, not sent yet: it leaves with the first body bytes. */
  #head: string | null = null;

  constructor(readonly socket: Socket) {}

  reset(): void {
    this.#head = null;
    this.headersSent = false;
    this.status = 0;
    this.bodyBytes = 0;
    this.contentType = undefined;
  }

  /**
   * Writes the head. `head`: the request is a HEAD; `http10`: an HTTP/1.0
   * request; `keep`: the connection may stay open. Returns whether it
   * does (not after a Connection line of its own, nor after an unframed
   * HTTP/1.0 body). `lazy`: the head waits for the first body bytes (or
   * the end) and leaves with them, as `ServerResponse` holds its head until
   * the first write: a compressor's first output comes later than the
   * upstream's head, and the client then gets one packet, not two.
   */
  writeHead(
    status: number,
    headers: OutgoingHttpHeaders,
    head: boolean,
    http10: boolean,
    keep: boolean,
    keepAliveSeconds: number,
    lazy = false,
  ): boolean {
    const bodyless = head || status === 204 || status === 304;
    const length = headers['content-length'] !== undefined;
    this.#chunked = !bodyless && !length && !http10;
    this.#bodyless = bodyless;
    const type = headers['content-type'];
    if (typeof type === 'string') this.contentType = type;
    const open = keep && headers.connection === undefined && !(http10 && !length);
    this.status = status;
    this.headersSent = true;
    const framing = this.#chunked ? 'Transfer-Encoding: chunked\r\n' : '';
    const text = responseHead(status, headers, open, keepAliveSeconds, framing);
    if (lazy) this.#head = text;
    else this.socket.write(text, 'latin1');
    return open;
  }

  /**
   * Writes body bytes (framed as a chunk when chunked); false when the
   * socket's buffer is full. A chunk's three writes leave in one (corked
   * until the next tick, as `ServerResponse.write` corks): a chunk written
   * outside an upstream read (a compressor's, a transform's) is not three
   * packets.
   */
  write(chunk: Buffer): boolean {
    if (this.#bodyless) return true;
    this.bodyBytes += chunk.length;
    if (!this.#chunked) {
      if (this.#head === null) return this.socket.write(chunk);
      this.#sendHead();
      return this.socket.write(chunk);
    }
    if (chunk.length === 0) return true;
    if (this.#head !== null) this.#sendHead();
    else if (this.socket.writableCorked === 0) {
      this.socket.cork();
      process.nextTick(uncork, this.socket);
    }
    this.socket.write(`${chunk.length.toString(16)}\r\n`, 'latin1');
    this.socket.write(chunk);
    return this.socket.write('\r\n', 'latin1');
  }

  /** Ends the body (the last chunk when chunked). */
  end(): void {
    if (this.#head !== null) this.#sendHead();
    if (this.#chunked) this.socket.write('0\r\n\r\n', 'latin1');
  }

  /** Sends the lazy head, corked until the next tick with what follows it. */
  #sendHead(): void {
    if (this.socket.writableCorked === 0) {
      this.socket.cork();
      process.nextTick(uncork, this.socket);
    }
    this.socket.write(this.#head as string, 'latin1');
    this.#head = null;
  }
}

function uncork(socket: Socket): void {
  socket.uncork();
}
