/**
 * The JSON the dashboard's `/api/...` routes answer: the stats API's shapes
 * (issue 22 contract §3) plus the real-time view. Shared by the server and
 * the browser UI (types only).
 */
import type {
  BreakdownItem,
  Dimension,
  Interval,
  LiveSnapshot,
  TimeseriesPoint,
  Totals,
  VitalsPage,
} from '../source.js';

/** `GET /api/stats`. */
export interface SitesResponse {
  /** Every domain with history or live traffic, sorted. */
  domains: string[];
  /** False when history is off: only the real-time view has data. */
  history: boolean;
}

/** `GET /api/stats/{domain}/timeseries`. */
export interface TimeseriesResponse {
  domain: string;
  from: number;
  to: number;
  interval: Interval;
  points: TimeseriesPoint[];
}

/** `GET /api/stats/{domain}/totals`. */
export type TotalsResponse = { domain: string; from: number; to: number } & Totals;

/** `GET /api/stats/{domain}/breakdown/{dimension}`. */
export interface BreakdownResponse {
  domain: string;
  dimension: Dimension;
  items: BreakdownItem[];
}

/** `GET /api/stats/{domain}/vitals`. */
export interface VitalsResponse {
  domain: string;
  pages: VitalsPage[];
}

/** `GET /api/realtime/{domain}`: the live snapshot and the last 30 minutes. */
export interface RealtimeResponse {
  domain: string;
  /** When the answer was made, epoch ms. */
  now: number;
  /** The live snapshot (spec §2.4); null when the domain had no traffic since start. */
  snapshot: LiveSnapshot | null;
  /** The last 30 complete minutes by minute, from history; null when history is off. */
  minutes: TimeseriesPoint[] | null;
}

/** Every error: the admin API's envelope. */
export interface ErrorResponse {
  error: string;
}
