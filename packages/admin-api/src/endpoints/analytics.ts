import type { Endpoint } from '../endpoint.js';
import { AdminError, quote } from '../errors.js';
import { AnalyticsList, AnalyticsSnapshot, DomainParams } from '../schemas.js';

// Checked on the segment as sent, before lowercasing (U+212A KELVIN SIGN lowercases to "k").
const HOST_CHARS = /^[A-Za-z0-9._:[\]-]+$/;

/** `GET /analytics`: every domain's snapshot; `[]` when none (or analytics are off). */
export const listAnalytics: Endpoint = {
  method: 'GET',
  path: '/analytics',
  url: '/analytics',
  tag: 'analytics',
  operationId: 'listAnalytics',
  summary: 'Analytics of every domain',
  description:
    "One snapshot per domain that had traffic since start, sorted by domain; [] when none. This node's traffic only, also when nodes share storage redis (GET /stats shows the whole fleet).",
  auth: true,
  responses: { 200: { description: 'The snapshots', schema: AnalyticsList } },
  errors: {
    500: 'internal error: the analytics reader failed to answer; serialize error: a snapshot could not be serialized',
  },
  handler: (ctx) => async () => {
    const list = (await ctx.analytics?.list()) ?? [];
    return [...list].sort((a, b) => (a.domain < b.domain ? -1 : a.domain > b.domain ? 1 : 0));
  },
};

/** `GET /analytics/{domain}`: one domain's snapshot. */
export const getAnalytics: Endpoint = {
  method: 'GET',
  path: '/analytics/{domain}',
  url: '/analytics/:domain',
  tag: 'analytics',
  operationId: 'getAnalytics',
  summary: 'Analytics of one domain',
  description:
    "The snapshot of one domain (case-insensitive), of this node's traffic only (with storage redis too; GET /stats shows the fleet). 400 when the segment is empty, over 253 bytes or has a character outside [a-z0-9._:[]-]; 404 when the domain has no traffic since start.",
  auth: true,
  params: DomainParams,
  responses: { 200: { description: 'The snapshot', schema: AnalyticsSnapshot } },
  errors: {
    400: 'invalid domain (empty, too long or invalid characters), invalid URL (malformed percent-encoding)',
    404: 'no analytics for domain',
    500: 'internal error: the analytics reader failed to answer; serialize error: the snapshot could not be serialized',
  },
  handler: (ctx) => async (request) => {
    const raw = (request.params as DomainParams).domain;
    if (raw.length === 0) throw new AdminError('ADMIN_INVALID_DOMAIN', 'domain segment is empty');
    if (Buffer.byteLength(raw, 'utf8') > 253) throw new AdminError('ADMIN_INVALID_DOMAIN', 'longer than 253 bytes');
    if (!HOST_CHARS.test(raw))
      throw new AdminError('ADMIN_INVALID_DOMAIN', `${quote(raw)} contains invalid characters`);
    const domain = raw.toLowerCase();
    const snapshot = await ctx.analytics?.get(domain);
    if (snapshot === undefined) throw new AdminError('ADMIN_ANALYTICS_NOT_FOUND', quote(domain));
    return snapshot;
  },
};
