import http from 'node:http';
import net from 'node:net';
import { parse } from '@proxyd/proxyfile';
import type { Logger } from 'pino';
import { startDaemon } from './daemon.js';

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

/** `proxyd demo`: an upstream page and proxyd in front of it, on unprivileged ports. */
export async function runDemo(logger: Logger): Promise<void> {
  const [httpPort, adminPort] = [await pickPort(8080), await pickPort(6190)];
  const adminAddress = `127.0.0.1:${adminPort}`;
  const page = DEMO_PAGE.replace('ADMIN', adminAddress);
  const upstream = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page);
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const upstreamPort = (upstream.address() as net.AddressInfo).port;

  const proxyfile = `{
\thttp_port ${httpPort}
\tadmin ${adminAddress}
}

http://localhost, http://127.0.0.1 {
\treverse_proxy 127.0.0.1:${upstreamPort}
}
`;
  const daemon = await startDaemon({ config: parse(proxyfile, { filename: 'demo Proxyfile' }), logger });
  process.stdout.write(
    `\nproxyd demo is running. Open http://localhost:${httpPort}/\n` +
      `Admin API: http://${adminAddress}/health   (Ctrl-C stops)\n\n`,
  );
  const stop = () => {
    upstream.close();
    void daemon.close().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
