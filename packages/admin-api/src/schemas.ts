/**
 * TypeBox schemas of every admin request and response (spec §2, §4, §7).
 * Fastify validates and serializes with them, and `openapi.ts` builds the
 * OpenAPI 3.1 document from them. Every field carries a description.
 */
import { type Static, Type } from 'typebox';

// The OpenAPI face of the model's parseDomain / parseHostPort rules (domain.ts, upstream.ts),
// which give the detailed message; underscores are valid in names (issue 15).
const DOMAIN_PATTERN =
  '^(\\*\\.)?[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?(\\.[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*$';
const UPSTREAM_PATTERN = '^(\\[[0-9A-Fa-f:.]+\\]|[A-Za-z0-9_.-]+):[0-9]{1,5}$';
const SOURCE_PATTERN = '^[\\x21-\\x7e]{1,128}$';

const domainField = (description: string) =>
  Type.String({ minLength: 1, maxLength: 253, pattern: DOMAIN_PATTERN, description });
const upstreamField = (description: string) =>
  Type.String({ minLength: 3, maxLength: 261, pattern: UPSTREAM_PATTERN, description });

/** The `{error}` envelope of every error response (spec §7). */
export const ErrorEnvelope = Type.Object(
  { error: Type.String({ description: 'Human-readable error message; stable prefix per error (see the README)' }) },
  { additionalProperties: false, description: 'Error envelope' },
);
export type ErrorEnvelope = Static<typeof ErrorEnvelope>;

/** Body of `GET /health`. */
export const HealthResponse = Type.Object(
  {
    status: Type.Literal('ok', { description: 'Always "ok" while the process serves' }),
    uptime_secs: Type.Integer({ minimum: 0, description: 'Whole seconds since the process started' }),
    storage: Type.Optional(
      Type.Object(
        {
          backend: Type.Literal('redis', { description: 'Where certificates, keys and locks live' }),
          reachable: Type.Boolean({
            description:
              'Whether Redis answers now; while false the node serves the certificates it holds and issuance waits',
          }),
        },
        {
          additionalProperties: false,
          description: 'Present only with the global option `storage redis` (absent: the cert dir)',
        },
      ),
    ),
  },
  { additionalProperties: false, description: 'Liveness answer' },
);
export type HealthResponse = Static<typeof HealthResponse>;

/** A route as the admin API shows it (spec §2.1). */
export const Route = Type.Object(
  {
    domain: Type.String({ description: 'Hostname pattern, lowercase; "*.<domain>" matches one extra label' }),
    upstream: Type.Union([Type.String(), Type.Null()], {
      description: 'Upstream socket address host:port; null for file-server-only routes',
    }),
    tls: Type.Boolean({ description: 'Whether the proxy connects to the upstream over TLS' }),
    rate_limit_rps: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()], {
      description: 'Per-IP request rate limit in requests per second; null when not set',
    }),
    under_attack: Type.Boolean({ description: 'Challenge mode active for this route' }),
    source: Type.Union([Type.String(), Type.Null()], {
      description:
        'Tag of the controller that owns the route (the source of POST /routes or PUT /routes/snapshot); null when none: Proxyfile routes and API writes without a source',
    }),
  },
  { additionalProperties: false, description: 'A route of the route table' },
);
export type Route = Static<typeof Route>;

/** Body of `GET /routes`. */
export const RouteList = Type.Array(Route, { description: 'Every route of the table, sorted by domain' });
export type RouteList = Static<typeof RouteList>;

/** Body of `POST /routes` (spec §2.2). */
export const RouteCreate = Type.Object(
  {
    domain: domainField('Hostname to route, case-insensitive (stored lowercase); a leading "*." is a wildcard'),
    upstream: upstreamField('Upstream socket address host:port ([v6]:port for IPv6), port 1-65535'),
    tls: Type.Boolean({ description: 'Connect to the upstream with TLS' }),
    source: Type.Optional(
      Type.Union([Type.String({ pattern: SOURCE_PATTERN }), Type.Null()], {
        description:
          'Controller identity tag for ownership tracking (1-128 visible ASCII characters); null or absent for none',
      }),
    ),
  },
  { additionalProperties: false, description: 'A route to add, or to replace the route with the same domain' },
);
export type RouteCreate = Static<typeof RouteCreate>;

/** Path parameters of `/routes/{domain}` and `/analytics/{domain}`. */
export const DomainParams = Type.Object(
  { domain: Type.String({ description: 'Hostname, case-insensitive, at most 253 bytes' }) },
  { description: 'Path parameters' },
);
export type DomainParams = Static<typeof DomainParams>;

