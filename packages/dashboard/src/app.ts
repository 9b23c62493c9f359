import type { BasicAuth } from '@proxyd/model';
import { AUTH_BUSY, AUTH_DENIED, AUTH_OK, BasicAuthenticator, type BasicAuthOptions } from '@proxyd/proxy-core';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  LogController,
} from 'fastify';
import { type DashboardAsset, type DashboardAssets, loadDashboardAssets } from './assets.js';
import { DashboardError } from './errors.js';
import { parseDimension, parseDomain, parseInterval, parseLimit, parseRange } from './query.js';
import type {
  BreakdownResponse,
  RealtimeResponse,
  SitesResponse,
  TimeseriesResponse,
  TotalsResponse,
  VitalsResponse,
} from './shared/api.js';
import { floorTo, INTERVAL_MS, presetWindow } from './shared/range.js';
import type { DashboardSource, HistoryReader, Interval, Range, TimeseriesPoint, Totals } from './source.js';

/**
 * The page may load and fetch only from its own origin: no inline script or
 * style, no font, no CDN, no third party (the charting library is bundled).
 */
export const CONTENT_SECURITY_POLICY =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** Headers on every answer of the dashboard listener, a 401 included. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'permissions-policy': 'camera=(), microphone=(), geolocation=(), payment=(), usb=()',
};

/** `Cache-Control` of the JSON routes: private analytics, never stored. */
export const API_CACHE_CONTROL = 'no-store';
/** `Cache-Control` of the page: kept, revalidated every time (its ETag), so a new build shows at once. */
export const PAGE_CACHE_CONTROL = 'no-cache';
/** `Cache-Control` of `/assets/*`: the page names them with a content hash (`?v=`), so they never change. */
export const ASSET_CACHE_CONTROL = 'private, max-age=31536000, immutable';

/** Connections the listener holds at once; more wait in the kernel's backlog. */
export const DASHBOARD_MAX_CONNECTIONS = 256;

/** A refused credential, for the caller's log (never the credential itself). */
export interface DashboardAuthFailure {
  /** The client address. */
  client: string;
  /** `missing`: no Basic credentials; `wrong`: refused by bcrypt; `busy`: too many checks in progress. */
  reason: 'missing' | 'wrong' | 'busy';
}

/** What {@link createDashboardApp} needs. */
export interface DashboardAppOptions {
  /** The history store and the live snapshots, read in-process. */
  source: DashboardSource;
  /** The Proxyfile's `dashboard { basic_auth … }`: realm and bcrypt users. */
  basicAuth: BasicAuth;
  /** Options of the credential check (default: proxy-core's, its process-wide bcrypt gate). */
  authOptions?: BasicAuthOptions;
  /** The built UI (default: {@link loadDashboardAssets}, which throws when the build has not run). */
  assets?: DashboardAssets;
  /** The clock, epoch ms (default `Date.now`). */
  now?: () => number;
  /** Where errors the listener answers 500 with are logged (default: none). */
  logger?: FastifyBaseLogger;
  /** Called on every refused credential. */
  onAuthFailure?: (event: DashboardAuthFailure) => void;
}

const GET_HEAD = 'GET, HEAD';

/**
 * The dashboard's HTTP app (Fastify, not listening: the caller listens):
 * the page at `/`, its script and style under `/assets/`, and the JSON it
 * reads under `/api/` (the stats API's shapes, issue 22 contract §3, plus
 * `/api/realtime/{domain}`). Every request needs the `basic_auth`
 * credentials; every answer carries {@link SECURITY_HEADERS}; only GET and
 * HEAD are served (405 with `Allow: GET, HEAD`). Errors are the admin API's
 * envelope `{error}`.
 */
