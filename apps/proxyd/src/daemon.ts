import { readFile } from 'node:fs/promises';
import { createAdminApp } from '@proxyd/admin-api';
import { type Config, DEFAULTS, ProxyServer, RouteTable, routesFromConfig } from '@proxyd/proxy-core';
import { parse } from '@proxyd/proxyfile';
import type { Logger } from 'pino';

/** What starts a daemon: a parsed config and where it came from. */
export interface DaemonOptions {
  config: Config;
  /** Admin listener override (`--admin`), else the Proxyfile's `admin`, else 127.0.0.1:6190. */
  admin?: string;
  logger: Logger;
}

/** A running proxyd: the data plane and the admin listener. */
export interface Daemon {
  httpAddress: { host: string; port: number };
  adminAddress: { host: string; port: number };
  close(): Promise<void>;
}

/** Splits `host:port` (IPv6 in brackets); port 0 asks the OS for a free one. */
export function splitHostPort(value: string): { host: string; port: number } {
  const m = /^(?:\[([0-9a-fA-F:]+)\]|([^:]+)):(\d{1,5})$/.exec(value);
  const port = Number(m?.[3]);
  if (!m || port > 65535) throw new Error(`invalid listen address "${value}", expected host:port`);
  return { host: (m[1] ?? m[2]) as string, port };
}

/** Reads and parses a Proxyfile; errors carry the file's position. */
export async function loadProxyfile(path: string): Promise<Config> {
  const text = await readFile(path, 'utf8');
  return parse(text, { filename: path });
}

/** Starts the data plane and the admin API. */
export async function startDaemon(options: DaemonOptions): Promise<Daemon> {
  const { config, logger } = options;
  const table = new RouteTable(routesFromConfig(config), 1);
  const proxy = new ProxyServer({ table });
  const http = await proxy.listen(config.global.http_port, '0.0.0.0');

  const admin = splitHostPort(options.admin ?? config.global.admin ?? DEFAULTS.admin);
  const app = createAdminApp();
  await app.listen({ host: admin.host, port: admin.port });
  const adminBound = app.server.address();
  const adminPort = typeof adminBound === 'object' && adminBound ? adminBound.port : admin.port;

  const daemon: Daemon = {
    httpAddress: { host: http.address, port: http.port },
    adminAddress: { host: admin.host, port: adminPort },
    async close() {
      await Promise.all([proxy.close(), app.close()]);
    },
  };
  logger.info(
    {
      target: 'proxy::server',
      http: `${http.address}:${http.port}`,
      admin: `${admin.host}:${adminPort}`,
      routes: table.routes.length,
    },
    'proxyd ready',
  );
  return daemon;
}
