/**
 * The config model: plain data that the Proxyfile compiles into, that route
 * sources (admin API, container labels) produce, and that the data plane
 * builds its RouteTable from. TypeBox schemas and the pure value rules of
 * `values.ts` only — no runtime weight beyond `typebox` and `node:net`, so
 * `@proxyd/proxyfile` and `@proxyd/admin-api` can import this subpath.
 *
 * Conventions: durations are integers in milliseconds (`*_ms`), sizes in
 * bytes, host names lowercase. Every schema and its static type share a name.
 */
import { type Static, Type } from 'typebox';
import { MatcherName, RequestMatcher } from './matchers.js';

export { addressDomain, CATCH_ALL_HOST, catchAllDomain, isCatchAllDomain } from './catch-all.js';
export {
  HeaderMatch,
  HeaderRegexpMatch,
  MatcherConditions,
  MatcherName,
  QueryMatch,
  RegexpMatch,
  RequestMatcher,
} from './matchers.js';
export {
  hasRequestPlaceholder,
  PLACEHOLDER_PATTERN,
  type PlaceholderRef,
  PREFIXED_PLACEHOLDERS,
  type PrefixedPlaceholder,
  REMAINDER_PLACEHOLDER,
  REQUEST_PLACEHOLDERS,
  type RequestPlaceholder,
  requestPlaceholder,
} from './placeholders.js';

export { SITE_DIRECTIVES, SITE_STEP_ORDER, type SiteStepName } from './site-steps.js';
export {
  type HostPort,
  MAX_DOMAIN_BYTES,
  MAX_LABEL_BYTES,
  type Parsed,
  parseBindAddress,
  parseDomain,
  parseHeaderName,
  parseHost,
  parseHostName,
  parseHostPort,
  parsePort,
  parseRate,
} from './values.js';

/**
 * A local IP address a listener binds (`bind`, `default_bind`), in
 * canonical form: IPv4 dotted quad or compressed lowercase IPv6;
 * `0.0.0.0` and `::` are every address of their family.
 */
export const BindAddress = Type.String({ minLength: 2, description: 'Local IP address, e.g. 127.0.0.1, ::1, 0.0.0.0' });
export type BindAddress = Static<typeof BindAddress>;

/** A TCP port, 1–65535. */
export const Port = Type.Integer({ minimum: 1, maximum: 65535, description: 'TCP port, 1–65535' });
export type Port = Static<typeof Port>;

/** An upstream to forward to. IPv6 hosts are stored without brackets. */
export const UpstreamAddress = Type.Object(
  {
    host: Type.String({ minLength: 1, description: 'Host name or IP address (IPv6 without brackets)' }),
    port: Port,
  },
  { additionalProperties: false, description: 'Upstream socket address' },
);
export type UpstreamAddress = Static<typeof UpstreamAddress>;

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

/**
 * `abort`: close the connection without an answer (HTTP/1: the socket;
 * HTTP/2: the stream is reset), as Caddy's `abort`.
 */
export const AbortHandler = Type.Object({ kind: Type.Literal('abort') }, { additionalProperties: false });
export type AbortHandler = Static<typeof AbortHandler>;

/** The terminal handler of a block: what finally answers the request. */
export const Handler = Type.Union([ReverseProxyHandler, FileServerHandler, RespondHandler, AbortHandler]);
export type Handler = Static<typeof Handler>;

/**
 * `redir [<from>|@name] <to> <status>`; `to` may hold `{http.request.uri.path.remainder}`
 * and the request placeholders (`REQUEST_PLACEHOLDERS`). With `matcher`, `from` is null.
 */
export const Redirect = Type.Object(
  {
    from: Type.Union([Type.String(), Type.Null()], {
      description: 'Path pattern (exact, or prefix ending in /*); null matches every path',
    }),
    to: Type.String({ minLength: 1 }),
    status: Type.Union([Type.Literal(301), Type.Literal(302), Type.Literal(303), Type.Literal(307), Type.Literal(308)]),
    matcher: Type.Optional(MatcherName),
  },
  { additionalProperties: false },
);
export type Redirect = Static<typeof Redirect>;