/** Body of `DELETE /routes/{domain}`. */
export const RouteDeleted = Type.Object(
  { deleted: Type.String({ description: 'The domain whose route was deleted, lowercase' }) },
  { additionalProperties: false, description: 'Deletion result' },
);
export type RouteDeleted = Static<typeof RouteDeleted>;

/** One entry of a snapshot's desired route list. */
export const SnapshotRoute = Type.Object(
  {
    domain: domainField('Hostname, case-insensitive; a leading "*." is a wildcard'),
    upstream: upstreamField('Upstream socket address host:port'),
    tls: Type.Boolean({ description: 'Connect to the upstream with TLS' }),
  },
  { additionalProperties: false, description: 'A desired route of the source' },
);
export type SnapshotRoute = Static<typeof SnapshotRoute>;

/** Body of `PUT /routes/snapshot` (spec §2.3). */
export const SnapshotRequest = Type.Object(
  {
    source: Type.String({
      pattern: SOURCE_PATTERN,
      description: 'Controller identity that owns the desired route set (1-128 visible ASCII characters)',
    }),
    routes: Type.Optional(
      Type.Array(SnapshotRoute, {
        description: 'Complete desired list for source; omitted or empty removes every route owned by source',
      }),
    ),
  },
  { additionalProperties: false, description: 'The complete desired route set of one source' },
);
export type SnapshotRequest = Static<typeof SnapshotRequest>;

/** The exact `route_hash` definition (also in the README, checked against the route store by a test). */
const ROUTE_HASH_DESCRIPTION =
  'Lowercase hex SHA-256 of the UTF-8 text: source + "\\n", then, for each route of the request sorted by domain ' +
  '(ascending UTF-16 code-unit order), domain + " " + upstream + " " + ("true" or "false" for tls) + "\\n". ' +
  'domain is lowercased; upstream is as sent, lowercased (host:port or [ipv6]:port; the IPv6 address is not re-compressed). ' +
  'An empty or omitted list hashes source + "\\n" alone. The same source and set in any order or letter case give the same hash: ' +
  'a controller can compute it and store it as an applied-state marker.';

/** Body of a successful `PUT /routes/snapshot`. */
export const SnapshotResponse = Type.Object(
  {
    source: Type.String({ description: 'Echo of the source' }),
    applied: Type.Integer({ minimum: 0, description: 'Routes applied (written) by this snapshot' }),
    removed: Type.Integer({
      minimum: 0,
      description: 'Routes of the source removed because they were absent from the list',
    }),
    total_routes: Type.Integer({ minimum: 0, description: 'Routes in the table after the operation' }),
    route_hash: Type.String({
      pattern: '^[0-9a-f]{64}$',
      description: ROUTE_HASH_DESCRIPTION,
    }),
  },
  { additionalProperties: false, description: 'Snapshot reconcile result' },
);
export type SnapshotResponse = Static<typeof SnapshotResponse>;

const Percentiles = (metric: string) =>
  Type.Object(
    {
      p50: Type.Number({ description: `${metric}: 50th percentile (0.0 when no data)` }),
      p75: Type.Number({ description: `${metric}: 75th percentile (0.0 when no data)` }),
      p95: Type.Number({ description: `${metric}: 95th percentile (0.0 when no data)` }),
      p99: Type.Number({ description: `${metric}: 99th percentile (0.0 when no data)` }),
    },
    { additionalProperties: false, description: `${metric} percentiles since process start` },
  );

