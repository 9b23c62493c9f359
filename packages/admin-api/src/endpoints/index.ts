import type { Endpoint } from '../endpoint.js';
import { getAnalytics, listAnalytics } from './analytics.js';
import { deleteCacheEntry, purgeCache } from './cache-purge.js';
import { listCertificates } from './certificates.js';
import { getDiscovery } from './discovery.js';
import { health } from './health.js';
import { getMetrics } from './metrics.js';
import { getOpenApi } from './openapi-json.js';
import { postReload } from './reload.js';
import { createRoute } from './routes-create.js';
import { deleteRoute } from './routes-delete.js';
import { listRoutes } from './routes-list.js';
import { putSnapshot } from './routes-snapshot.js';
import { getStatsBreakdown } from './stats-breakdown.js';
import { listStats } from './stats-domains.js';
import { getStatsTimeseries } from './stats-timeseries.js';
import { getStatsTotals } from './stats-totals.js';
import { getStatsVitals } from './stats-vitals.js';

/** Every endpoint of the admin API, in documentation order. */
export const ENDPOINTS: readonly Endpoint[] = [
  health,
  listRoutes,
  createRoute,
  putSnapshot,
  deleteRoute,
  getMetrics,
  listAnalytics,
  getAnalytics,
  listCertificates,
  getDiscovery,
  listStats,
  getStatsTimeseries,
  getStatsTotals,
  getStatsBreakdown,
  getStatsVitals,
  purgeCache,
  deleteCacheEntry,
  postReload,
  getOpenApi,
];
