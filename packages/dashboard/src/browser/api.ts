import type {
  BreakdownResponse,
  ErrorResponse,
  RealtimeResponse,
  SitesResponse,
  TimeseriesResponse,
  TotalsResponse,
  VitalsResponse,
} from '../shared/api.js';
import type { Dimension, Interval, Range } from '../source.js';

/** A failed call: its status and the envelope's message. */
export class ApiError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

async function get<T>(path: string, query: Record<string, string | number> = {}): Promise<T> {
  const params = new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)]));
  const url = params.size > 0 ? `${path}?${params}` : path;
  // Same origin: the browser sends the Basic credentials it was given for the page.
  const res = await fetch(url, { headers: { accept: 'application/json' }, cache: 'no-store' });
  if (!res.ok) {
    let message = `${res.status} ${res.statusText}`;
    try {
      message = ((await res.json()) as ErrorResponse).error ?? message;
    } catch {
      // Not the envelope: the status line says enough.
    }
    throw new ApiError(res.status, message);
  }
  return (await res.json()) as T;
}

const site = (domain: string) => `/api/stats/${encodeURIComponent(domain)}`;

/** The dashboard's JSON routes (`/api/...`). */
export const api = {
  sites: () => get<SitesResponse>('/api/stats'),
  timeseries: (domain: string, range: Range, interval: Interval) =>
    get<TimeseriesResponse>(`${site(domain)}/timeseries`, { from: range.from, to: range.to, interval }),
  totals: (domain: string, range: Range) =>
    get<TotalsResponse>(`${site(domain)}/totals`, { from: range.from, to: range.to }),
  breakdown: (domain: string, dimension: Dimension, range: Range, limit = 10) =>
    get<BreakdownResponse>(`${site(domain)}/breakdown/${dimension}`, { from: range.from, to: range.to, limit }),
  vitals: (domain: string, range: Range, limit = 20) =>
    get<VitalsResponse>(`${site(domain)}/vitals`, { from: range.from, to: range.to, limit }),
  realtime: (domain: string) => get<RealtimeResponse>(`/api/realtime/${encodeURIComponent(domain)}`),
};
