import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyRequest, LogController } from 'fastify';
import fastifyMetricsModule from 'fastify-metrics';
import promClient, { type Registry } from 'prom-client';
import { createAllowTable } from './allow.js';
import { createBearerCheck } from './auth.js';
import { type AuthEvent, type AuthThrottleOptions, clientKey, createAuthThrottle } from './auth-throttle.js';
import { writeClientError } from './client-error.js';
import { type AdminConnectionLimits, limitConnections, resolveConnectionLimits } from './connection-limits.js';
import type { AdminContext, Endpoint } from './endpoint.js';
import { ENDPOINTS } from './endpoints/index.js';
import { EMPTY_DOMAIN_PATH } from './endpoints/routes-delete.js';
import { adminErrorHandler, CORS_HEADER, sendAdminError, toAdminError } from './error-handler.js';
import { AdminError } from './errors.js';
import { BODY_LIMIT_BYTES, installJsonBodyParser } from './json-body.js';
import { lazyCompilers, loadSchemaCompilers, schemaCompilersLoaded } from './lazy-compilers.js';
import { openApiDocument } from './openapi.js';
import type {
  AnalyticsPort,
  AuditEvent,
  CachePort,
  CertificatesPort,
  DiscoveryPort,
  MetricsPort,
  ReloadPort,
  RouteStorePort,
  StatsPort,
  StoragePort,
} from './ports.js';
import { createRateLimiter, DEFAULT_RATE_LIMIT } from './rate-limit.js';
import { writeConnectRefused, writeExpectationFailed } from './server-events.js';
import { type AdminTimeouts, applyAdminTimeouts, resolveAdminTimeouts } from './timeouts.js';
import { type AdminTransport, isUnixConnection } from './transport.js';

// fastify-metrics is CommonJS with `exports.default`: Node's ESM loader hands over the exports object.
const fastifyMetrics =
  fastifyMetricsModule.default ?? (fastifyMetricsModule as unknown as typeof fastifyMetricsModule.default);

/** Name of the admin app's own request-duration histogram (fastify-metrics). */
export const ADMIN_HISTOGRAM = 'proxyd_admin_http_request_duration_seconds';

/** Log target of audit events (spec §6). */
export const AUDIT_TARGET = 'proxy::admin::audit';

