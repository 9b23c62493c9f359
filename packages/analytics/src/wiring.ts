import path from 'node:path';
import type { Config } from '@proxyd/model';
import type { DataPlaneHooks } from '@proxyd/proxy-core';
import { createAnalytics } from './analytics.js';
import type { AnalyticsState } from './analytics-state.js';
import type { MinuteRollup } from './rollup.js';
import { loadSecretFile, SECRET_FILE_NAME } from './secret-file.js';
import type { AnalyticsSnapshot } from './snapshot.js';

/** The env var that shortens the aggregation cycle (ms; tests). Default 60,000 (spec §8). */
export const CYCLE_ENV = 'PROXYD_ANALYTICS_CYCLE_MS';
/** The log target of analytics events. */
export const ANALYTICS_TARGET = 'proxy::analytics';

/** Analytics as the daemon wires it: data-plane hooks plus a reader for the admin API. */
export interface AnalyticsWiring {
  hooks: DataPlaneHooks;
  /** Snapshots for the admin API (structurally its `AnalyticsPort`; reads never flush). */
  reader: {
    list(): AnalyticsSnapshot[];
    get(domain: string): AnalyticsSnapshot | undefined;
  };
  /** Requests not counted because the domain cap was reached (`proxyd_analytics_dropped_requests_total`). */
  droppedRequests(): number;
  /** The collectors' state (one domain's, or all) for the control plane to merge with other workers'. */
  exportState(domain?: string): AnalyticsState;
  /** The complete minutes' rollups before `now` (history), forgotten here. */
  drainRollups(now: number): MinuteRollup[];
  /** The day's visitor salt (history's). */
  setVisitorSalt(salt: Buffer): void;
  close(): Promise<void>;
}

/** What the wiring logs to (a pino logger of target `proxy::analytics` fits). */
export interface AnalyticsLog {
  warn(fields: Record<string, unknown>, message: string): void;
}

/** Where the wiring keeps state and reports. */
export interface AnalyticsWiringOptions {
  /** The daemon's state dir: the beacon-token key is kept in `<stateDir>/analytics.key` (mode 0600). Absent: a key per process. */
  stateDir?: string;
  /** Logger of the `proxy::analytics` target (the domain-cap warning, a replaced key). */
  logger?: AnalyticsLog;
  /** Domains tracked at most (default 1,000; tests). */
  maxDomains?: number;
  /** Count per-minute rollups (default true; false with history off: nothing would drain them). */
  rollups?: boolean;
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
 * the embedded database), the aggregation cycle from {@link CYCLE_ENV}, the
 * beacon-token key from the state dir (created on first start), and a
 * one-time warning when the domain cap is reached.
 */
export async function createAnalyticsWiring(
  config: Config,
  options: AnalyticsWiringOptions = {},
): Promise<AnalyticsWiring> {
  const cycleMs = cycleFromEnv();
  const { logger } = options;
  let secret: Buffer | undefined;
  if (options.stateDir !== undefined) {
    const file = path.join(options.stateDir, SECRET_FILE_NAME);
    const loaded = await loadSecretFile(file);
    if (loaded.origin === 'replaced') {
      logger?.warn({ file }, 'analytics key file was not a key: replaced (beacon tokens issued before are refused)');
    }
    secret = loaded.secret;
  }
  const analytics = await createAnalytics({
    geoipDb: config.global.geoip_db,
    ...(cycleMs === undefined ? {} : { cycleMs }),
    ...(secret === undefined ? {} : { secret }),
    ...(options.maxDomains === undefined ? {} : { maxDomains: options.maxDomains }),
    ...(options.rollups === undefined ? {} : { rollups: options.rollups }),
    onDomainCap: ({ maxDomains, host }) =>
      logger?.warn(
        { max_domains: maxDomains, host },
        'analytics domain cap reached: requests for further domains are not counted (proxyd_analytics_dropped_requests_total)',
      ),
  });
  return {
    hooks: analytics.hooks,
    reader: { list: () => analytics.list(), get: (domain) => analytics.get(domain) },
    droppedRequests: () => analytics.droppedRequests(),
    exportState: (domain) => analytics.exportState(domain),
    drainRollups: (now) => analytics.drainRollups(now),
    setVisitorSalt: (salt) => analytics.setVisitorSalt(Buffer.from(salt)),
    close: () => analytics.close(),
  };
}