/** `basic_auth "<realm>" { <user> <bcrypt_hash> }`. */
export const BasicAuth = Type.Object(
  {
    realm: Type.String(),
    users: Type.Array(
      Type.Object(
        {
          user: Type.String({ minLength: 1 }),
          hash: Type.String({ description: 'bcrypt hash ($2a$, $2b$ or $2y$)' }),
        },
        { additionalProperties: false },
      ),
      { minItems: 1 },
    ),
  },
  { additionalProperties: false },
);
export type BasicAuth = Static<typeof BasicAuth>;

/** Where a rewrite applies: a path pattern (null: every path) and optionally a named matcher too. */
const rewriteScope = {
  path: Type.Union([Type.String(), Type.Null()], {
    description: 'Path pattern (/exact, /prefix/*, *.suffix); null: every path',
  }),
  matcher: Type.Optional(MatcherName),
};

/**
 * `rewrite [<path>|@name] <to>`: the request's target becomes `to` (request
 * placeholders filled); without a `?` in `to` the query is kept, with one
 * it is replaced by what follows it. The first matching rewrite of a block
 * applies (Caddy's rule: rewrites of one block are mutually exclusive).
 */
export const Rewrite = Type.Object(
  { ...rewriteScope, to: Type.String({ minLength: 1, description: 'New path[?query]; placeholders allowed' }) },
  { additionalProperties: false },
);
export type Rewrite = Static<typeof Rewrite>;

/**
 * `uri [<path>|@name] strip_prefix|strip_suffix|replace|path_regexp …`: an
 * edit of the request's path (the query is kept). Every matching one
 * applies, in file order, after the block's `rewrite`.
 */
export const UriOp = Type.Object(
  {
    ...rewriteScope,
    op: Type.Union([
      Type.Literal('strip_prefix'),
      Type.Literal('strip_suffix'),
      Type.Literal('replace'),
      Type.Literal('path_regexp'),
    ]),
    find: Type.String({ minLength: 1, description: 'Prefix, suffix, substring or regexp' }),
    replace: Type.String({ description: 'Replacement (replace, path_regexp: $1 refers to a group); empty otherwise' }),
    limit: Type.Integer({ minimum: 0, description: 'replace: at most this many replacements; 0: all' }),
  },
  { additionalProperties: false },
);
export type UriOp = Static<typeof UriOp>;

/**
 * `try_files <file>... [=<status>]`: rewrite to the first candidate that
 * exists below `root` (a candidate ending in `/` must be a directory,
 * others a file), placeholders filled; none: the request goes on as it
 * was, or answers `status` (an error, `handle_errors` applies) when the
 * list ends with `=<status>`.
 */
export const TryFiles = Type.Object(
  {
    files: Type.Array(Type.String({ minLength: 1 }), { minItems: 1, description: 'Candidates, in order' }),
    root: Type.String({ minLength: 1, description: "The block's file_server root, where candidates are looked up" }),
    status: Type.Union([Type.Integer({ minimum: 400, maximum: 599 }), Type.Null()], {
      description: 'Answered when no candidate exists (`=404`); null: the request goes on unchanged',
    }),
    matcher: Type.Optional(MatcherName),
  },
  { additionalProperties: false },
);
export type TryFiles = Static<typeof TryFiles>;

/** One `copy_headers` entry of `forward_auth`: `from` of the auth response is set as `to` on the request. */
export const CopyHeader = Type.Object(
  {
    from: Type.String({ minLength: 1, description: 'Header of the auth response' }),
    to: Type.String({ minLength: 1, description: 'Header set on the request (the same name unless renamed: From>To)' }),
  },
  { additionalProperties: false },
);
export type CopyHeader = Static<typeof CopyHeader>;

