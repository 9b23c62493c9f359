// What every candidate shares: where to listen and forward to, from the
// environment the runner sets, and the same TLS settings for each.
//
//   UPSTREAM_PORT   the upstream on 127.0.0.1 (plain HTTP/1.1)
//   PORT            plain HTTP listener on 127.0.0.1
//   TLS_EC_PORT     TLS listener with CERT_DIR/ec.pem + ec.key (ECDSA P-256)
//   TLS_RSA_PORT    TLS listener with CERT_DIR/rsa.pem + rsa.key (RSA-2048)
//   TLS_TUNED=1     the two options bench/tls/notes/2026-11-24-handshake-cost.md
//                   measured: no TLS 1.3 session tickets, AES-128-GCM first
import { constants } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import tls from 'node:tls';

export const UPSTREAM_PORT = Number(process.env.UPSTREAM_PORT);

/** Hop-by-hop fields (RFC 9110 7.6.1), never forwarded in either direction. */
export const HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/**
 * Calls `plain()` and `secure(options)` for the listeners the environment
 * asks for; each returns a server not yet listening. SIGTERM exits cleanly,
 * so `--cpu-prof` writes its profile.
 */
export function listen(plain, secure) {
  const servers = [];
  if (process.env.PORT) servers.push([plain(), Number(process.env.PORT)]);
  for (const [kind, env] of [
    ['ec', 'TLS_EC_PORT'],
    ['rsa', 'TLS_RSA_PORT'],
  ]) {
    if (!process.env[env]) continue;
    const dir = process.env.CERT_DIR;
    const options = {
      cert: readFileSync(path.join(dir, `${kind}.pem`)),
      key: readFileSync(path.join(dir, `${kind}.key`)),
      ALPNProtocols: ['http/1.1'],
    };
    if (process.env.TLS_TUNED === '1') {
      options.secureOptions = constants.SSL_OP_NO_TICKET;
      options.ciphers = `TLS_AES_128_GCM_SHA256:${tls.DEFAULT_CIPHERS}`;
      options.honorCipherOrder = true; // else the client's order wins
    }
    servers.push([secure(options), Number(process.env[env])]);
  }
  for (const [server, port] of servers) server.listen(port, '127.0.0.1');
  process.on('SIGTERM', () => process.exit(0));
}
