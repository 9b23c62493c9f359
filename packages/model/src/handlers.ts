/** The terminal handlers of a block, and the upstream pool `reverse_proxy` forwards to. */
import { type Static, Type } from 'typebox';
import { UpstreamAddress } from './addresses.js';
import { MatcherName } from './matchers.js';

/** Load-balancing policies of a pool; `round_robin` is the default. */
export const LbPolicy = Type.Union(
  [
    Type.Literal('round_robin'),
    Type.Literal('least_conn'),
    Type.Literal('random'),
    Type.Literal('ip_hash'),
    Type.Literal('first'),
    Type.Literal('weighted_round_robin'),
    Type.Literal('cookie'),
  ],
  { description: 'How a pool picks a healthy member' },
);
export type LbPolicy = Static<typeof LbPolicy>;

/**
 * One header operation. `set` replaces (or adds) the header, `add` appends a
 * value, `delete` removes it (including a default security header).
 */
export const HeaderOp = Type.Object(
  {
    op: Type.Union([Type.Literal('set'), Type.Literal('add'), Type.Literal('delete')]),
    name: Type.String({ minLength: 1, description: 'Header name as written' }),
    value: Type.Optional(Type.String({ description: 'Header value; absent for delete' })),
    matcher: Type.Optional(MatcherName),
  },
  { additionalProperties: false },
);
export type HeaderOp = Static<typeof HeaderOp>;

/** How the proxy connects to upstreams over TLS. */
export const UpstreamTls = Type.Object(
  {
    enabled: Type.Boolean({ description: 'Connect to upstreams with TLS' }),
    insecure_skip_verify: Type.Boolean({
      description: 'Skip certificate verification (default false: verified)',
    }),
    server_name: Type.Union([Type.String(), Type.Null()], {
      description: 'SNI and verification name; null means the upstream host',
    }),
    ca_file: Type.Union([Type.String(), Type.Null()], {
      description: 'PEM file of extra trusted CAs; null means the system store',
    }),
  },
  { additionalProperties: false },
);
export type UpstreamTls = Static<typeof UpstreamTls>;

/** Active and passive health checking of a pool. */
export const HealthCheck = Type.Object(
  {
    uri: Type.Union([Type.String(), Type.Null()], {
      description: 'Path probed by active checks; null disables active checks',
    }),
    interval_ms: Type.Integer({ minimum: 1, description: 'Time between active probes, ms (default 10000)' }),
    timeout_ms: Type.Integer({ minimum: 1, description: 'Probe timeout, ms (default 5000)' }),
    fail_duration_ms: Type.Integer({
      minimum: 0,
      description:
        'How long a member stays out after a connection failure, ms (default 10000; 0 disables passive checks)',
    }),
  },
  { additionalProperties: false },
);
export type HealthCheck = Static<typeof HealthCheck>;

/**
 * `reverse_proxy`: forward to a pool of upstreams. The Proxyfile requires
 * at least one; a live source may publish an empty pool (every container of
 * a label domain unhealthy), which answers 503 `no healthy upstream`.
 */
export const ReverseProxyHandler = Type.Object(
  {
    kind: Type.Literal('reverse_proxy'),
    upstreams: Type.Array(UpstreamAddress, {
      description: 'The pool, round-robin; empty only from a live source (503 until a member is back)',
    }),
    lb_policy: LbPolicy,
    health: HealthCheck,
    header_up: Type.Array(HeaderOp, { description: 'Request header operations applied before forwarding' }),
    tls: UpstreamTls,
    header_down: Type.Optional(
      Type.Array(HeaderOp, {
        description: "Operations on the upstream's response headers, before the block's `header` ops",
      }),
    ),
    flush_interval_ms: Type.Optional(
      Type.Integer({
        minimum: -1,
        description:
          "Caddy's flush_interval: proxyd writes every upstream chunk as it arrives whatever the value; -1 also makes every response of the handler a stream (no read timeout once its head arrived)",
      }),
    ),
    read_timeout_ms: Type.Optional(
      Type.Integer({
        minimum: 0,
        description:
          'Longest upstream silence while waiting for or reading a response, ms (absent: the daemon default, 60000; 0: none); streams are exempt once their head arrived',
      }),
    ),
    versions: Type.Optional(
      Type.Array(Type.Union([Type.Literal('1.1'), Type.Literal('2'), Type.Literal('h2c')]), {
        minItems: 1,
        uniqueItems: true,
        description:
          "HTTP versions spoken to the upstreams (`transport http { versions }`, `h2c://`): with 2 or h2c, HTTP/2 (h2c: cleartext, prior knowledge; 2: over the handler's TLS); absent: HTTP/1.1",
      }),
    ),
    lb_weights: Type.Optional(
      Type.Array(Type.Integer({ minimum: 0, maximum: 1_000_000 }), {
        description: 'weighted_round_robin: one weight per upstream, in order (0: never picked)',
      }),
    ),
    lb_cookie: Type.Optional(
      Type.Object(
        {
          name: Type.String({ pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$", description: 'Cookie name (default lb)' }),
          secret: Type.Union([Type.String(), Type.Null()], {
            description: 'HMAC key of the cookie value (null: a plain hash of the upstream)',
          }),
        },
        { additionalProperties: false },
      ),
    ),
    lb_retries: Type.Optional(
      Type.Integer({
        minimum: 0,
        description: 'Other upstreams tried after a failed connection, for idempotent requests without a body',
      }),
    ),
    lb_try_duration_ms: Type.Optional(
      Type.Integer({
        minimum: 0,
        description: 'How long to keep trying to reach an upstream, ms (0: no retry by time)',
      }),
    ),
    lb_try_interval_ms: Type.Optional(
      Type.Integer({ minimum: 0, description: 'Wait between two tries, ms (default 250)' }),
    ),
    stream_timeout_ms: Type.Optional(
      Type.Integer({
        minimum: 0,
        description:
          'Longest life of a streamed response (text/event-stream, or any with flush_interval -1), ms (absent or 0: none)',
      }),
    ),
  },
  { additionalProperties: false },
);
export type ReverseProxyHandler = Static<typeof ReverseProxyHandler>;

/** `root <dir>` + `file_server`: serve static files from a directory. */
export const FileServerHandler = Type.Object(
  {
    kind: Type.Literal('file_server'),
    root: Type.String({ minLength: 1, description: 'Directory served' }),
  },
  { additionalProperties: false },
);
export type FileServerHandler = Static<typeof FileServerHandler>;

/** `respond [<body>] [<status>]`: a fixed response. */
export const RespondHandler = Type.Object(
  {
    kind: Type.Literal('respond'),
    body: Type.String(),
    status: Type.Integer({ minimum: 100, maximum: 999 }),
    error_status: Type.Optional(
      Type.Literal(true, {
        description:
          'Inside handle_errors, `respond <body> {err.status_code}`: answer with the error status (`status` is used outside an error)',
      }),
    ),
  },
  { additionalProperties: false },
);
export type RespondHandler = Static<typeof RespondHandler>;

/** The terminal handler of a block: what finally answers the request. */
/**
 * `abort`: close the connection without an answer (HTTP/1: the socket;
 * HTTP/2: the stream is reset), as Caddy's `abort`.
 */
export const AbortHandler = Type.Object({ kind: Type.Literal('abort') }, { additionalProperties: false });
export type AbortHandler = Static<typeof AbortHandler>;

/** The terminal handler of a block: what finally answers the request. */
export const Handler = Type.Union([ReverseProxyHandler, FileServerHandler, RespondHandler, AbortHandler]);
export type Handler = Static<typeof Handler>;
