/** Routes: what the RouteStore holds, one per domain, and what the data plane serves. */
import { type Static, Type } from 'typebox';
import { Site } from './site.js';

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
