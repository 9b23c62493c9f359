import { type AnalyticsSnapshot, createAnalytics } from '@proxyd/analytics';
import type { Config, DataPlaneHooks } from '@proxyd/proxy-core';

/** The env var that shortens the aggregation cycle (ms; tests). Default 60,000 (spec §8). */
export const CYCLE_ENV = 'PROXYD_ANALYTICS_CYCLE_MS';

/** Analytics as the daemon wires it: data-plane hooks plus a reader for the admin API. */
export interface AnalyticsWiring {
  hooks: DataPlaneHooks;
  /** Snapshots for the admin API (structurally its `AnalyticsPort`; reads never flush). */
  reader: {
    list(): AnalyticsSnapshot[];
    get(domain: string): AnalyticsSnapshot | undefined;
  };
  close(): Promise<void>;
}

/** Reads `PROXYD_ANALYTICS_CYCLE_MS`: a whole number of ms ≥ 10, else the default. */
export function cycleFromEnv(env: NodeJS.ProcessEnv = process.env): number | undefined {
  const raw = env[CYCLE_ENV];
  if (raw === undefined || !/^\d+$/.test(raw)) return undefined;
  const ms = Number(raw);
  return ms >= 10 ? ms : undefined;
}

/**
 * Builds the analytics collectors for a config: GeoIP from `geoip_db` (else
 * the embedded database), the aggregation cycle from {@link CYCLE_ENV}.
 */
export async function createAnalyticsWiring(config: Config): Promise<AnalyticsWiring> {
  const cycleMs = cycleFromEnv();
  const analytics = await createAnalytics({
    geoipDb: config.global.geoip_db,
    ...(cycleMs === undefined ? {} : { cycleMs }),
  });
  return {
    hooks: analytics.hooks,
    reader: { list: () => analytics.list(), get: (domain) => analytics.get(domain) },
    close: () => analytics.close(),
  };
}