/** One per-domain analytics snapshot (spec §2.4). */
export const AnalyticsSnapshot = Type.Object(
  {
    domain: Type.String({ description: 'Hostname, lowercase' }),
    page_views_1m: Type.Integer({ minimum: 0, description: 'Requests in the last 1 minute' }),
    page_views_60m: Type.Integer({ minimum: 0, description: 'Requests in the last 60 minutes' }),
    unique_visitors: Type.Integer({ minimum: 0, description: 'Distinct client IPs seen since start' }),
    top_pages: Type.Array(
      Type.Object(
        {
          path: Type.String({ description: 'Request path' }),
          views: Type.Integer({ minimum: 0, description: 'Requests to the path' }),
        },
        { additionalProperties: false, description: 'A top path' },
      ),
      { maxItems: 10, description: 'Top paths by request count (up to 10)' },
    ),
    referrers: Type.Array(
      Type.Object(
        {
          domain: Type.String({ description: 'Referrer domain' }),
          count: Type.Integer({ minimum: 0, description: 'Requests referred by the domain' }),
        },
        { additionalProperties: false, description: 'A top referrer' },
      ),
      { maxItems: 10, description: 'Top referrer domains (up to 10)' },
    ),
    countries: Type.Array(
      Type.Object(
        {
          country: Type.String({ description: 'ISO 3166-1 alpha-2 country code' }),
          count: Type.Integer({ minimum: 0, description: 'Requests from the country' }),
        },
        { additionalProperties: false, description: 'A top country' },
      ),
      { maxItems: 10, description: 'Top client countries (up to 10)' },
    ),
    status_codes: Type.Object(
      {
        s1xx: Type.Integer({ minimum: 0, description: 'Responses with status 100-199' }),
        s2xx: Type.Integer({ minimum: 0, description: 'Responses with status 200-299' }),
        s3xx: Type.Integer({ minimum: 0, description: 'Responses with status 300-399' }),
        s4xx: Type.Integer({ minimum: 0, description: 'Responses with status 400-499' }),
        s5xx: Type.Integer({ minimum: 0, description: 'Responses with status 500-599' }),
        other: Type.Integer({ minimum: 0, description: 'Responses with any other status' }),
      },
      { additionalProperties: false, description: 'Response counts by status class since start' },
    ),
    bytes_sent: Type.Integer({ minimum: 0, description: 'Total response bytes sent since start' }),
    web_vitals: Type.Object(
      {
        lcp: Percentiles('Largest Contentful Paint in milliseconds'),
        cls: Percentiles('Cumulative Layout Shift (unitless score)'),
        inp: Percentiles('Interaction to Next Paint in milliseconds'),
      },
      { additionalProperties: false, description: 'Web Vitals percentile distributions' },
    ),
    timestamp: Type.String({ description: 'RFC 3339 time the snapshot was taken' }),
  },
  { additionalProperties: false, description: 'Analytics of one domain' },
);
export type AnalyticsSnapshot = Static<typeof AnalyticsSnapshot>;

/** Body of `GET /analytics`. */
export const AnalyticsList = Type.Array(AnalyticsSnapshot, {
  description: 'One snapshot per domain with traffic since start; [] when none',
});
export type AnalyticsList = Static<typeof AnalyticsList>;

const nullableTime = (description: string) =>
  Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description });

/** One managed certificate name (`GET /certificates`). */
export const Certificate = Type.Object(
  {
    name: Type.String({ description: 'The managed name: a DNS name, a "*." wildcard or an IP address' }),
    issuer: Type.Union([Type.String(), Type.Null()], {
      description:
        'Who issued the current certificate: the ACME directory URL of the CA, or "local" for the local CA; null when there is no certificate yet',
    }),
    not_after: nullableTime(
      'RFC 3339 time (UTC, milliseconds) the current certificate expires; null when there is no certificate yet',
    ),
    status: Type.Union(
      [Type.Literal('valid'), Type.Literal('renewing'), Type.Literal('failing'), Type.Literal('gave-up')],
      {
        description:
          'valid: a certificate that is not due for renewal; renewing: an attempt runs or is due now (also the first certificate being obtained); failing: the last attempt failed and a retry is scheduled; gave-up: failing for 30 days, no more attempts',
      },
    ),
    last_error: Type.Union([Type.String(), Type.Null()], {
      description:
        "The latest failure since the last success (the CA's problem document or the network/TLS error); null when none",
    }),
    next_attempt: nullableTime(
      'RFC 3339 time (UTC, milliseconds) the next attempt starts: the retry when failing, the renewal when valid, now when renewing; null once given up',
    ),
    challenge: Type.Union([Type.Literal('http-01'), Type.Literal('tls-alpn-01'), Type.Literal('dns-01'), Type.Null()], {
      description:
        'The ACME challenge type of the last order tried for this name; null before the first order and for the local CA',
    }),
    dns_step: Type.Union(
      [
        Type.Literal('zone-not-found'),
        Type.Literal('update-refused'),
        Type.Literal('not-propagated'),
        Type.Literal('provider-invalid'),
        Type.Null(),
      ],
      {
        description:
          "When the last failure was in DNS-01, the step that failed: zone-not-found (no SOA for the record's name), update-refused (the DNS provider refused the TXT record, e.g. a wrong TSIG key), not-propagated (the zone's authoritative servers did not answer it in time), provider-invalid (an unset credential variable or unreadable file); else null",
      },
    ),
  },
  { additionalProperties: false, description: 'A name whose certificate proxyd manages' },
);
export type Certificate = Static<typeof Certificate>;

/** Body of `GET /certificates`. */
export const CertificateList = Type.Array(Certificate, {
  description: 'Every managed name, sorted by name; [] when none (or automatic HTTPS is off)',
});
export type CertificateList = Static<typeof CertificateList>;