export function createDashboardApp(options: DashboardAppOptions): FastifyInstance {
  const { source } = options;
  const assets = options.assets ?? loadDashboardAssets();
  const now = options.now ?? Date.now;
  const authenticator = new BasicAuthenticator(options.basicAuth, options.authOptions);
  const unauthorized = () =>
    new DashboardError('DASHBOARD_UNAUTHORIZED', undefined, {
      headers: { 'www-authenticate': authenticator.challenge },
    });

  const app = Fastify({
    ...(options.logger === undefined ? { logger: false } : { loggerInstance: options.logger }),
    logController: new LogController({ disableRequestLogging: true }),
    exposeHeadRoutes: true,
    bodyLimit: 1024,
    routerOptions: { maxParamLength: 512 },
    // A slow or silent client: headers within 10 s, a request within 30 s, idle sockets closed after 30 s.
    connectionTimeout: 30_000,
    keepAliveTimeout: 30_000,
    requestTimeout: 30_000,
    frameworkErrors: (error, _request, reply) => send(reply, toDashboardError(error)),
  });
  app.server.headersTimeout = 10_000;
  app.server.maxConnections = DASHBOARD_MAX_CONNECTIONS;

  app.addHook('onRequest', async (request, reply) => {
    reply.headers(SECURITY_HEADERS);
    const client = request.socket.remoteAddress ?? '';
    const verdict = authenticator.check(request.headers.authorization);
    if (verdict === AUTH_BUSY) {
      options.onAuthFailure?.({ client, reason: 'busy' });
      throw new DashboardError('DASHBOARD_AUTH_BUSY', undefined, { headers: { 'retry-after': '1' } });
    }
    if (verdict === AUTH_DENIED) {
      options.onAuthFailure?.({ client, reason: 'missing' });
      throw unauthorized();
    }
    if (verdict !== AUTH_OK && !(await verdict)) {
      options.onAuthFailure?.({ client, reason: 'wrong' });
      throw unauthorized();
    }
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      throw new DashboardError('DASHBOARD_METHOD_NOT_ALLOWED', undefined, { headers: { allow: GET_HEAD } });
    }
  });
  app.setErrorHandler((error, request, reply) => {
    const err = toDashboardError(error);
    if (err.statusCode >= 500 && err.code !== 'DASHBOARD_HISTORY_OFF') {
      request.log.error({ err: error, url: request.url }, 'dashboard request failed');
    }
    send(reply, err);
  });
  app.setNotFoundHandler(() => {
    throw new DashboardError('DASHBOARD_NOT_FOUND');
  });

  // The page and its files.
  app.get('/', (request, reply) => serveAsset(request, reply, assets.index, PAGE_CACHE_CONTROL));
  app.get<{ Params: { name: string } }>('/assets/:name', (request, reply) => {
    const file = assets.files.get(`/assets/${request.params.name}`);
    if (file === undefined) throw new DashboardError('DASHBOARD_NOT_FOUND');
    return serveAsset(request, reply, file, ASSET_CACHE_CONTROL);
  });

  // The JSON: never cached, anywhere.
  app.register(async (api) => {
    api.addHook('onSend', async (_request, reply) => {
      reply.header('cache-control', API_CACHE_CONTROL);
    });
    api.get('/api/stats', async (): Promise<SitesResponse> => {
      const domains = new Set(source.history?.domains() ?? []);
      for (const snapshot of await source.live.list()) domains.add(snapshot.domain);
      return { domains: [...domains].sort(), history: source.history !== null };
    });
    type StatsRoute = { Params: { domain: string }; Querystring: Record<string, string | undefined> };
    api.get<StatsRoute>('/api/stats/:domain/timeseries', async (request): Promise<TimeseriesResponse> => {
      const { domain, history, stored } = await statsTarget(request.params.domain);
      const range = parseRange(request.query, now());
      const interval = parseInterval(request.query.interval, range);
      const points = stored ? history.timeseries(domain, range, interval) : zeroSeries(range, interval);
      return { domain, from: range.from, to: range.to, interval, points };
    });
    api.get<StatsRoute>('/api/stats/:domain/totals', async (request): Promise<TotalsResponse> => {
      const { domain, history, stored } = await statsTarget(request.params.domain);
      const range = parseRange(request.query, now());
      return { domain, from: range.from, to: range.to, ...(stored ? history.totals(domain, range) : zeroTotals()) };
    });
    api.get<StatsRoute & { Params: { dimension: string } }>(
      '/api/stats/:domain/breakdown/:dimension',
      async (request): Promise<BreakdownResponse> => {
        const { domain, history, stored } = await statsTarget(request.params.domain);
        const dimension = parseDimension(request.params.dimension);
        const range = parseRange(request.query, now());
        const limit = parseLimit(request.query.limit, 10);
        return { domain, dimension, items: stored ? history.breakdown(domain, dimension, range, limit) : [] };
      },
    );
    api.get<StatsRoute>('/api/stats/:domain/vitals', async (request): Promise<VitalsResponse> => {
      const { domain, history, stored } = await statsTarget(request.params.domain);
      const range = parseRange(request.query, now());
      const limit = parseLimit(request.query.limit, 20);
      return { domain, pages: stored ? history.vitals(domain, range, limit) : [] };
    });
    api.get<{ Params: { domain: string } }>('/api/realtime/:domain', async (request): Promise<RealtimeResponse> => {
      const domain = parseDomain(request.params.domain);
      const at = now();
      const snapshot = (await source.live.get(domain)) ?? null;
      const history = source.history;
      const stored = history?.domains().includes(domain) ?? false;
      if (snapshot === null && !stored) throw new DashboardError('DASHBOARD_UNKNOWN_DOMAIN', JSON.stringify(domain));
      let minutes: TimeseriesPoint[] | null = null;
      if (history !== null) {
        const window = presetWindow('realtime', at);
        minutes = stored ? history.timeseries(domain, window, 'minute') : zeroSeries(window, 'minute');
      }
      return { domain, now: at, snapshot, minutes };
    });
  });

  /**
   * The domain of a stats route and whether history has rows for it: 501
   * without history, 404 for a domain neither stored nor live (a live one
   * not yet flushed reads as zeros).
   */
  async function statsTarget(raw: string): Promise<{ domain: string; history: HistoryReader; stored: boolean }> {
    const domain = parseDomain(raw);
    const history = source.history;
    if (history === null) throw new DashboardError('DASHBOARD_HISTORY_OFF');
    const stored = history.domains().includes(domain);
    if (!stored && (await source.live.get(domain)) === undefined) {
      throw new DashboardError('DASHBOARD_UNKNOWN_DOMAIN', JSON.stringify(domain));
    }
    return { domain, history, stored };
  }

  return app;
}

