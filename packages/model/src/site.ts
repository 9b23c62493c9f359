/** A site block, and the `handle` blocks inside it. */
import { type Static, Type } from 'typebox';
import { BindAddress, SiteAddress } from './addresses.js';
import { BasicAuth, CacheConfig, EncodeConfig, Redirect, UnderAttack } from './directives.js';
import { Handler, HeaderOp, ReverseProxyHandler } from './handlers.js';
import { MatcherName, RequestMatcher } from './matchers.js';
import { SiteLog } from './site-log.js';
import { TlsPolicy } from './tls.js';

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
};

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
    log: Type.Union([SiteLog, Type.Null()], { description: 'Access log of the site (default null: none)' }),
  },
  { additionalProperties: false },
);
export type Site = Static<typeof Site>;
