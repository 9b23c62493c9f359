// (d) The server side of (c) (net/tls + llhttp, lib/raw-server.mjs) with
// undici's Pool upstream through `dispatch`.
import net from 'node:net';
import tls from 'node:tls';
import { Pool } from 'undici';
import { HOP, listen, UPSTREAM_PORT } from '../lib/listen.mjs';
import { ClientConn } from '../lib/raw-server.mjs';

const pool = new Pool(`http://127.0.0.1:${UPSTREAM_PORT}`, { pipelining: 1, keepAliveTimeout: 60_000 });
const REASONS = { 200: 'OK', 204: 'No Content', 304: 'Not Modified', 404: 'Not Found' };

/** undici's handler interface for one exchange; `client.upstream` is this. */
class Forward {
  constructor(client) {
    this.client = client;
    this.controller = null;
    this.started = false;
    this.flow = () => this.controller?.resume();
  }
  onRequestStart(controller) {
    this.controller = controller;
  }
  onResponseStart(_controller, status, headers) {
    let out = '';
    let length = null;
    for (const k in headers) {
      if (HOP.has(k)) continue;
      if (k === 'content-length') length = headers[k];
      else if (Array.isArray(headers[k])) for (const v of headers[k]) out += `${k}: ${v}\r\n`;
      else out += `${k}: ${headers[k]}\r\n`;
    }
    this.started = true;
    this.client.respond(status, REASONS[status] ?? 'Unknown', out, length);
  }
  onResponseData(controller, chunk) {
    if (!this.client.data(chunk)) controller.pause();
  }
  onResponseEnd() {
    this.client.end();
  }
  onResponseError() {
    if (this.client.busy) this.client.fail(this.started);
  }
  abort() {
    this.controller?.abort(new Error('client went away'));
  }
  send() {}
}

function forward(client) {
  // Request bodies are not streamed in this candidate (the bench sends GETs): 501.
  if (client.chunkedIn || client.fields.includes('content-length')) return client.refuse(501, 'Not Implemented');
  const handler = new Forward(client);
  client.upstream = handler;
  pool.dispatch({ path: client.path, method: client.verb, headers: client.fields, body: null }, handler);
}

listen(
  () => net.createServer({ noDelay: true }, (s) => new ClientConn(s, forward)),
  (options) => tls.createServer(options, (s) => new ClientConn(s, forward)),
);
