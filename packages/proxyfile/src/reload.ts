import type { Config } from '@proxyd/model';
import type { RouteStore } from '@proxyd/route-store';
import { createProxyfileSource } from './route-source.js';

/** The structured logger the Proxyfile's reload and watch write to (pino fits; the daemon passes target `proxy::config`). */
export interface ProxyfileLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** The outcome of one reload (the admin API's ReloadPort shape). */
export type ReloadResult = { ok: true; message: string } | { ok: false; errorText: string };

/** Re-reads the Proxyfile and swaps its routes. */
export interface Reloader {
  /** Runs one reload; concurrent calls run one after the other. Never rejects. */
  reload(): Promise<ReloadResult>;
}

/** Options of {@link createReloader}. */
export interface ReloaderOptions {
  /** The Proxyfile path given at start. */
  configPath: string;
  store: RouteStore;
  /** The config the process started with (to warn when global options change). */
  running: Config;
  /** Logger of target `proxy::config`. */
  logger: ProxyfileLogger;
  /** Checks a parsed config before its routes are written (the sites' log files); a rejection fails the reload. */
  prepare?: (config: Config) => Promise<void>;
}

/**
 * The config watcher's reload: the Proxyfile source (`@proxyd/proxyfile`)
 * writing into the store, and its log lines. A read or parse failure leaves
 * the running config as it is and returns the full error text (with
 * `file:line:column`). Global options (ports, admin address, state dir)
 * apply at start only: a reload that changes them logs a warning and keeps
 * the running values.
 */
export function createReloader(options: ReloaderOptions): Reloader {
  const { configPath, store, logger } = options;
  const source = createProxyfileSource({
    path: configPath,
    sink: store,
    running: options.running,
    ...(options.prepare === undefined ? {} : { prepare: options.prepare }),
  });
  return {
    async reload() {
      const result = await source.reload();
      if (!result.ok) {
        logger.error({ path: configPath, error: result.errorText }, 'reload failed, running config unchanged');
        return result;
      }
      if (result.globalChanged) {
        logger.warn({ path: configPath }, 'global options changed; they apply at the next restart');
      }
      logger.info({ path: configPath, routes: result.routes, version: store.version }, result.message);
      return { ok: true, message: result.message };
    },
  };
}
