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
  },
  { additionalProperties: false },
);
export type RespondHandler = Static<typeof RespondHandler>;

/** The terminal handler of a block: what finally answers the request. */
export const Handler = Type.Union([ReverseProxyHandler, FileServerHandler, RespondHandler]);
export type Handler = Static<typeof Handler>;
