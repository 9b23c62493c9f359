import { readFile } from 'node:fs/promises';
import { type Config, routesFromConfig } from '@proxyd/proxy-core';
import { parse } from '@proxyd/proxyfile';
import type { Logger } from 'pino';
import { createAnalyticsWiring } from './analytics.js';
import { startControlPlane } from './control-plane.js';
import { startDataPlane } from './data-plane.js';

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

/** Reads and parses a Proxyfile; errors carry the file's position. */
export async function loadProxyfile(path: string): Promise<Config> {
  const text = await readFile(path, 'utf8');
  return parse(text, { filename: path });
}

/** Starts analytics, the data plane and the admin API, in that order. */
export async function startDaemon(options: DaemonOptions): Promise<Daemon> {
  const { config, logger } = options;
  const routes = routesFromConfig(config);
  const analytics = await createAnalyticsWiring(config);
  const dataPlane = await startDataPlane(config, routes, analytics.hooks);
  const control = await startControlPlane(config, options.admin);

  const { httpAddress } = dataPlane;
  const { adminAddress } = control;
  logger.info(
    {
      target: 'proxy::server',
      http: `${httpAddress.host}:${httpAddress.port}`,
      admin: `${adminAddress.host}:${adminAddress.port}`,
      routes: routes.length,
    },
    'proxyd ready',
  );
  return {
    httpAddress,
    adminAddress,
    async close() {
      await Promise.all([dataPlane.close(), control.close()]);
      await analytics.close();
    },
  };
}