/** One problem of container discovery (`GET /discovery`). */
export const DiscoveryWarning = Type.Object(
  {
    container: Type.String({ description: 'The container: its name and short id, e.g. "web-1 (3f2a9c1e4b7d)"' }),
    label: Type.Union([Type.String(), Type.Null()], {
      description: 'The label at fault, e.g. "proxy.port"; null when no one label is (an ambiguous network)',
    }),
    reason: Type.String({ description: 'What is wrong; the container gets no route' }),
  },
  { additionalProperties: false, description: 'An invalid label or an ambiguous network' },
);
export type DiscoveryWarning = Static<typeof DiscoveryWarning>;

/** Body of `GET /discovery`. */
export const DiscoveryResponse = Type.Object(
  {
    enabled: Type.Boolean({
      description:
        'false when discovery is off (--no-docker, the Proxyfile\'s "docker off", or not run by this process)',
    }),
    socket: Type.Union([Type.String(), Type.Null()], {
      description:
        'The container runtime endpoint in use, e.g. "unix:///var/run/docker.sock" or "tcp://socket-proxy:2375"; null when none was found or discovery is off',
    }),
    connected: Type.Boolean({ description: 'Whether the runtime event stream is connected now' }),
    api_version: Type.Union([Type.String(), Type.Null()], {
      description: 'The runtime API version, e.g. "1.41"; null before the runtime first answered',
    }),
    last_error: Type.Union([Type.String(), Type.Null()], {
      description: 'The latest connection or runtime error since the last successful connection; null when none',
    }),
    containers: Type.Integer({
      minimum: 0,
      description: 'Discovered containers: running, with a proxy.domain label',
    }),
    warnings: Type.Array(DiscoveryWarning, {
      description: 'Invalid labels and ambiguous networks, sorted by container then label; [] when none',
    }),
  },
  { additionalProperties: false, description: 'The state of container discovery (Docker or Podman labels)' },
);
export type DiscoveryResponse = Static<typeof DiscoveryResponse>;

/** Path parameters of `PURGE /cache/{host}/{path}` as documented (Fastify sees the rest of the path as one wildcard). */
export const CachePurgeParams = Type.Object(
  {
    host: Type.String({ description: 'Host part of the cache key, case-insensitive' }),
    path: Type.String({
      description:
        'Path part of the cache key, with its query string (may contain "/" and "?"); a missing leading "/" is added. Sent as is (/cache/h/a/b?v=1) or percent-encoded as one parameter (/cache/h/a%2Fb%3Fv%3D1, what generated clients send): the key as sent is tried first, then the decoded one',
    }),
  },
  { description: 'Path parameters' },
);

/** Body of a successful `PURGE /cache/{host}/{path}`. */
export const CachePurged = Type.Object(
  { purged: Type.Literal(true, { description: 'Always true: the entry was invalidated' }) },
  { additionalProperties: false, description: 'Purge result' },
);
export type CachePurged = Static<typeof CachePurged>;

/** Body of `PURGE /cache/{host}/{path}` when the entry is not cached (not the error envelope). */
export const CacheNotFound = Type.Object(
  {
    purged: Type.Literal(false, { description: 'Always false: nothing was invalidated' }),
    reason: Type.Literal('not found', { description: 'Always "not found"' }),
  },
  { additionalProperties: false, description: 'The entry was not in the cache' },
);
export type CacheNotFound = Static<typeof CacheNotFound>;

/** Body of a successful `POST /reload`. */
export const ReloadResponse = Type.Object(
  { message: Type.String({ description: 'What the reload did, e.g. the number of Proxyfile routes now active' }) },
  { additionalProperties: false, description: 'Reload result' },
);
export type ReloadResponse = Static<typeof ReloadResponse>;

/** Body of a 429 from `POST /reload`: the cooldown (with `retry_after`) or the global limit. */
export const ReloadTooSoon = Type.Object(
  {
    error: Type.String({ description: '"reload too soon" (cooldown) or "rate limit exceeded" (global limit)' }),
    retry_after: Type.Optional(
      Type.Integer({ minimum: 1, description: 'Seconds until a reload is accepted; equals the Retry-After header' }),
    ),
  },
  { additionalProperties: false, description: 'Reload refused for now' },
);
export type ReloadTooSoon = Static<typeof ReloadTooSoon>;

/** A plain-text body (Prometheus exposition, reload parse error). */
export const PlainText = Type.String({ description: 'Plain text' });

/** Body of `GET /openapi.json`: an OpenAPI 3.1 document. */
export const OpenApiDocumentSchema = Type.Object(
  {
    openapi: Type.String({ description: 'OpenAPI version, "3.1.0"' }),
    info: Type.Object({}, { additionalProperties: true, description: 'API title and version' }),
    paths: Type.Object({}, { additionalProperties: true, description: 'Every endpoint' }),
    components: Type.Object({}, { additionalProperties: true, description: 'Shared schemas and security schemes' }),
  },
  { additionalProperties: true, description: 'The OpenAPI 3.1 document of this API' },
);
