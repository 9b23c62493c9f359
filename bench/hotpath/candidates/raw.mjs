// (c) No node:http at all: a net/tls server whose requests are parsed by
// llhttp (lib/raw-server.mjs), forwarded on pooled raw upstream sockets
// whose responses are parsed by llhttp too, and streamed back.
import net from 'node:net';
import tls from 'node:tls';
import { HOP, listen, UPSTREAM_PORT } from '../lib/listen.mjs';
import { OK, Parser, RESPONSE } from '../lib/llhttp.mjs';
import { ClientConn } from '../lib/raw-server.mjs';

const REASONS = { 200: 'OK', 204: 'No Content', 304: 'Not Modified', 404: 'Not Found' };
/** Idle keep-alive upstream connections, most recently used last. */
const idle = [];

class Upstream extends Parser {
  constructor() {
    super(RESPONSE);
    this.socket = net.connect(UPSTREAM_PORT, '127.0.0.1');
    this.socket.setNoDelay(true);
    this.client = null;
    this.fields = [];
    this.inValue = false;
    this.started = false;
    this.done = false;
    this.reuse = false;
    this.full = false;
    this.flow = () => this.socket.resume();
    this.socket.on('data', (buf) => this.feed(buf));
    this.socket.on('error', () => this.socket.destroy());
    this.socket.on('close', () => this.closed());
  }
  /** Starts one exchange on this connection. */
  start(client) {
    this.client = client;
    client.upstream = this;
    this.started = false;
    this.done = false;
    this.socket.write(client.head, 'latin1');
  }
  send(data) {
    this.socket.write(data);
  }
  abort() {
    this.client = null;
    this.socket.destroy();
  }
  feed(buf) {
    const c = this.client;
    // Corked: the response head and the body parsed from one read leave in one write (writev).
    c?.socket.cork();
    const ret = this.execute(buf);
    c?.socket.uncork();
    if (ret !== OK) {
      this.socket.destroy();
      return;
    }
    if (this.full) {
      this.full = false;
      this.socket.pause();
    }
    if (this.done && c !== null) {
      this.client = null;
      if (this.reuse) idle.push(this);
      else this.socket.destroy();
      c.end();
    }
  }
  closed() {
    // An EOF-delimited body ends at close; anything else unfinished is a failure.
    if (this.client !== null && this.started && !this.done) this.finish();
    const c = this.client;
    this.client = null;
    if (c !== null) {
      if (this.done) c.end();
      else c.fail(this.started);
    }
    const i = idle.indexOf(this);
    if (i !== -1) idle.splice(i, 1);
    this.free();
  }
  onMessageBegin() {
    this.fields.length = 0;
    this.inValue = false;
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
  onHeadersComplete(status, _upgrade, keepAlive) {
    if (status < 200) return 0; // 1xx: not forwarded here; the final response follows
    // Whether the connection is reusable must be read here: llhttp resets its flags once the message completes.
    this.reuse = keepAlive === 1;
    const f = this.fields;
    let out = '';
    let length = null;
    for (let i = 0; i < f.length; i += 2) {
      const name = f[i].toLowerCase();
      if (HOP.has(name)) continue;
      if (name === 'content-length') {
        length = f[i + 1];
        continue;
      }
      out += `${f[i]}: ${f[i + 1]}\r\n`;
    }
    this.started = true;
    this.client.respond(status, REASONS[status] ?? 'Unknown', out, length);
    // 1: no body follows (the answer to HEAD), whatever its headers say.
    return this.client.noBody ? 1 : 0;
  }
  onBody(b, s, e) {
    if (!this.client.data(b.subarray(s, e))) this.full = true;
    return 0;
  }
  onMessageComplete() {
    if (this.started) this.done = true;
    return 0;
  }
}

function forward(client) {
  let up = idle.pop();
  while (up?.socket.destroyed) up = idle.pop();
  (up ?? new Upstream()).start(client);
}

listen(
  () => net.createServer({ noDelay: true }, (s) => new ClientConn(s, forward)),
  (options) => tls.createServer(options, (s) => new ClientConn(s, forward)),
);
