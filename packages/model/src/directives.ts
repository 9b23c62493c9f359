/** The site directives whose settings are plain values: `redir`, `basic_auth`, `cache`, `encode`, `under_attack`. */
import { type Static, Type } from 'typebox';
import { UNDER_ATTACK_MAX_DIFFICULTY } from './limits.js';
import { MatcherName } from './matchers.js';

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
