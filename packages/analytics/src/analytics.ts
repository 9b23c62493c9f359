import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Transform } from 'node:stream';
import { REQUEST_EVENTS_KEY } from '@proxyd/model/rules';
import type { DataPlaneHooks, RequestContext, RequestRecord } from '@proxyd/proxy-core';
import type { AnalyticsState } from './analytics-state.js';
import {
  answer,
  BEACON_RATE_PER_SECOND,
  BeaconRateLimiter,
  COLLECT_PATH,
  MAX_BEACON_BYTES,
  parseBeacon,
  readBody,
} from './beacon.js';
import {
  AnalyticsCollector,
  DEFAULT_CYCLE_MS,
  DEFAULT_MAX_DOMAINS,
  type DomainCapReached,
  RESERVED_PREFIX,
} from './collector.js';
import { AnalyticsError } from './errors.js';
import { openCountryLookup } from './geoip.js';
import {
  createInjector,
  DEFAULT_INJECT_LIMITS,
  editInjectedHeaders,
  editRewrittenHeaders,
  type InjectLimits,
  injectableCoding,
  injectWhole,
  sharesInjectedHeaders,
} from './inject.js';
import { sameHostPath } from './page-view.js';
import type { MinuteRollup } from './rollup.js';
import { loadScriptAsset, SCRIPT_PATH, type ScriptAsset } from './script-asset.js';
import type { AnalyticsSnapshot } from './snapshot.js';
import { BeaconTokens } from './token.js';

/**
 * The request-record events of a beacon, as proxy-core's `RequestEvent`
 * bits (`BeaconAccepted`, `BeaconRejected`), marked under the model's
 * `REQUEST_EVENTS_KEY`: this package uses proxy-core's types only, so it
 * spells the bits here, and `analytics.test.ts` pins them to proxy-core's.
 */
export const BEACON_ACCEPTED = 64;
export const BEACON_REJECTED = 128;

/** proxy-core's `markRequest`: adds an event bit to the record of the request `res` answers. */
function markBeacon(res: ServerResponse, event: number): void {
  const marked = res as ServerResponse & { [REQUEST_EVENTS_KEY]?: number };
  marked[REQUEST_EVENTS_KEY] = (marked[REQUEST_EVENTS_KEY] ?? 0) | event;
}

/** Options of {@link createAnalytics}. */
export interface AnalyticsOptions {
  /** MaxMind-format country database; undefined or null: the embedded DB-IP Lite; false: no countries. */
  geoipDb?: string | null | false;
  /** Aggregation cycle (Web Vitals flush), ms; default 60,000. */
  cycleMs?: number;
  /** Domains tracked at most; default 1,000. */
  maxDomains?: number;
  /** Beacons per client IP per second; default 10. */
  beaconRatePerSecond?: number;
  /** Injection bounds; default {@link DEFAULT_INJECT_LIMITS}. */
  injectLimits?: InjectLimits;
  /** Clock, ms since the epoch (tests). */
  now?: () => number;
  /** Token HMAC key (default: random per process; the daemon passes the one kept in its state dir). */
  secret?: Buffer;
  /** Called once, on the first request dropped because `maxDomains` domains are tracked (the daemon logs it). */
  onDomainCap?: (info: DomainCapReached) => void;
  /** The browser script (default: the built `dist/browser/a.js`). */
  script?: ScriptAsset;
  /** Count per-minute rollups for `drainRollups` (default true; the daemon turns them off without history). */
  rollups?: boolean;
}

/** Analytics as the daemon uses it: data-plane hooks, an admin reader and a lifecycle. */
export interface Analytics {
  /** The data-plane hooks: `onRequest`, `intercept` (`/_proxyd/*`), `transformResponse` (injection). */
  readonly hooks: DataPlaneHooks;
  /** The collectors (tests, bench). */
  readonly collector: AnalyticsCollector;
  /** Requests not counted because `maxDomains` domains were tracked (a counter since start). */
  droppedRequests(): number;
  /** Every domain's snapshot (structurally the admin API's `AnalyticsPort.list`; never flushes). */
  list(): AnalyticsSnapshot[];
  /** One domain's snapshot (structurally `AnalyticsPort.get`; never flushes). */
  get(domain: string): AnalyticsSnapshot | undefined;
  /**
   * A plain-data, structured-clone-safe copy of every domain's collectors (or
   * only `domain`'s, for a one-domain read) for `mergeAnalyticsStates` in
   * another process. Counts the queued records first, like a read; never
   * flushes and changes no collector.
   */
  exportState(domain?: string): AnalyticsState;
  /**
   * Every complete minute's rollup (minute start + 60 s ≤ `now`, default the
   * clock) of every domain, forgotten here once returned; the current minute
   * stays until it is complete. Counts the queued records first.
   */
  drainRollups(now?: number): MinuteRollup[];
  /** Sets the visitor-hash salt (≥ 8 bytes; the control plane's daily salt; random per process until set). */
  setVisitorSalt(salt: Buffer): void;
  /** Runs the aggregation cycle now. */
  flush(): void;
  /** Stops the cycle timer. */
  close(): Promise<void>;
}