/**
 * `forward_auth <upstream> { uri …; copy_headers … }` (Authelia, Authentik,
 * oauth2-proxy): before the request is handled, a GET subrequest to the
 * auth server with the client's headers and `X-Forwarded-Method`,
 * `-Proto`, `-Host`, `-Uri`, `-For`. A 2xx lets the request through with
 * `copy_headers` copied from the auth answer (and removed from the request
 * when the auth answer lacks them); any other answer is relayed to the
 * client as it came (a redirect to the login page included).
 */
export const ForwardAuth = Type.Object(
  {
    upstreams: Type.Array(UpstreamAddress, { minItems: 1, description: 'Auth server(s); the first that answers' }),
    tls: Type.Boolean({ description: 'Connect with TLS (https:// upstream), verified' }),
    uri: Type.String({ minLength: 1, description: 'Path (and query) of the subrequest; request placeholders allowed' }),
    copy_headers: Type.Array(CopyHeader),
    matcher: Type.Optional(MatcherName),
  },
  { additionalProperties: false },
);
export type ForwardAuth = Static<typeof ForwardAuth>;

/**
 * The directives a block may hold (a site, or a `handle` inside it). The data
 * plane applies them in one fixed order, documented in proxy-core's README,
 * whatever order the file wrote them in.
 */
const blockFields = {
  header: Type.Array(HeaderOp, { description: 'Response header operations, applied after the defaults' }),
  basic_auth: Type.Union([BasicAuth, Type.Null()]),
  redirects: Type.Array(Redirect),
  handler: Type.Union([Handler, Type.Null()], { description: 'Terminal handler; null means 404' }),
  matched_proxies: Type.Optional(
    Type.Array(Type.Object({ matcher: MatcherName, handler: ReverseProxyHandler }, { additionalProperties: false }), {
      description: '`reverse_proxy @name …`: the first whose matcher matches answers instead of `handler`',
    }),
  ),
  matched_responses: Type.Optional(
    Type.Array(
      Type.Object(
        { matcher: MatcherName, handler: Type.Union([RespondHandler, AbortHandler]) },
        { additionalProperties: false },
      ),
      {
        description:
          '`respond @name …` / `abort @name`: the first whose matcher matches answers, before `matched_proxies` and `handler` (Caddy orders abort and respond before reverse_proxy)',
      },
    ),
  ),
  rewrites: Type.Optional(Type.Array(Rewrite, { description: '`rewrite`: the first that matches applies' })),
  uri: Type.Optional(Type.Array(UriOp, { description: '`uri`: every one that matches applies, in order' })),
  try_files: Type.Optional(TryFiles),
  forward_auth: Type.Optional(ForwardAuth),
};

/**
 * `handle_errors [<status>...] { … }`: the block that answers instead of an
 * error proxyd produced in the site (404 without a handler or a file, 403
 * of file_server, 502/503/504 of reverse_proxy, `try_files =<status>`).
 * `statuses` are codes (`404`) or classes (`5xx`); empty: every error.
 */
export const ErrorHandleBlock = Type.Object(
  {
    statuses: Type.Array(Type.String({ pattern: '^[1-5]([0-9][0-9]|xx)$' }), {
      description: 'Status codes or classes (5xx) handled; empty: every error',
    }),
    ...blockFields,
  },
  { additionalProperties: false },
);
export type ErrorHandleBlock = Static<typeof ErrorHandleBlock>;

/**
 * `handle <pattern>` / `handle_path <pattern>`; a null pattern is the fallback `handle`;
 * `handle @name` has a null pattern and the site matcher's name.
 */
