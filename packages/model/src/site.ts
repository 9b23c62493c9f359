/** A site block, and the `handle` blocks inside it. */
import { type Static, Type } from 'typebox';
import { BindAddress, SiteAddress, UpstreamAddress } from './addresses.js';
import { BasicAuth, CacheConfig, EncodeConfig, Redirect, UnderAttack } from './directives.js';
import { AbortHandler, Handler, HeaderOp, RespondHandler, ReverseProxyHandler } from './handlers.js';
import { MatcherName, RequestMatcher } from './matchers.js';
import { SiteLog } from './site-log.js';
import { TlsPolicy } from './tls.js';

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
