import type { Config, DataPlaneHooks } from '@proxyd/proxy-core';

/** Analytics as the daemon wires it: data-plane hooks plus a reader for the admin API. */
export interface AnalyticsWiring {
  hooks: DataPlaneHooks;
  close(): Promise<void>;
}

/** Builds the analytics collectors for a config (filled in by the analytics package). */
export async function createAnalyticsWiring(_config: Config): Promise<AnalyticsWiring> {
  return { hooks: {}, close: async () => {} };
}
