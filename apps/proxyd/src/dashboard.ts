import type { AddressInfo } from 'node:net';
import { trackForDrain } from '@proxyd/admin-api';
import { createDashboardApp, type DashboardAuthFailure, type HistoryReader, type LiveReader } from '@proxyd/dashboard';
import type { DashboardOptions } from '@proxyd/model';
import type { Logger } from 'pino';
import { splitHostPort } from './control-plane.js';

/** The log target of the dashboard listener (start, refused credentials, failed queries). */
export const DASHBOARD_TARGET = 'proxy::dashboard';

/** A running dashboard listener (the global option `dashboard`). */
export interface DashboardListener {
  /** The bound address (the port the OS chose when asked for 0). */
  readonly address: { host: string; port: number };
  /**
   * Stops accepting, answers the requests it accepted within `graceMs`
   * (default 0: cuts them), then closes (`listener-drain.ts`).
   */
  close(graceMs?: number): Promise<void>;
}

/** What {@link startDashboardListener} wires. */
export interface DashboardListenerOptions {
  /** The Proxyfile's `dashboard { … }`: address and credentials. */
  dashboard: DashboardOptions;
  /** The history store (read in-process); null when history is off. */
  history: HistoryReader | null;
  /** The live snapshots: this process's, or with workers the merged ones the admin API's `/analytics` answers. */
  live: LiveReader;
  /** Logger of {@link DASHBOARD_TARGET}. */
  logger: Logger;
  /** The clock, epoch ms (default `Date.now`; tests). */
  now?: () => number;
}

const isLoopback = (host: string) => host === 'localhost' || host === '::1' || /^127\./.test(host);

/**
 * Starts the dashboard on its own listener in the control-plane process: it
 * reads the history store and the live snapshots in-process, so it neither
 * goes through the admin API nor spends its rate limit. Refused passwords
 * are logged at WARN at most once a minute, with the count since the last
 * line (never the credentials); a request without credentials (a browser's
 * first, before it asks) is not logged.
 */
export async function startDashboardListener(options: DashboardListenerOptions): Promise<DashboardListener> {
  const { logger } = options;
  const now = options.now ?? Date.now;
  const address = splitHostPort(options.dashboard.address);
  let refused = 0;
  let lastLine = Number.NEGATIVE_INFINITY;
  const onAuthFailure = (event: DashboardAuthFailure) => {
    if (event.reason === 'missing') return;
    refused++;
    if (now() - lastLine < 60_000) return;
    lastLine = now();
    logger.warn(
      { client: event.client, reason: event.reason, refused },
      `dashboard credentials refused for ${event.client} (${refused} refused since the last such line)`,
    );
    refused = 0;
  };
  const app = createDashboardApp({
    source: { history: options.history, live: options.live },
    basicAuth: options.dashboard.basic_auth,
    logger,
    now,
    onAuthFailure,
  });
  const drain = trackForDrain(app.server);
  await app.listen({ host: address.host, port: address.port });
  const { port } = app.server.address() as AddressInfo;
  const shown = `${address.host.includes(':') ? `[${address.host}]` : address.host}:${port}`;
  if (!isLoopback(address.host)) {
    logger.warn(
      { dashboard: shown },
      'dashboard listens beyond loopback over plain HTTP: its credentials cross the network in clear (serve it through a site with HTTPS instead: reverse_proxy to a loopback dashboard)',
    );
  }
  logger.info({ dashboard: shown, history: options.history !== null }, `dashboard listening on http://${shown}/`);
  return {
    address: { host: address.host, port },
    close: (graceMs = 0) => drain.drain(graceMs).then(() => app.close()),
  };
}
