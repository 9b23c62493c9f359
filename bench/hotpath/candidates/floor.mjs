// (a) The floor: node:http server, http.request with a keep-alive Agent.
// The same 30 lines as bench/proxy's Node floor.
import http from 'node:http';
import https from 'node:https';
import { HOP, listen, UPSTREAM_PORT } from '../lib/listen.mjs';

const agent = new http.Agent({ keepAlive: true, maxFreeSockets: 256 });

function handle(req, res) {
  const headers = {};
  for (const k in req.headers) if (!HOP.has(k)) headers[k] = req.headers[k];
  const xff = req.headers['x-forwarded-for'];
  headers['x-forwarded-for'] = xff ? `${xff}, ${req.socket.remoteAddress}` : req.socket.remoteAddress;
  const up = http.request(
    { host: '127.0.0.1', port: UPSTREAM_PORT, method: req.method, path: req.url, headers, agent },
    (ur) => {
      const out = {};
      for (const k in ur.headers) if (!HOP.has(k)) out[k] = ur.headers[k];
      out['x-content-type-options'] = 'nosniff';
      out['x-frame-options'] = 'SAMEORIGIN';
      res.writeHead(ur.statusCode, out);
      ur.pipe(res);
    },
  );
  up.on('error', () => {
    if (!res.headersSent) res.writeHead(502);
    res.end();
  });
  res.on('close', () => {
    if (!res.writableFinished) up.destroy();
  });
  req.pipe(up);
}

listen(
  () => http.createServer(handle),
  (options) => https.createServer(options, handle),
);
