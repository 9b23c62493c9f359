import type { Config, Handler } from '@proxyd/model';

/** Counts of a compiled config, for `proxyd validate`. */
export interface ConfigSummary {
  /** Site blocks. */
  sites: number;
  /** Distinct upstream `host:port` addresses across every reverse_proxy. */
  upstreams: number;
}

/** Counts the sites and distinct upstreams of a config. */
export function summarize(config: Config): ConfigSummary {
  const upstreams = new Set<string>();
  const add = (h: Handler | null) => {
    if (h?.kind === 'reverse_proxy') for (const u of h.upstreams) upstreams.add(`${u.host}|${u.port}`);
  };
  for (const site of config.sites) {
    for (const block of [site, ...site.handles]) {
      add(block.handler);
      for (const p of block.matched_proxies ?? []) add(p.handler);
    }
  }
  return { sites: config.sites.length, upstreams: upstreams.size };
}
