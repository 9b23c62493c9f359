import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse } from '@proxyd/proxyfile';

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

/** How many ports after the preferred one the demo tries before taking any free port. */
const NEXT_PORTS = 10;

/** A port the demo binds, and whether it is the one it wanted. */
export interface PickedPort {
  preferred: number;
  port: number;
}

/**
 * Resolves `preferred` when it is free on 127.0.0.1, else the first free one
 * of the {@link NEXT_PORTS} after it, else any free port.
 */
export async function pickPort(preferred: number): Promise<PickedPort> {
  const tryListen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      const probe = net.createServer();
      probe.once('error', reject);
      probe.listen(port, '127.0.0.1', () => {
        const bound = (probe.address() as net.AddressInfo).port;
        probe.close(() => resolve(bound));
      });
    });
  for (let port = preferred; port <= Math.min(preferred + NEXT_PORTS, 65535); port++) {
    try {
      return { preferred, port: await tryListen(port) };
    } catch {
      // Busy: try the next one.
    }
  }
  return { preferred, port: await tryListen(0) };
}

/** `port 8080 is busy, using 8081` for each port that fell back; empty when none did. */
export function fallbackLines(picked: Record<string, PickedPort>): string {
  return Object.entries(picked)
    .filter(([, p]) => p.port !== p.preferred)
    .map(([what, p]) => `${what} port ${p.preferred} is busy, using ${p.port}\n`)
    .join('');
}

/** The demo's Proxyfile: the site on both loopback names, in front of the demo page. */
export function demoProxyfile(httpPort: number, adminPort: number, upstreamPort: number): string {
  return `{
\thttp_port ${httpPort}
\tadmin 127.0.0.1:${adminPort}
}

http://localhost, http://127.0.0.1 {
\treverse_proxy 127.0.0.1:${upstreamPort}
}
`;
}

/** What the demo asks the daemon to start with (the daemon adds its logging). */
export interface DemoDaemonOptions {
  /** The demo's Proxyfile, parsed. */
  config: ReturnType<typeof parse>;
  adminToken: string;
  stateDir: string;
  certDir: string;
  /** Every listener on this address. */
  bindHost: string;
  /** False: no container discovery (as `--no-docker`). */
  docker: boolean;
}

/** The running daemon, as far as the demo needs it. */
export interface DemoDaemon {
  adminAddress: { host: string; port: number };
  httpAddress: { port: number };
  /** Stops, letting requests in flight finish within `graceMs`. */
  close(graceMs: number): Promise<void>;
}

/** How long the demo lets requests in flight finish after Ctrl-C, in ms (a `run` waits `grace_period`). */
const DEMO_GRACE_MS = 1_000;

/**
 * `proxyd demo`: an upstream page and proxyd in front of it, on unprivileged
 * loopback ports (8080 and 6190, else the next free ones, saying so). It
 * prints the Proxyfile it runs, keeps its state in a fresh temporary
 * directory, removed on exit, so it never touches the user's state directory
 * and works whatever `HOME` is. Without `PROXY_ADMIN_TOKEN` it makes a random
 * admin token and prints it. Ctrl-C (SIGINT) or SIGTERM stops it with exit
 * status 0, after at most one second for requests in flight; a second one
 * exits at once, also 0.
 */
export async function runDemo(startDaemon: (options: DemoDaemonOptions) => Promise<DemoDaemon>): Promise<void> {
  const stateDir = await mkdtemp(path.join(tmpdir(), 'proxyd-demo-'));
  // Synchronous: an `exit` listener cannot wait, and this also covers a failed start.
  process.once('exit', () => rmSync(stateDir, { recursive: true, force: true }));

  // From the start: Ctrl-C while the demo is still starting also exits 0.
  let running: { daemon: DemoDaemon; upstream: http.Server } | null = null;
  let stopping = false;
  const stop = () => {
    // Ctrl-C again while stopping: the user wants out now, and nothing failed.
    if (stopping || running === null) process.exit(0);
    stopping = true;
    running.upstream.close();
    running.upstream.closeAllConnections();
    void running.daemon.close(DEMO_GRACE_MS).then(() => process.exit(0));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);

  const envToken = process.env.PROXY_ADMIN_TOKEN;
  const adminToken = envToken || randomBytes(24).toString('base64url');
  const picked = { HTTP: await pickPort(8080), 'admin API': await pickPort(6190) };
  const [httpPort, adminPort] = [picked.HTTP.port, picked['admin API'].port];
  // The page names the admin address, known once the daemon is up.
  let page = DEMO_PAGE;
  const upstream = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page);
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const upstreamPort = (upstream.address() as net.AddressInfo).port;

  const proxyfile = demoProxyfile(httpPort, adminPort, upstreamPort);
  const indented = proxyfile.replace(/^(?=.)/gm, '    ').replaceAll('\t', '    ');
  process.stdout.write(`${fallbackLines(picked)}proxyd demo runs this Proxyfile:\n\n${indented}\n`);
  const daemon = await startDaemon({
    config: parse(proxyfile, { filename: 'demo Proxyfile' }),
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
  running = { daemon, upstream };
}
