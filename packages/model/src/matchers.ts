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
 * One `query` key (Caddy's `query <key>=<value>…`): the request's query must
 * hold `name` with one of `values` (`*`: any value, the key present).
 */
export const QueryMatch = Type.Object(
  {
    name: Type.String({ minLength: 1, description: 'Query key, exact (case-sensitive), after percent-decoding' }),
    values: Type.Array(Type.String(), {
      minItems: 1,
      description: 'Accepted values after percent-decoding, any of; * matches any value',
    }),
  },
  { additionalProperties: false },
);
export type QueryMatch = Static<typeof QueryMatch>;

/**
 * A regular expression a matcher tests (`path_regexp`, `header_regexp`);
 * its captures become `{re.<name>.<group>}` placeholders for the request.
 */
export const RegexpMatch = Type.Object(
  {
    name: Type.String({
      pattern: '^[A-Za-z0-9_-]*$',
      description: 'Name of its captures ({re.<name>.1}); empty: only the nameless {re.1} form',
    }),
    pattern: Type.String({ minLength: 1, description: 'JavaScript regular expression (unanchored, as Caddy)' }),
  },
  { additionalProperties: false },
);
export type RegexpMatch = Static<typeof RegexpMatch>;

/** `header_regexp [<name>] <field> <regexp>`: the header's value must match. */
export const HeaderRegexpMatch = Type.Object(
  {
    field: Type.String({ minLength: 1, description: 'Request header name' }),
    ...RegexpMatch.properties,
  },
  { additionalProperties: false },
);
export type HeaderRegexpMatch = Static<typeof HeaderRegexpMatch>;

/** An IP range list of `client_ip` / `remote_ip`: addresses or CIDRs, as written, normalised. */
const IpRanges = Type.Array(Type.String({ minLength: 2 }), {
  minItems: 1,
  description: 'IP addresses or CIDRs, any of (private_ranges expanded)',
});

/**
 * The conditions of a matcher set: every condition that is set must hold
 * (Caddy's rule); within `path`, `method`, `host`, an IP list or a query
 * key's values, any entry may. The optional conditions are absent when
 * not written, so a matcher of `path`/`method`/`header` reads as before.
 */
const conditionFields = {
  path: Type.Union([Type.Array(Type.String({ minLength: 1 }), { minItems: 1 }), Type.Null()], {
    description: 'Path patterns (/exact, /prefix/*, *.suffix, *), any of; null: any path',
  }),
  method: Type.Union([Type.Array(Type.String({ pattern: '^[A-Z]+$' }), { minItems: 1 }), Type.Null()], {
    description: 'Request methods, uppercase, any of; null: any method',
  }),
  header: Type.Array(HeaderMatch, { description: 'Header conditions, every one must hold' }),
  host: Type.Optional(
    Type.Array(Type.String({ minLength: 1 }), {
      minItems: 1,
      description: 'Request hosts, lowercase, any of; *.example.com matches one label',
    }),
  ),
  query: Type.Optional(Type.Array(QueryMatch, { minItems: 1, description: 'Query keys, every one must hold' })),
  path_regexp: Type.Optional(RegexpMatch),
  header_regexp: Type.Optional(Type.Array(HeaderRegexpMatch, { minItems: 1, description: 'Every one must hold' })),
  client_ip: Type.Optional(IpRanges),
  remote_ip: Type.Optional(IpRanges),
};

/** A matcher set without `not` (what a `not` block holds). */
export const MatcherConditions = Type.Object(conditionFields, { additionalProperties: false });
export type MatcherConditions = Static<typeof MatcherConditions>;

/**
 * A named matcher: every condition that is set must hold (Caddy's rule),
 * and none of the `not` sets may match as a whole.
 */
export const RequestMatcher = Type.Object(
  {
    ...conditionFields,
    not: Type.Optional(
      Type.Array(MatcherConditions, {
        minItems: 1,
        description: '`not` sets: the request must not match any of them (each set: all of its conditions)',
      }),
    ),
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
