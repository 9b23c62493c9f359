/**
 * Named request matchers (Caddy's `@name …`): plain data that a site
 * defines once and its directives refer to by name.
 */
import { type Static, Type } from 'typebox';

/**
 * One `header` condition: the request header `name` (any case) must have a
 * value matching one of `values`: `*` alone matches any value (the field is
 * present), `x*` a prefix, `*x` a suffix, `*x*` a substring, else the exact
 * value (case-sensitive). `values: null` is Caddy's `!Name`: the header
 * must be absent.
 */
export const HeaderMatch = Type.Object(
  {
    name: Type.String({ minLength: 1, description: 'Request header name' }),
    values: Type.Union([Type.Array(Type.String(), { minItems: 1 }), Type.Null()], {
      description: 'Accepted values (any of; * wildcards at either end); null: the header must be absent',
    }),
  },
  { additionalProperties: false },
);
export type HeaderMatch = Static<typeof HeaderMatch>;

/**
 * A named matcher: every condition that is set must hold (Caddy's rule);
 * within `path` or `method`, any entry may.
 */
export const RequestMatcher = Type.Object(
  {
    path: Type.Union([Type.Array(Type.String({ minLength: 1 }), { minItems: 1 }), Type.Null()], {
      description: 'Path patterns (/exact, /prefix/*, *.suffix, *), any of; null: any path',
    }),
    method: Type.Union([Type.Array(Type.String({ pattern: '^[A-Z]+$' }), { minItems: 1 }), Type.Null()], {
      description: 'Request methods, uppercase, any of; null: any method',
    }),
    header: Type.Array(HeaderMatch, { description: 'Header conditions, every one must hold' }),
  },
  { additionalProperties: false },
);
export type RequestMatcher = Static<typeof RequestMatcher>;

/** A matcher's name as used in the model: what follows `@` (`@api` → `api`). */
export const MatcherName = Type.String({
  pattern: '^[^\\s{}@]+$',
  description: 'Name of a matcher of the site (`@name` without the @)',
});
export type MatcherName = Static<typeof MatcherName>;
