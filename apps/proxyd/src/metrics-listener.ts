import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type AdminTimeouts, attachAdminServerHandlers, METRICS_CONTENT_TYPE, trackForDrain } from '@proxyd/admin-api';
import type { HostPort } from '@proxyd/model';
import type { MetricsExposition } from '@proxyd/telemetry';

/**
 * Connections the metrics listener holds at once: a scraper or two (and
 * Prometheus keeps one per target); more are refused as they arrive.
 */
export const METRICS_MAX_CONNECTIONS = 64;

/** A running metrics listener (the global option `metrics`). */
export interface MetricsListener {
  /** The bound address (the port the OS chose when asked for 0). */
  readonly address: { host: string; port: number };
  /**
   * Stops accepting, answers the scrapes it accepted within `graceMs`
   * (default 0: cuts them), then closes (`listener-drain.ts`).
   */
  close(graceMs?: number): Promise<void>;
}

/** Options of {@link startMetricsListener}. */
export interface MetricsListenerOptions {
  /** Where to listen; port 0 asks the OS for a free one. */
  address: HostPort;
  /** The exposition `GET /metrics` answers (the admin API's). */
  metrics: MetricsExposition;
  /** Connection timeouts (default: the admin listeners' `DEFAULT_ADMIN_TIMEOUTS`). */
  timeouts?: Partial<AdminTimeouts>;
}

/**
 * The `metrics` listener: `GET /metrics` (and `HEAD`) answers the same
 * exposition as the admin API's `GET /metrics`, without the admin token and
 * outside the admin API's 60-a-minute budget, so a scraper holds no
 * credential that can change routes. Nothing else is served: another path
 * is 404, another method on `/metrics` 405 with `Allow: GET, HEAD` (both
 * with the admin API's `{error}` envelope). Its limits are the admin
 * listeners' (header, request, idle and keep-alive timeouts; unparsable
 * HTTP answered by the admin API's handlers), plus at most
 * {@link METRICS_MAX_CONNECTIONS} connections. Scrapes that arrive while
 * one is being rendered share its result: a burst costs one render.
 */
export async function startMetricsListener(options: MetricsListenerOptions): Promise<MetricsListener> {
  let rendering: Promise<string> | null = null;
  const render = (): Promise<string> => {
    if (rendering === null) {
      rendering = options.metrics.render().finally(() => {
        rendering = null;
      });
    }
    return rendering;
  };
  const server = http.createServer((req, res) => void answer(req, res, render));
  const drain = trackForDrain(server);
  attachAdminServerHandlers(server, options.timeouts === undefined ? {} : { timeouts: options.timeouts });
  server.maxConnections = METRICS_MAX_CONNECTIONS;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: options.address.host, port: options.address.port }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  return {
    address: { host: options.address.host, port },
    close: (graceMs = 0) => drain.drain(graceMs),
  };
}

async function answer(req: IncomingMessage, res: ServerResponse, render: () => Promise<string>): Promise<void> {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  // A request body is never read: drop it as it comes.
  req.resume();
  if (path !== '/metrics') {
    error(res, 404, 'not found');
    return;
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    error(res, 405, 'method not allowed', { allow: 'GET, HEAD' });
    return;
  }
  let text: string;
  try {
    text = await render();
  } catch {
    error(res, 500, 'internal error');
    return;
  }
  res.writeHead(200, { 'content-type': METRICS_CONTENT_TYPE, 'content-length': Buffer.byteLength(text) });
  res.end(req.method === 'HEAD' ? undefined : text);
}

function error(res: ServerResponse, status: number, message: string, headers: http.OutgoingHttpHeaders = {}): void {
  const body = JSON.stringify({ error: message });
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    ...headers,
  });
  res.end(body);
}