/** Request records counted together at most (see `drain`). */
const BATCH = 64;

const SCRIPT_HEADERS_BASE = {
  'content-type': 'text/javascript; charset=utf-8',
  'cache-control': 'public, max-age=31536000, immutable',
  'x-content-type-options': 'nosniff',
};

/** Builds the collectors, opens the GeoIP database, loads the script and starts the aggregation cycle. */
export async function createAnalytics(options: AnalyticsOptions = {}): Promise<Analytics> {
  const cycleMs = options.cycleMs ?? DEFAULT_CYCLE_MS;
  if (!Number.isFinite(cycleMs) || cycleMs < 10) throw new AnalyticsError('ANALYTICS_BAD_OPTION', `cycleMs ${cycleMs}`);
  const now = options.now ?? Date.now;
  const script = options.script ?? loadScriptAsset();
  const country = options.geoipDb === false ? undefined : await openCountryLookup(options.geoipDb ?? undefined);
  const collector = new AnalyticsCollector({
    now,
    maxDomains: options.maxDomains ?? DEFAULT_MAX_DOMAINS,
    ...(country ? { country } : {}),
    ...(options.onDomainCap ? { onDomainCap: options.onDomainCap } : {}),
    rollups: options.rollups !== false,
  });
  const tokens = new BeaconTokens(options.secret);
  const limiter = new BeaconRateLimiter(options.beaconRatePerSecond ?? BEACON_RATE_PER_SECOND);
  const limits = options.injectLimits ?? DEFAULT_INJECT_LIMITS;
  const scriptHeaders = { ...SCRIPT_HEADERS_BASE, etag: script.etag, 'content-length': String(script.body.length) };
  const tagPrefix = `<script src="${SCRIPT_PATH}?v=${script.version}" data-t="`;
  // The tag per host, rebuilt when the token changes (once an hour); bounded like the token cache.
  // The src stays an absolute path: the script is same-origin (a cross-origin <base href> would move it, see README).
  const tags = new Map<string, { token: string; tag: Buffer }>();
  const tagFor = (host: string): Buffer => {
    const token = tokens.issue(host, now());
    const cached = tags.get(host);
    if (cached !== undefined && cached.token === token) return cached.tag;
    const tag = Buffer.from(`${tagPrefix}${token}" defer></script>`);
    if (tags.size >= 10_000) tags.clear();
    tags.set(host, { token, tag });
    return tag;
  };
  // Records are counted in batches: up to BATCH queued, counted when the queue
  // is full or on the next turn of the event loop, and before any read. The
  // collectors' memory stays in cache for a batch instead of competing with
  // the proxy's for every request.
  const queue: RequestRecord[] = [];
  let drainScheduled = false;
  const drain = (): void => {
    drainScheduled = false;
    for (let i = 0; i < queue.length; i++) collector.record(queue[i] as RequestRecord);
    queue.length = 0;
  };
  const timer = setInterval(() => collector.flush(), cycleMs);
  timer.unref();

  function serveScript(req: IncomingMessage, res: ServerResponse): void {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      answer(res, 405, 'method not allowed', { allow: 'GET, HEAD' });
      return;
    }
    if (req.headers['if-none-match'] === script.etag) {
      res.writeHead(304, { etag: script.etag, 'cache-control': SCRIPT_HEADERS_BASE['cache-control'] }).end();
      return;
    }
    res.writeHead(200, scriptHeaders);
    res.end(req.method === 'HEAD' ? undefined : script.body);
  }

  /** A beacon refused: the answer, and the request marked for `proxyd_analytics_beacons_total`. */
  function refuse(res: ServerResponse, status: number, message: string, headers?: Record<string, string>): void {
    markBeacon(res, BEACON_REJECTED);
    answer(res, status, message, headers);
  }

  async function collect(req: IncomingMessage, res: ServerResponse, ctx: RequestContext): Promise<void> {
    if (req.method !== 'POST') {
      refuse(res, 405, 'method not allowed', { allow: 'POST' });
      return;
    }
    if (!limiter.allow(ctx.clientIp, now())) {
      refuse(res, 429, 'too many requests', { 'retry-after': '1', connection: 'close' });
      return;
    }
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > MAX_BEACON_BYTES) {
      refuse(res, 413, 'payload too large', { connection: 'close' });
      return;
    }
    const text = await readBody(req, MAX_BEACON_BYTES);
    if (text === null) {
      if (!res.headersSent) refuse(res, 413, 'payload too large', { connection: 'close' });
      return;
    }
    const beacon = parseBeacon(text);
    if (beacon === null) {
      refuse(res, 400, 'invalid beacon');
      return;
    }
    if (!tokens.verify(ctx.host, beacon.token, now())) {
      refuse(res, 403, 'forbidden');
      return;
    }
    // The page: the beacon's own path, else (older scripts) the Referer's when it is this host.
    const page = beacon.path ?? sameHostPath(req.headers.referer, ctx.host);
    for (const o of beacon.observations) collector.observe(ctx.host, o.metric, o.value, page);
    markBeacon(res, BEACON_ACCEPTED);
    res.writeHead(204, { 'cache-control': 'no-store' }).end();
  }

  const hooks: DataPlaneHooks = {
    onRequest(record: RequestRecord) {
      queue.push(record);
      if (queue.length >= BATCH) drain();
      else if (!drainScheduled) {
        drainScheduled = true;
        setImmediate(drain);
      }
    },
    interceptPrefix: RESERVED_PREFIX,
    intercept(req: IncomingMessage, res: ServerResponse, ctx: RequestContext) {
      if (!ctx.path.startsWith(RESERVED_PREFIX) || ctx.site.analytics === false) return false;
      if (ctx.path === SCRIPT_PATH) {
        serveScript(req, res);
        return true;
      }
      if (ctx.path === COLLECT_PATH) {
        collect(req, res, ctx).catch(() => {
          if (!res.headersSent) answer(res, 500, 'internal error');
        });
        return true;
      }
      return false;
    },
    rewriteBody(
      ctx: RequestContext,
      req: IncomingMessage,
      status: number,
      headers: OutgoingHttpHeaders,
    ): ((body: Buffer) => Buffer) | null {
      // A small identity page: one synchronous search and one copy, no stream.
      if (ctx.site.analytics === false || ctx.path.startsWith(RESERVED_PREFIX)) return null;
      if (injectableCoding(req, status, headers) !== 'identity') return null;
      editRewrittenHeaders(headers);
      const tag = tagFor(ctx.host);
      return (body) => injectWhole(body, tag);
    },
    transformResponse(
      ctx: RequestContext,
      req: IncomingMessage,
      status: number,
      headers: OutgoingHttpHeaders,
    ): Transform | null {
      if (ctx.site.analytics === false || ctx.path.startsWith(RESERVED_PREFIX)) return null;
      const coding = injectableCoding(req, status, headers);
      if (coding === null) {
        // HEAD and 304 carry the headers the injected GET 200 would have.
        if (sharesInjectedHeaders(req, status, headers)) editInjectedHeaders(headers);
        return null;
      }
      editInjectedHeaders(headers);
      return createInjector(tagFor(ctx.host), coding, limits);
    },
  };

  return {
    hooks,
    collector,
    droppedRequests: () => {
      drain();
      return collector.droppedRequests;
    },
    list: () => {
      drain();
      return collector.list();
    },
    get: (domain) => {
      drain();
      return collector.get(domain);
    },
    exportState: (domain) => {
      drain();
      return collector.exportState(domain);
    },
    drainRollups: (at) => {
      drain();
      return collector.drainRollups(at ?? now());
    },
    setVisitorSalt: (salt) => collector.setVisitorSalt(salt),
    flush: () => collector.flush(),
    async close() {
      clearInterval(timer);
    },
  };
}
