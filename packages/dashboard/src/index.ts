/**
 * The analytics dashboard, curated: the HTTP app that serves it (the caller
 * listens), the ports it reads through (the history store's queries and the
 * live snapshots, in-process), the built UI, the error registry, and the
 * shared rules (range presets, Web Vitals ratings) the UI uses too.
 */
export {
  API_CACHE_CONTROL,
  ASSET_CACHE_CONTROL,
  CONTENT_SECURITY_POLICY,
  createDashboardApp,
  DASHBOARD_MAX_CONNECTIONS,
  type DashboardAppOptions,
  type DashboardAuthFailure,
  PAGE_CACHE_CONTROL,
  SECURITY_HEADERS,
} from './app.js';
export { ASSETS_DIR, type DashboardAsset, type DashboardAssets, loadDashboardAssets } from './assets.js';
export { DASHBOARD_ERRORS, DashboardError, type DashboardErrorCode } from './errors.js';
export type {
  BreakdownResponse,
  ErrorResponse,
  RealtimeResponse,
  SitesResponse,
  TimeseriesResponse,
  TotalsResponse,
  VitalsResponse,
} from './shared/api.js';
export { MAX_BUCKETS, PRESETS, type Preset, presetWindow, REALTIME_WINDOW_MS } from './shared/range.js';
export { type Rating, rateCounts, rateValue, VITAL_THRESHOLDS } from './shared/vitals.js';
export {
  type BreakdownItem,
  type DashboardSource,
  DIMENSIONS,
  type Dimension,
  type HistoryReader,
  INTERVALS,
  type Interval,
  type LiveReader,
  type LiveSnapshot,
  type Range,
  type TimeseriesPoint,
  type Totals,
  type VitalCounts,
  type VitalsPage,
} from './source.js';
