import { readFile } from 'node:fs/promises';
import { type Config, type RouteStore, routesFromConfig } from '@proxyd/proxy-core';
import { parse } from '@proxyd/proxyfile';
import type { Logger } from 'pino';

/** Reads and parses a Proxyfile; errors carry the file's position. */
export async function loadProxyfile(path: string): Promise<Config> {
  const text = await readFile(path, 'utf8');
  return parse(text, { filename: path });
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
  logger: Logger;
}

/**
 * The config watcher's reload: read and parse the Proxyfile, then replace
 * only the Proxyfile's routes in the store (one atomic table swap). A read or
 * parse failure leaves the running config as it is and returns the full
 * error text (with `file:line:column`). Global options (ports, admin
 * address, state dir) apply at start only: a reload that changes them logs a
 * warning and keeps the running values.
 */
export function createReloader(options: ReloaderOptions): Reloader {
  const { configPath, store, logger } = options;
  const startGlobal = JSON.stringify(options.running.global);
  let chain: Promise<unknown> = Promise.resolve();

  const once = async (): Promise<ReloadResult> => {
    let config: Config;
    try {
      config = await loadProxyfile(configPath);
    } catch (err) {
      const errorText = err instanceof Error ? err.message : String(err);
      logger.error({ path: configPath, error: errorText }, 'reload failed, running config unchanged');
      return { ok: false, errorText };
    }
    const routes = routesFromConfig(config);
    await store.replaceOrigin('proxyfile', routes);
    if (JSON.stringify(config.global) !== startGlobal) {
      logger.warn({ path: configPath }, 'global options changed; they apply at the next restart');
    }
    const message = `reloaded ${configPath}: ${routes.length} Proxyfile route${routes.length === 1 ? '' : 's'}`;
    logger.info({ path: configPath, routes: routes.length, version: store.version }, message);
    return { ok: true, message };
  };

  return {
    reload() {
      const next = chain.then(once, once);
      chain = next;
      return next.catch((err: unknown) => ({ ok: false as const, errorText: `reload failed: ${String(err)}` }));
    },
  };
}