export const HandleBlock = Type.Object(
  {
    kind: Type.Union([Type.Literal('handle'), Type.Literal('handle_path')]),
    path: Type.Union([Type.String(), Type.Null()], {
      description: 'Path pattern: exact (/a), prefix (/a/*) or suffix (*.php); null is the fallback',
    }),
    matcher: Type.Optional(MatcherName),
    ...blockFields,
  },
  { additionalProperties: false },
);
export type HandleBlock = Static<typeof HandleBlock>;

/** One address of a site block: `[scheme://]host[:port]`. */
export const SiteAddress = Type.Object(
  {
    scheme: Type.Union([Type.Literal('http'), Type.Literal('https'), Type.Null()], {
      description: 'Explicit scheme; null means HTTPS with automatic certificates unless tls off',
    }),
    host: Type.String({ minLength: 1, description: 'Lowercase host; *.example.com matches one label' }),
    port: Type.Union([Port, Type.Null()]),
  },
  { additionalProperties: false },
);
export type SiteAddress = Static<typeof SiteAddress>;

/** `tls auto | off | internal | <cert_file> <key_file>`, and `tls [internal] { on_demand }`. */
export const TlsPolicy = Type.Object(
  {
    mode: Type.Union([Type.Literal('auto'), Type.Literal('off'), Type.Literal('internal'), Type.Literal('manual')]),
    cert_file: Type.Union([Type.String(), Type.Null()]),
    key_file: Type.Union([Type.String(), Type.Null()]),
    on_demand: Type.Boolean({
      description:
        'Obtain the certificate at the first TLS handshake for a name, after the global on_demand_ask endpoint allows it (default false; only with mode auto or internal)',
    }),
  },
  { additionalProperties: false },
);
export type TlsPolicy = Static<typeof TlsPolicy>;

/** `cache { max_size <bytes>; ttl <duration> }`. */
export const CacheConfig = Type.Object(
  {
    max_size_bytes: Type.Integer({ minimum: 1, description: 'LRU bound on stored bytes (default 64 MiB)' }),
    ttl_ms: Type.Integer({ minimum: 0, description: 'Upper bound on freshness, ms (default 300000)' }),
  },
  { additionalProperties: false },
);
export type CacheConfig = Static<typeof CacheConfig>;

/** A content coding `encode` can produce (Caddy's names). */
export const Encoding = Type.Union([Type.Literal('zstd'), Type.Literal('br'), Type.Literal('gzip')]);
export type Encoding = Static<typeof Encoding>;

/** `encode` without arguments: Caddy's default, `zstd gzip` (br costs more CPU on the fly). */
export const ENCODE_DEFAULT_ENCODINGS: readonly Encoding[] = Object.freeze(['zstd', 'gzip'] as const);
/** `encode`'s default `minimum_length`, bytes (Caddy's): smaller bodies go out identity. */
export const ENCODE_DEFAULT_MINIMUM_LENGTH = 512;

/** `encode [zstd] [br] [gzip] [{ minimum_length <bytes> }]`: response compression. */
export const EncodeConfig = Type.Object(
  {
    encodings: Type.Array(Encoding, {
      minItems: 1,
      uniqueItems: true,
      description: "Codings in the server's preference order (default zstd, gzip)",
    }),
    minimum_length: Type.Integer({
      minimum: 0,
      description: 'Smallest body compressed, bytes (default 512)',
    }),
  },
  { additionalProperties: false },
);
export type EncodeConfig = Static<typeof EncodeConfig>;

/**
 * Highest `under_attack` difficulty: 20 leading zero bits, about a million
 * hashes (~13 s at the ~80 k hashes/s measured in headless Chromium on a
 * loaded 2-core machine, WebCrypto or the pure-JS fallback alike). Each bit
 * doubles the work: 24 would be ~3.5 minutes, near the 5-minute lifetime of
 * a challenge, and more on a phone (proxy-core README, `under_attack`).
 */
export const UNDER_ATTACK_MAX_DIFFICULTY = 20;

