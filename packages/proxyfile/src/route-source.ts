import { readFile } from 'node:fs/promises';
import { addressDomain, type Config, type RouteSpec } from '@proxyd/model';
import type { RouteSink } from '@proxyd/route-store';
import { parse } from './parse.js';

/**
 * One route per address host of every site, owned by the Proxyfile (origin
 * `proxyfile`, source null). A host written twice keeps its last site (the
 * compiler rejects that case).
 */
export function routesFromConfig(config: Config): RouteSpec[] {
  const byDomain = new Map<string, RouteSpec>();
  for (const site of config.sites) {
    for (const address of site.addresses) {
      const domain = addressDomain(address);
      byDomain.set(domain, { domain, origin: 'proxyfile', source: null, site });
    }
  }
  return [...byDomain.values()];
}

/** Reads and parses the Proxyfile at `path`; errors carry the file's position (`file:line:column: …`). */
export async function loadProxyfile(path: string): Promise<Config> {
  const text = await readFile(path, 'utf8');
  return parse(text, { filename: path });
}

/** The outcome of one {@link ProxyfileSource.reload}. */
export type ProxyfileReload =
  | {
      ok: true;
      /** The config just read. */
      config: Config;
      /** Number of Proxyfile routes written to the sink. */
      routes: number;
      /** Whether the global options differ from the running ones (they apply at the next start only). */
      globalChanged: boolean;
      /** `reloaded <path>: <n> Proxyfile route(s)`, the text POST /reload answers. */
      message: string;
    }
  | {
      ok: false;
      /** The full error text: `file:line:column: …` for a parse error, the OS error for a read failure. */
      errorText: string;
    };

/** Options of {@link createProxyfileSource}. */
export interface ProxyfileSourceOptions {
  /** The Proxyfile path given at start. */
  path: string;
  /** Where the Proxyfile's routes go (the route store). */
  sink: RouteSink;
  /** The config the process started with (to tell when global options change). */
  running: Config;
  /**
   * Runs after a successful parse, before any route is written (e.g. the
   * daemon opens the files of sites' `log`). A rejection fails the reload
   * with its message as the error text; nothing is written.
   */
  prepare?: (config: Config) => Promise<void>;
}

/** The Proxyfile as a route source: re-read on demand, its routes written through a {@link RouteSink}. */
export interface ProxyfileSource {
  readonly path: string;
  /**
   * Reads and parses the file, then replaces the Proxyfile's routes in the
   * sink (one table swap). A read or parse failure writes nothing and
   * returns the full error text. Concurrent calls run one after the other.
   * Never rejects.
   */
  reload(): Promise<ProxyfileReload>;
}

/** Creates the Proxyfile source of `options.path`; nothing is read until {@link ProxyfileSource.reload}. */
export function createProxyfileSource(options: ProxyfileSourceOptions): ProxyfileSource {
  const { path, sink } = options;
  const runningGlobal = JSON.stringify(options.running.global);
  let chain: Promise<unknown> = Promise.resolve();

  const once = async (): Promise<ProxyfileReload> => {
    let config: Config;
    try {
      config = await loadProxyfile(path);
    } catch (err) {
      return { ok: false, errorText: err instanceof Error ? err.message : String(err) };
    }
    try {
      await options.prepare?.(config);
    } catch (err) {
      return { ok: false, errorText: err instanceof Error ? err.message : String(err) };
    }
    const routes = routesFromConfig(config);
    await sink.replaceOrigin('proxyfile', routes);
    const message = `reloaded ${path}: ${routes.length} Proxyfile route${routes.length === 1 ? '' : 's'}`;
    return {
      ok: true,
      config,
      routes: routes.length,
      globalChanged: JSON.stringify(config.global) !== runningGlobal,
      message,
    };
  };

  return {
    path,
    reload() {
      const next = chain.then(once, once);
      chain = next;
      return next.catch((err: unknown) => ({ ok: false as const, errorText: `reload failed: ${String(err)}` }));
    },
  };
}