function serveAsset(request: FastifyRequest, reply: FastifyReply, asset: DashboardAsset, cacheControl: string) {
  reply.header('cache-control', cacheControl).header('etag', asset.etag);
  const match = request.headers['if-none-match'];
  if (match?.split(',').some((tag) => tag.trim().replace(/^W\//, '') === asset.etag)) {
    return reply.code(304).send();
  }
  return reply.type(asset.contentType).send(asset.body);
}

/** Every bucket of the range, zeros: a live domain history has no row for yet. */
function zeroSeries(range: Range, interval: Interval): TimeseriesPoint[] {
  const points: TimeseriesPoint[] = [];
  for (let t = floorTo(range.from, interval); t < range.to; t += INTERVAL_MS[interval]) {
    points.push({ t, page_views: 0, visitors: 0, requests: 0, bot_requests: 0, bytes_sent: 0 });
  }
  return points;
}

function zeroTotals(): Totals {
  return {
    page_views: 0,
    visitors: 0,
    requests: 0,
    bot_requests: 0,
    bytes_sent: 0,
    status: { s1xx: 0, s2xx: 0, s3xx: 0, s4xx: 0, s5xx: 0, other: 0 },
  };
}

/** Any error as the dashboard's: its own as is, a client error (4xx from Fastify) as 400, the rest 500. */
function toDashboardError(error: unknown): DashboardError {
  if (error instanceof DashboardError) return error;
  const status = (error as FastifyError).statusCode;
  if (status !== undefined && status >= 400 && status < 500) {
    return new DashboardError('DASHBOARD_BAD_REQUEST', (error as Error).message, { cause: error });
  }
  return new DashboardError('DASHBOARD_INTERNAL', undefined, { cause: error });
}

function send(reply: FastifyReply, err: DashboardError): void {
  reply.headers(SECURITY_HEADERS).headers(err.headers).code(err.statusCode);
  if (err.statusCode !== 304) reply.header('cache-control', API_CACHE_CONTROL);
  void reply.type('application/json; charset=utf-8').send({ error: err.message });
}