/** `under_attack [on|off]` with an optional difficulty. */
export const UnderAttack = Type.Object(
  {
    enabled: Type.Boolean(),
    difficulty: Type.Integer({
      minimum: 1,
      maximum: UNDER_ATTACK_MAX_DIFFICULTY,
      description: 'Leading zero bits of the proof of work, 1-20 (default 16: ~65,000 hashes, about 1 s)',
    }),
  },
  { additionalProperties: false },
);
export type UnderAttack = Static<typeof UnderAttack>;

/** `log` defaults (Caddy's): roll at 100 MiB, keep 10 rolled files for at most 90 days, gzip them. */
export const LOG_DEFAULTS = Object.freeze({
  roll_size_bytes: 100 * 1024 * 1024,
  roll_keep: 10,
  roll_keep_for_ms: 90 * 24 * 3_600_000,
  roll_gzip: true,
});

/** How a log file rolls (`output file <path> { roll_* }`). */
export const LogRoll = Type.Object(
  {
    size_bytes: Type.Integer({ minimum: 1, description: 'Size at which the file rolls, bytes (default 100 MiB)' }),
    keep: Type.Integer({ minimum: 0, description: 'Rolled files kept; 0: no count limit (default 10)' }),
    keep_for_ms: Type.Integer({
      minimum: 0,
      description: 'Age after which a rolled file is deleted, ms; 0: no age limit (default 90 days)',
    }),
    gzip: Type.Boolean({ description: 'Gzip rolled files (default true; `roll_uncompressed` turns it off)' }),
  },
  { additionalProperties: false },
);
export type LogRoll = Static<typeof LogRoll>;

/** Where a site's access log goes: a file (rolled, or not with `roll_disabled`), stdout, stderr, or nowhere. */
export const LogOutput = Type.Union([
  Type.Object(
    {
      kind: Type.Literal('file'),
      path: Type.String({
        minLength: 1,
        description: "File path as written; a relative path is relative to the daemon's working directory",
      }),
      roll: Type.Union([LogRoll, Type.Null()], { description: 'null: never rolled (`roll_disabled`)' }),
    },
    { additionalProperties: false },
  ),
  Type.Object({ kind: Type.Literal('stdout') }, { additionalProperties: false }),
  Type.Object({ kind: Type.Literal('stderr') }, { additionalProperties: false }),
  Type.Object({ kind: Type.Literal('discard') }, { additionalProperties: false }),
]);
export type LogOutput = Static<typeof LogOutput>;

/** `log [{ output …; format json }]`: the site's access log, one JSON line per request. */
export const SiteLog = Type.Object(
  {
    output: LogOutput,
    format: Type.Literal('json', { description: 'Line format: json (Caddy-style access log lines)' }),
  },
  { additionalProperties: false },
);
export type SiteLog = Static<typeof SiteLog>;

/** A site block: its addresses, site-wide options, directives and handle blocks. */
export const Site = Type.Object(
  {
    addresses: Type.Array(SiteAddress, { minItems: 1 }),
    tls: TlsPolicy,
    rate_limit: Type.Union([
      Type.Integer({ minimum: 1, description: 'Requests per second per client IP' }),
      Type.Null(),
    ]),
    cache: Type.Union([CacheConfig, Type.Null()]),
    encode: Type.Union([EncodeConfig, Type.Null()], { description: 'Response compression (default null: none)' }),
    under_attack: UnderAttack,
    analytics: Type.Boolean({ description: 'First-party analytics and script injection (default true)' }),
    handles: Type.Array(HandleBlock, { description: 'handle / handle_path blocks; most specific pattern wins' }),
    bind: Type.Array(BindAddress, {
      description:
        'Local addresses the site answers on (`bind`); empty (default): the global default_bind. A connection that arrived at another address gets 404',
    }),
    matchers: Type.Optional(
      Type.Record(Type.String(), RequestMatcher, { description: 'Named matchers (`@name`), by name without @' }),
    ),
    ...blockFields,
    handle_errors: Type.Optional(
      Type.Array(ErrorHandleBlock, {
        description: '`handle_errors` blocks: the first whose statuses hold the error answers it',
      }),
    ),
    log: Type.Union([SiteLog, Type.Null()], { description: 'Access log of the site (default null: none)' }),
  },
  { additionalProperties: false },
);
export type Site = Static<typeof Site>;

