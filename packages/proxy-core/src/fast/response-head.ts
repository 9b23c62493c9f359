import { type OutgoingHttpHeaders, STATUS_CODES } from 'node:http';

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
