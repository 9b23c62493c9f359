import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse } from '@proxyd/proxyfile';
import { startDaemon } from './daemon.js';
import type { Logging } from './logging.js';

const DEMO_PAGE = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>proxyd demo</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 40rem; margin: 3rem auto">
<h1>It works.</h1>
<p>This page comes from a small demo upstream; <strong>proxyd</strong> forwarded your request to it.</p>
<p>Admin API health: <code>curl http://ADMIN/health</code></p>
</body>
</html>
`;

/** Resolves `preferred` when it is free on 127.0.0.1, else another free port. */
async function pickPort(preferred: number): Promise<number> {
  const tryListen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      const probe = net.createServer();
      probe.once('error', reject);
      probe.listen(port, '127.0.0.1', () => {
        const bound = (probe.address() as net.AddressInfo).port;
        probe.close(() => resolve(bound));
      });
    });
  return tryListen(preferred).catch(() => tryListen(0));
}

/**
 * `proxyd demo`: an upstream page and proxyd in front of it, on unprivileged
 * loopback ports (8080 and 6190 when free). It keeps its state in a fresh
 * temporary directory, removed on exit, so it never touches the user's state
 * directory and works whatever `HOME` is. Without `PROXY_ADMIN_TOKEN` it makes
 * a random admin token and prints it.
 */
export async function runDemo(logging: Logging): Promise<void> {
  const stateDir = await mkdtemp(path.join(tmpdir(), 'proxyd-demo-'));
  // Synchronous: an `exit` listener cannot wait, and this also covers a failed start.
  process.once('exit', () => rmSync(stateDir, { recursive: true, force: true }));

  const envToken = process.env.PROXY_ADMIN_TOKEN;
  const adminToken = envToken || randomBytes(24).toString('base64url');
  const [httpPort, adminPort] = [await pickPort(8080), await pickPort(6190)];
  // The page names the admin address, known once the daemon is up.
  let page = DEMO_PAGE;
  const upstream = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page);
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const upstreamPort = (upstream.address() as net.AddressInfo).port;

  const proxyfile = `{
\thttp_port ${httpPort}
\tadmin 127.0.0.1:${adminPort}
}

http://localhost, http://127.0.0.1 {
\treverse_proxy 127.0.0.1:${upstreamPort}
}
`;
  const daemon = await startDaemon({
    config: parse(proxyfile, { filename: 'demo Proxyfile' }),
    logger: logging.root,
    logging,
    adminToken,
    stateDir,
    certDir: path.join(stateDir, 'certs'),
    bindHost: '127.0.0.1',
    // Self-contained: the demo never picks up containers of a runtime on this machine (as --no-docker).
    docker: false,
  });
  const admin = `${daemon.adminAddress.host}:${daemon.adminAddress.port}`;
  page = DEMO_PAGE.replace('ADMIN', admin);
  const bearer = envToken ? '$PROXY_ADMIN_TOKEN' : adminToken;
  process.stdout.write(
    `\nproxyd demo is running. Open http://localhost:${daemon.httpAddress.port}/\n` +
      `Admin API: http://${admin}  (state in ${stateDir}, removed on exit)\n` +
      `Admin token: ${envToken ? 'from PROXY_ADMIN_TOKEN' : `${adminToken} (random, for this run only)`}\n` +
      `Try: curl -H "Authorization: Bearer ${bearer}" http://${admin}/routes\n` +
      'Ctrl-C stops.\n\n',
  );
  const stop = () => {
    upstream.close();
    void daemon.close().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