/** An `http(s)://` URL (the Proxyfile narrows `acme_ca` further: `http://` only for loopback hosts). */
const HttpUrl = Type.String({ pattern: '^https?://[^\\s/?#]+[^\\s]*$' });

/** One ACME directory URL of `acme_ca`. */
export const AcmeDirectoryUrl = Type.String({
  pattern: '^https?://[^\\s/?#]+[^\\s]*$',
  description: 'ACME directory URL, e.g. https://acme-v02.api.letsencrypt.org/directory',
});
export type AcmeDirectoryUrl = Static<typeof AcmeDirectoryUrl>;

/** `acme_eab <key_id> <mac_key>`: external account binding (RFC 8555 §7.3.4), e.g. for ZeroSSL. */
export const AcmeEab = Type.Object(
  {
    key_id: Type.String({ minLength: 1, description: 'Key identifier the CA gave' }),
    mac_key: Type.String({
      minLength: 2,
      pattern: '^[A-Za-z0-9_-]+$',
      description: 'HMAC key the CA gave, base64url without padding',
    }),
  },
  { additionalProperties: false },
);
export type AcmeEab = Static<typeof AcmeEab>;

/** Key type of the certificates proxyd obtains (Caddy's spelling); `p256` (ECDSA P-256) is the default. */
export const KeyType = Type.Union([Type.Literal('p256'), Type.Literal('rsa2048')]);
export type KeyType = Static<typeof KeyType>;

/**
 * `auto_https` (Caddy's spelling): how much of automatic HTTPS runs. `on`
 * (the default, not written in a Proxyfile) obtains certificates and
 * redirects HTTP to HTTPS.
 */
export const AutoHttps = Type.Union(
  [Type.Literal('on'), Type.Literal('off'), Type.Literal('disable_redirects'), Type.Literal('disable_certs')],
  {
    description:
      'Automatic HTTPS (default on): off = no certificates and no redirects; disable_redirects = certificates, but HTTP is never redirected to HTTPS; disable_certs = redirects only where a certificate exists, none obtained automatically',
  },
);
export type AutoHttps = Static<typeof AutoHttps>;

/**
 * `docker`: container discovery (Docker/Podman `proxy.*` labels). On by
 * default, when a runtime socket answers; `docker off` turns it off.
 */
export const DockerOptions = Type.Object(
  {
    enabled: Type.Boolean({ description: 'Discover containers by their proxy.* labels (default true)' }),
    host: Type.Union([Type.String({ pattern: '^(unix:///|tcp://).+' }), Type.Null()], {
      description:
        'Runtime endpoint, unix:///<absolute path> or tcp://host:port (default null: DOCKER_HOST, else the first socket that answers of /var/run/docker.sock, $XDG_RUNTIME_DIR/podman/podman.sock, /run/podman/podman.sock)',
    }),
    network: Type.Union([Type.String({ pattern: '^[a-zA-Z0-9][a-zA-Z0-9_.-]*$' }), Type.Null()], {
      description:
        'Network used for a container on several networks that has no proxy.network label (default null: the network shared with proxyd, else the only one)',
    }),
  },
  { additionalProperties: false },
);
export type DockerOptions = Static<typeof DockerOptions>;

/**
 * `history`: per-domain analytics rollups kept in `<state_dir>/history.db`
 * (per minute, per hour, per day), each tier for its retention, the file
 * under `max_size_bytes`. On by default; `history off` turns it off.
 */
