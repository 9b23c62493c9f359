// The server side of candidates (c) and (d): a net/tls connection handler
// that parses requests with llhttp (./llhttp.mjs), one exchange at a time
// per connection, and hands each to `forward(conn)` (the upstream side).
//
// The connection object is the exchange: no per-request objects besides
// the strings of the head. The upstream side reads `head` (the request
// head to send, latin1), `method`, `path`, `fields` (lowercase name/value
// pairs, for undici) and calls respond / data / end / fail.
//
// Pipelining: the parser pauses at the end of each request and resumes
// when its response has been written. Upgrades are refused (501).
import { HOP } from './listen.mjs';
import { OK, PAUSED, Parser, REQUEST } from './llhttp.mjs';

const ADDED = 'x-content-type-options: nosniff\r\nx-frame-options: SAMEORIGIN\r\n';
const CLOSE = (status, reason) => `HTTP/1.1 ${status} ${reason}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n`;

export class ClientConn extends Parser {
  constructor(socket, forward) {
    super(REQUEST);
    this.socket = socket;
    this.forward = forward;
    this.remote = socket.remoteAddress;
    this.path = '';
    this.fields = [];
    this.inValue = false;
    this.head = '';
    this.chunkedIn = false;
    this.chunkedOut = false;
    this.noBody = false;
    this.keep = true;
    this.busy = false;
    this.paused = false;
    this.refused = false;
    this.verb = '';
    this.pending = null;
    /** The upstream side's handle for this exchange (its backpressure and abort). */
    this.upstream = null;
    socket.on('data', (buf) => this.feed(buf));
    socket.on('drain', () => this.upstream?.flow());
    socket.on('error', () => socket.destroy());
    socket.on('close', () => {
      if (this.busy) this.upstream?.abort();
      this.free();
    });
  }
  feed(buf) {
    if (this.paused) {
      this.pending = this.pending === null ? buf : Buffer.concat([this.pending, buf]);
      return;
    }
    const ret = this.execute(buf);
    if (ret === OK) return;
    if (ret === PAUSED) {
      // Paused at a request's end: keep what follows (a pipelined request) for later.
      if (this.pausedAt < buf.length) this.pending = buf.subarray(this.pausedAt);
      if (this.busy) this.socket.pause();
      else this.next();
      return;
    }
    if (this.refused) return;
    if (!this.busy) this.socket.end(CLOSE(400, 'Bad Request'));
    else this.socket.destroy();
  }
  onMessageBegin() {
    this.path = '';
    this.fields.length = 0;
    this.inValue = false;
    return 0;
  }
  onUrl(b, s, e) {
    this.path += b.latin1Slice(s, e);
    return 0;
  }
  onHeaderField(b, s, e) {
    if (this.inValue || this.fields.length === 0) this.fields.push(b.latin1Slice(s, e), '');
    else this.fields[this.fields.length - 2] += b.latin1Slice(s, e);
    this.inValue = false;
    return 0;
  }
  onHeaderValue(b, s, e) {
    this.fields[this.fields.length - 1] += b.latin1Slice(s, e);
    this.inValue = true;
    return 0;
  }
  onHeadersComplete(_status, upgrade, keepAlive) {
    const f = this.fields;
    const out = [];
    let head = '';
    let xff = '';
    this.chunkedIn = false;
    for (let i = 0; i < f.length; i += 2) {
      const name = f[i].toLowerCase();
      if (name === 'transfer-encoding') {
        // Only exactly `chunked` is forwarded; anything else is refused.
        if (f[i + 1].toLowerCase() !== 'chunked') return this.refuse(501, 'Not Implemented');
        this.chunkedIn = true;
      }
      if (HOP.has(name)) continue;
      if (name === 'x-forwarded-for') {
        xff = `${f[i + 1]}, `;
        continue;
      }
      head += `${f[i]}: ${f[i + 1]}\r\n`;
      out.push(name, f[i + 1]);
    }
    if (upgrade) return this.refuse(501, 'Not Implemented');
    out.push('x-forwarded-for', xff + this.remote);
    this.fields = out;
    this.verb = this.method();
    this.keep = keepAlive === 1;
    this.noBody = this.verb === 'HEAD';
    this.head = `${this.verb} ${this.path} HTTP/1.1\r\n${head}x-forwarded-for: ${xff}${this.remote}\r\n${this.chunkedIn ? 'transfer-encoding: chunked\r\n' : ''}\r\n`;
    this.busy = true;
    // `forward` may refuse (returning refuse()'s -1).
    return this.forward(this) ?? 0;
  }
  refuse(status, reason) {
    this.refused = true;
    this.busy = false;
    this.socket.end(CLOSE(status, reason));
    return -1;
  }
  onBody(b, s, e) {
    const u = this.upstream;
    if (this.chunkedIn) u.send(`${(e - s).toString(16)}\r\n`);
    u.send(b.subarray(s, e));
    if (this.chunkedIn) u.send('\r\n');
    return 0;
  }
  onMessageComplete() {
    if (this.chunkedIn) this.upstream.send('0\r\n\r\n');
    this.paused = true;
    return PAUSED;
  }
  /** The response head; `length` is the upstream's content-length (a string) or null. */
  respond(status, reason, fields, length) {
    const bodyless = this.noBody || status === 204 || status === 304;
    this.chunkedOut = length === null && !bodyless;
    const framing =
      length !== null ? `content-length: ${length}\r\n` : this.chunkedOut ? 'transfer-encoding: chunked\r\n' : '';
    this.socket.write(
      `HTTP/1.1 ${status} ${reason}\r\n${fields}${ADDED}${framing}${this.keep ? '' : 'connection: close\r\n'}\r\n`,
      'latin1',
    );
  }
  /** A body chunk; false when the client's socket is full (the upstream side then waits for `flow()`). */
  data(buf) {
    if (!this.chunkedOut) return this.socket.write(buf);
    this.socket.write(`${buf.length.toString(16)}\r\n`);
    this.socket.write(buf);
    return this.socket.write('\r\n');
  }
  end() {
    if (this.chunkedOut) this.socket.write('0\r\n\r\n');
    this.busy = false;
    this.upstream = null;
    if (!this.keep) this.socket.end();
    else this.next();
  }
  /** The upstream failed: a 502 if nothing was sent yet, else the client connection goes. */
  fail(headersSent) {
    this.busy = false;
    this.upstream = null;
    if (headersSent) this.socket.destroy();
    else this.socket.end(CLOSE(502, 'Bad Gateway'));
  }
  next() {
    this.paused = false;
    this.resume();
    this.socket.resume();
    const p = this.pending;
    this.pending = null;
    if (p !== null) this.feed(p);
  }
}
