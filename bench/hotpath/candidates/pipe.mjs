// The L4 ceiling: every client connection piped to a new upstream
// connection, bytes untouched. Not a proxy (no parsing, no header changes,
// one upstream connection per client connection): what sockets alone cost.
import net from 'node:net';
import tls from 'node:tls';
import { listen, UPSTREAM_PORT } from '../lib/listen.mjs';

function pipe(client) {
  const up = net.connect(UPSTREAM_PORT, '127.0.0.1');
  client.pipe(up).pipe(client);
  client.on('error', () => up.destroy());
  up.on('error', () => client.destroy());
}

listen(
  () => net.createServer(pipe),
  (options) => tls.createServer(options, pipe),
);