export const HistoryOptions = Type.Object(
  {
    enabled: Type.Boolean({ description: 'Keep analytics history in <state_dir>/history.db (default true)' }),
    minute_retention_ms: Type.Integer({ minimum: 3_600_000, description: 'Per-minute rows kept, ms (default 48 h)' }),
    hour_retention_ms: Type.Integer({ minimum: 86_400_000, description: 'Per-hour rows kept, ms (default 90 days)' }),
    day_retention_ms: Type.Union([Type.Integer({ minimum: 86_400_000 }), Type.Null()], {
      description: 'Per-day rows kept, ms (default null: until the size bound trims the oldest)',
    }),
    max_size_bytes: Type.Integer({
      minimum: 1_000_000,
      description: 'Size bound of the database file, bytes (default 256 MB)',
    }),
  },
  { additionalProperties: false },
);
export type HistoryOptions = Static<typeof HistoryOptions>;

/** `dashboard <address> { basic_auth <user> <bcrypt_hash> }`: the analytics dashboard's own listener (absent: none). */
export const DashboardOptions = Type.Object(
  {
    address: Type.String({
      minLength: 1,
      description: 'Dashboard listener host:port (the Proxyfile writes `:port` as 127.0.0.1:port)',
    }),
    basic_auth: BasicAuth,
  },
  { additionalProperties: false },
);
export type DashboardOptions = Static<typeof DashboardOptions>;

/** The global options block. */
export const GlobalOptions = Type.Object(
  {
    http_port: Port,
    https_port: Port,
    email: Type.Union([Type.String(), Type.Null()], { description: 'ACME account contact' }),
    admin: Type.Union([Type.String(), Type.Null()], {
      description: 'Admin listener host:port (default 127.0.0.1:6190)',
    }),
    auto_https: AutoHttps,
    acme_ca: Type.Array(AcmeDirectoryUrl, {
      description:
        "ACME directory URLs, tried in order (a fallback list); empty (default): the daemon picks the public CA, Let's Encrypt production",
    }),
    acme_ca_root: Type.Union([Type.String({ minLength: 1 }), Type.Null()], {
      description:
        "PEM file of roots trusted for the ACME CA's own API endpoint, besides the bundled ones (default null)",
    }),
    acme_eab: Type.Union([AcmeEab, Type.Null()], { description: 'External account binding (default null: none)' }),
    on_demand_ask: Type.Union([HttpUrl, Type.Null()], {
      description:
        'URL asked `?domain=<name>` before an on-demand certificate is obtained; 2xx allows (default null: on-demand TLS refused)',
    }),
    key_type: KeyType,
    state_dir: Type.Union([Type.String(), Type.Null()], { description: 'Where routes and secrets persist' }),
    trusted_proxies: Type.Array(Type.String(), { description: 'CIDRs whose X-Forwarded-For is believed' }),
    geoip_db: Type.Union([Type.String(), Type.Null()], { description: 'MaxMind-format country database path' }),
    docker: DockerOptions,
    default_bind: Type.Array(BindAddress, {
      description:
        'Local addresses every data-plane listener binds (default empty: 0.0.0.0, every IPv4 address; the demo binds 127.0.0.1)',
    }),
    grace_period_ms: Type.Integer({
      minimum: 0,
      description:
        'How long a stop waits for requests, streams and WebSockets in flight before it cuts them, ms (default 30000)',
    }),
    metrics: Type.Union([Type.String(), Type.Null()], {
      description:
        'Metrics listener host:port: GET /metrics without the admin token (default null: none; the Proxyfile writes `:port` as 127.0.0.1:port)',
    }),
    // Optional, unlike the others: absent is `defaultHistoryOptions()`, so configs written before it still check.
    history: Type.Optional(HistoryOptions),
    // Optional rather than null by default, so every compiled Proxyfile without one reads as before.
    dashboard: Type.Optional(DashboardOptions),
  },
  { additionalProperties: false },
);
export type GlobalOptions = Static<typeof GlobalOptions>;

