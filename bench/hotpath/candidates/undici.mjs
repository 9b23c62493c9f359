// (b) node:http server, undici Pool upstream through its `dispatch` API:
// the response streams from the pool's parser straight into the
// ServerResponse, with backpressure through the controller.
import http from 'node:http';
import https from 'node:https';
import { Pool } from 'undici';
import { HOP, listen, UPSTREAM_PORT } from '../lib/listen.mjs';

const pool = new Pool(`http://127.0.0.1:${UPSTREAM_PORT}`, { pipelining: 1, keepAliveTimeout: 60_000 });

/** One proxied exchange: undici's handler interface, writing into `res`. */
class Forward {
  constructor(req, res) {
    this.req = req;
    this.res = res;
    this.controller = null;
    this.resume = () => this.controller?.resume();
  }
  onRequestStart(controller) {
    this.controller = controller;
  }
  onResponseStart(_controller, statusCode, headers) {
    const out = {};
    for (const k in headers) if (!HOP.has(k)) out[k] = headers[k];
    out['x-content-type-options'] = 'nosniff';
    out['x-frame-options'] = 'SAMEORIGIN';
    this.res.writeHead(statusCode, out);
  }
  onResponseData(controller, chunk) {
    if (!this.res.write(chunk)) {
      controller.pause();
      this.res.once('drain', this.resume);
    }
  }
  onResponseEnd() {
    this.res.end();
  }
  onResponseError(_controller, err) {
    if (!this.res.headersSent) {
      this.res.writeHead(502);
      this.res.end();
    } else this.res.destroy(err);
  }
}

function handle(req, res) {
  const raw = req.rawHeaders;
  const headers = [];
  let xff = '';
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i].toLowerCase();
    if (HOP.has(name)) continue;
    if (name === 'x-forwarded-for') xff = `${raw[i + 1]}, `;
    else headers.push(name, raw[i + 1]);
  }
  headers.push('x-forwarded-for', xff + req.socket.remoteAddress);
  const hasBody = req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined;
  const handler = new Forward(req, res);
  pool.dispatch({ path: req.url, method: req.method, headers, body: hasBody ? req : null }, handler);
  res.on('close', () => {
    if (!res.writableFinished) handler.controller?.abort(new Error('client went away'));
  });
}

listen(
  () => http.createServer(handle),
  (options) => https.createServer(options, handle),
);