/** What the admin app needs from the process that hosts it. */
export interface AdminAppOptions {
  /** The route store (required). */
  routes: RouteStorePort;
  /** Analytics reader; absent → `GET /analytics` is `[]` and every domain 404. */
  analytics?: AnalyticsPort;
  /** The data plane's cache; absent or `enabled: false` → PURGE answers 501. */
  cache?: CachePort;
  /** The config watcher; absent → POST /reload answers 501. */
  reload?: ReloadPort;
  /** Metrics source; absent (`--no-metrics`) → GET /metrics answers 404. */
  metrics?: MetricsPort;
  /** Managed certificates (automatic HTTPS); absent (automatic HTTPS off) → GET /certificates answers `[]`. */
  certificates?: CertificatesPort;
  /** The shared storage (global option `storage`); absent (the cert dir) → `GET /health` has no `storage` field. */
  storage?: StoragePort;
  /** Container discovery (the docker source); absent → GET /discovery answers `enabled: false`. */
  discovery?: DiscoveryPort;
  /** Analytics history; absent (history off) → every `/stats` request answers 501. */
  stats?: StatsPort;
  /** prom-client registry that receives the admin app's own request metrics (fastify-metrics); render it from `metrics`. */
  metricsRegistry?: Registry;
  /** Audit sink; default: INFO log line with target `proxy::admin::audit` on `logger`. */
  audit?: (event: AuditEvent) => void;
  /**
   * Failed-authentication sink (never given the token); default: WARN log
   * line with target `proxy::admin::audit` on `logger`. Called for a client's
   * first wrong token of a window and for its lockout, at most 100 times a
   * minute in all.
   */
  authEvents?: (event: AuthEvent) => void;
  /**
   * Per-client throttle of wrong tokens over TCP (default: 10 in 60 s lock
   * the client out for 60 s, 10 000 clients tracked; see `auth-throttle.ts`).
   * Without a `token` nothing is counted: every authenticated TCP request is
   * 401, never 429 (spec §5 rule 2).
   */
  authThrottle?: Partial<AuthThrottleOptions>;
  /** Bearer token (`PROXY_ADMIN_TOKEN`); undefined or empty → every authenticated TCP request is 401. */
  token: string | undefined;
  /**
   * `tcp`: every request needs the token; `unix`: none does; `auto` (default):
   * decided per connection — no token needed on a connection accepted by a
   * Unix-socket server, so one app can serve both listeners.
   */
  transport?: AdminTransport;
  /** Clock in ms since the epoch (default `Date.now`); drives uptime, rate limit and reload cooldown. */
  clock?: () => number;
  /** Process start, ms since the epoch (default: the clock at creation). */
  startedAt?: number;
  /** pino-compatible logger (default: none). */
  logger?: FastifyBaseLogger;
  /** Global limit on authenticated (TCP) requests (default 60 per 60 000 ms, spec §8). */
  rateLimit?: { max: number; windowMs: number };
  /**
   * Limit on Unix-socket requests, a window of their own so that no TCP
   * client can use up the operator's (default 60 per 60 000 ms, as `rateLimit`).
   */
  socketRateLimit?: { max: number; windowMs: number };
  /**
   * Connection timeouts of the app's own server, in ms (default
   * `DEFAULT_ADMIN_TIMEOUTS`: headers 10 000, whole request 30 000, idle
   * 10 000, keep-alive 30 000, checked every 1 000). Give the same to
   * `attachAdminServerHandlers` for another server serving the app.
   */
  timeouts?: Partial<AdminTimeouts>;
  /**
   * Connections the app's own server holds (default
   * `DEFAULT_ADMIN_CONNECTION_LIMITS`: 64 per client address, 1 024 in all);
   * one over a limit is closed as it is accepted. Not applied to other
   * servers serving the app (the Unix socket is the operator's).
   */
  connectionLimits?: Partial<AdminConnectionLimits>;
}

/** The admin Fastify app. */
export type AdminApp = FastifyInstance;

function fastifySchema(endpoint: Endpoint): Record<string, unknown> {
  const response: Record<number, unknown> = {};
  for (const [status, r] of Object.entries(endpoint.responses)) {
    if (r.schema !== undefined && r.contentType === undefined) response[Number(status)] = r.schema;
  }
  const schema: Record<string, unknown> = { response };
  if (endpoint.params !== undefined) schema.params = endpoint.params;
  if (endpoint.body !== undefined) schema.body = endpoint.body;
  return schema;
}

/**
 * Builds the admin Fastify app; the caller listens (TCP with `app.listen`,
 * and the Unix socket with `http.createServer(app.routing)` after
 * `await app.ready()`, or a second `listen({ path })` app).
 */