/** A whole compiled Proxyfile. */
export const Config = Type.Object(
  {
    global: GlobalOptions,
    sites: Type.Array(Site),
  },
  { additionalProperties: false },
);
export type Config = Static<typeof Config>;

/** Where a route came from; each source replaces only its own routes. */
export const RouteOrigin = Type.Union([Type.Literal('proxyfile'), Type.Literal('labels'), Type.Literal('api')]);
export type RouteOrigin = Static<typeof RouteOrigin>;

/**
 * One route: a domain (lowercase, `*.x` wildcard allowed), its owner and the
 * site behaviour it serves. The RouteStore holds one per domain.
 */
export const RouteSpec = Type.Object(
  {
    domain: Type.String({ minLength: 1 }),
    origin: RouteOrigin,
    source: Type.Union([Type.String(), Type.Null()], { description: 'Controller tag that owns the route' }),
    site: Site,
  },
  { additionalProperties: false },
);
export type RouteSpec = Static<typeof RouteSpec>;

/** Defaults, in one place, for compilers and route sources. */
export const DEFAULTS = Object.freeze({
  http_port: 80,
  https_port: 443,
  admin: '127.0.0.1:6190',
  health_interval_ms: 10_000,
  health_timeout_ms: 5_000,
  fail_duration_ms: 10_000,
  cache_max_size_bytes: 64 * 1024 * 1024,
  cache_ttl_ms: 300_000,
  under_attack_difficulty: 16,
  key_type: 'p256' as KeyType,
  auto_https: 'on' as AutoHttps,
  grace_period_ms: 30_000,
});

/** The global options with every default applied. */
export function defaultGlobalOptions(): GlobalOptions {
  return {
    http_port: DEFAULTS.http_port,
    https_port: DEFAULTS.https_port,
    email: null,
    admin: null,
    auto_https: DEFAULTS.auto_https,
    acme_ca: [],
    acme_ca_root: null,
    acme_eab: null,
    on_demand_ask: null,
    key_type: DEFAULTS.key_type,
    state_dir: null,
    trusted_proxies: [],
    geoip_db: null,
    docker: { enabled: true, host: null, network: null },
    default_bind: [],
    grace_period_ms: DEFAULTS.grace_period_ms,
    metrics: null,
  };
}

/** The `history` global option when the Proxyfile does not set it: on, 48 h of minutes, 90 days of hours, days until the 256 MB bound. */
export function defaultHistoryOptions(): HistoryOptions {
  return {
    enabled: true,
    minute_retention_ms: 48 * 3_600_000,
    hour_retention_ms: 90 * 86_400_000,
    day_retention_ms: null,
    max_size_bytes: 256_000_000,
  };
}

/** A reverse_proxy handler with every default applied. */
export function defaultReverseProxy(upstreams: UpstreamAddress[]): ReverseProxyHandler {
  return {
    kind: 'reverse_proxy',
    upstreams,
    lb_policy: 'round_robin',
    health: {
      uri: null,
      interval_ms: DEFAULTS.health_interval_ms,
      timeout_ms: DEFAULTS.health_timeout_ms,
      fail_duration_ms: DEFAULTS.fail_duration_ms,
    },
    header_up: [],
    tls: { enabled: false, insecure_skip_verify: false, server_name: null, ca_file: null },
  };
}

/** A site with no directives: addresses only, TLS auto, analytics on. */
export function emptySite(addresses: SiteAddress[]): Site {
  return {
    addresses,
    tls: { mode: 'auto', cert_file: null, key_file: null, on_demand: false },
    rate_limit: null,
    cache: null,
    encode: null,
    under_attack: { enabled: false, difficulty: DEFAULTS.under_attack_difficulty },
    analytics: true,
    handles: [],
    bind: [],
    header: [],
    basic_auth: null,
    redirects: [],
    handler: null,
    log: null,
  };
}