export function createAdminApp(options: AdminAppOptions): AdminApp {
  const now = options.clock ?? Date.now;
  const transport = options.transport ?? 'auto';
  const checkToken = createBearerCheck(options.token);
  const tokenSet = options.token !== undefined && options.token !== '';
  const throttle = createAuthThrottle(options.authThrottle);
  const limit = options.rateLimit ?? DEFAULT_RATE_LIMIT;
  const limiter = createRateLimiter(limit.max, limit.windowMs);
  const socketLimit = options.socketRateLimit ?? DEFAULT_RATE_LIMIT;
  const socketLimiter = createRateLimiter(socketLimit.max, socketLimit.windowMs);
  const allow = createAllowTable(ENDPOINTS);
  const timeouts = resolveAdminTimeouts(options.timeouts);
  const connectionLimits = resolveConnectionLimits(options.connectionLimits);

  const app = Fastify({
    ...(options.logger === undefined ? { logger: false } : { loggerInstance: options.logger }),
    logController: new LogController({ disableRequestLogging: true }),
    // HEAD on every GET route: the GET answer without a body (RFC 9110 §9.3.2), auth and limits included.
    exposeHeadRoutes: true,
    bodyLimit: BODY_LIMIT_BYTES,
    routerOptions: { maxParamLength: 65_536 },
    // validateSchema off: the schemas are fixed, and schemas.test.ts checks each against ajv's meta-schema; a daemon
    // would otherwise compile that meta-schema (~25 ms of its thread) before its first validation (issue 30).
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, allErrors: false, validateSchema: false } },
    // Each route's validator and serializer compiled at its first use (issue 32).
    schemaController: { compilersFactory: lazyCompilers() },
    frameworkErrors: (error, request, reply) => {
      sendAdminError(reply, toAdminError(error, request));
    },
    clientErrorHandler: writeClientError,
  }).withTypeProvider<TypeBoxTypeProvider>();
  // PURGE /cache/{host}/{path} (spec §4); DELETE on the same path is its alias for generated clients.
  app.addHttpMethod('PURGE');
  // The first hook: the schema compilers load with the first request, before anything validates or answers.
  app.addHook('onRequest', (_request, _reply, done) => {
    if (schemaCompilersLoaded()) done();
    else loadSchemaCompilers().then(() => done(), done);
  });
  // Requests Node answers before the app sees them; clientError is Fastify's clientErrorHandler above.
  app.server.on('checkExpectation', writeExpectationFailed);
  app.server.on('connect', writeConnectRefused);
  // Fastify's defaults time nothing out but keep-alive (72 s); Node's check headers after 60 s, every 30 s (issue 20).
  applyAdminTimeouts(app.server, timeouts);
  // A refusal is logged at most once a minute, with the count since the last line: a flood must not flood the log.
  let refused = 0;
  let lastRefusalLog = Number.NEGATIVE_INFINITY;
  limitConnections(app.server, connectionLimits, ({ limit, client }) => {
    refused++;
    if (now() - lastRefusalLog < 60_000) return;
    lastRefusalLog = now();
    app.log.warn(
      { limit, client, refused, per_client: connectionLimits.perClient, total: connectionLimits.total },
      `admin connection from ${client} refused: over the ${limit === 'total' ? 'total' : 'per-client'} connection limit (${refused} refused since the last such line)`,
    );
    refused = 0;
  });

  const audit =
    options.audit ??
    ((event: AuditEvent) =>
      app.log.info({ target: AUDIT_TARGET, ...event }, `audit ${event.action} ${event.resource}`));
  const authEvents =
    options.authEvents ??
    ((event: AuthEvent) =>
      app.log.warn({ target: AUDIT_TARGET, ...event }, `${event.action} ${event.client} (${event.failures} failed)`));
  const ctx: AdminContext = {
    routes: options.routes,
    analytics: options.analytics,
    cache: options.cache,
    reload: options.reload,
    metrics: options.metrics,
    certificates: options.certificates,
    storage: options.storage,
    discovery: options.discovery,
    stats: options.stats,
    now,
    startedAt: options.startedAt ?? now(),
    audit: (action, resource) => audit({ action, principal: 'admin', resource }),
    openApiDocument: (servers) => openApiDocument({ servers }),
  };

  if (options.metricsRegistry !== undefined) {
    const registry = options.metricsRegistry;
    // One admin app per registry: a previous app's histogram (e.g. before a restart in the same process) is replaced.
    registry.removeSingleMetric(ADMIN_HISTOGRAM);
    let mine: unknown;
    app.addHook('onReady', async () => {
      mine = registry.getSingleMetric(ADMIN_HISTOGRAM);
    });
    app.addHook('onClose', async () => {
      if (mine !== undefined && registry.getSingleMetric(ADMIN_HISTOGRAM) === mine)
        registry.removeSingleMetric(ADMIN_HISTOGRAM);
    });
    app.register(fastifyMetrics, {
      promClient,
      endpoint: null,
      defaultMetrics: { enabled: false },
      routeMetrics: {
        enabled: { histogram: true, summary: false },
        registeredRoutesOnly: true,
        groupStatusCodes: true,
        overrides: {
          histogram: {
            name: ADMIN_HISTOGRAM,
            help: 'Admin API request duration in seconds, by method, route and status class',
            registers: [registry],
          },
          summary: { name: 'proxyd_admin_http_request_summary_seconds', registers: [] },
        },
      },
    });
  }

  app.after((err) => {
    if (err) throw err;
    installJsonBodyParser(app);
    app.setErrorHandler(adminErrorHandler);

    app.addHook('onSend', async (request, reply, payload) => {
      reply.header(CORS_HEADER[0], CORS_HEADER[1]);
      // An answer before the body is in (401, 413, 429…): Node would read and discard the rest to keep the
      // connection, so a client could hold it by trickling a body nobody reads. Close it after the answer
      // (issue 20). Node marks a body that came with the headers complete only a turn later: wait that turn.
      // (`inject()` requests have no `complete`.)
      if (request.raw.complete === false) {
        await new Promise<void>((resolve) => setImmediate(resolve));
        if (!request.raw.complete) reply.header('connection', 'close');
      }
      return payload;
    });

    app.addHook('onRequest', async (request: FastifyRequest) => {
      if (request.method === 'OPTIONS') return;
      if ((request.method === 'GET' || request.method === 'HEAD') && request.routeOptions.url === '/health') return;
      const trusted = transport === 'unix' || (transport === 'auto' && isUnixConnection(request.raw.socket));
      if (!trusted && !tokenSet) {
        // No token configured: there is nothing to guess, so no failure counts and no client is locked out (spec §5 rule 2).
        throw new AdminError('ADMIN_UNAUTHORIZED');
      }
      if (!trusted) {
        // A locked-out client is refused before its token is even compared: a right guess must not tell (issue 20).
        const client = clientKey(request.ip);
        const locked = throttle.lockedFor(client, now());
        if (locked > 0) {
          throw new AdminError('ADMIN_AUTH_THROTTLED', undefined, { headers: { 'retry-after': String(locked) } });
        }
        const header = request.headers.authorization;
        if (!checkToken(header)) {
          // Only presented credentials count: a request without any is no guess.
          if (header !== undefined) {
            const event = throttle.fail(client, now());
            if (event !== undefined) authEvents(event);
          }
          throw new AdminError('ADMIN_UNAUTHORIZED');
        }
        throttle.succeed(client);
      }
      // The socket's window is its own: TCP clients cannot lock the operator out (issue 20).
      const wait = (trusted ? socketLimiter : limiter).take(now());
      if (wait > 0) throw new AdminError('ADMIN_RATE_LIMITED', undefined, { headers: { 'retry-after': String(wait) } });
    });

    app.setNotFoundHandler(async (request: FastifyRequest) => {
      const url = request.raw.url ?? '/';
      const query = url.indexOf('?');
      const path = query < 0 ? url : url.slice(0, query);
      const emptyDomain = EMPTY_DOMAIN_PATH.test(path);
      if (emptyDomain && request.method === 'DELETE') throw new AdminError('ADMIN_MISSING_DOMAIN');
      const methods = allow.methodsFor(emptyDomain ? '/routes/' : path);
      if (request.method === 'OPTIONS' || methods.length > 0) {
        throw new AdminError('ADMIN_METHOD_NOT_ALLOWED', undefined, { headers: { allow: methods.join(', ') } });
      }
      throw new AdminError('ADMIN_NOT_FOUND');
    });

    for (const endpoint of ENDPOINTS) {
      app.route({
        method: endpoint.method,
        url: endpoint.url,
        schema: fastifySchema(endpoint),
        handler: endpoint.handler(ctx),
      });
    }
  });

  return app as unknown as AdminApp;
}
