import type { TSchema } from 'typebox';
import type { Endpoint } from './endpoint.js';
import { ENDPOINTS } from './endpoints/index.js';
import * as schemas from './schemas.js';

/** The version the OpenAPI document announces for this API. */
export const ADMIN_API_VERSION = '0.1.0';

/** Schemas that become named components (referenced with `$ref`) in the document. */
const COMPONENTS: Record<string, TSchema> = {
  ErrorEnvelope: schemas.ErrorEnvelope,
  HealthResponse: schemas.HealthResponse,
  Route: schemas.Route,
  RouteCreate: schemas.RouteCreate,
  RouteDeleted: schemas.RouteDeleted,
  SnapshotRoute: schemas.SnapshotRoute,
  SnapshotRequest: schemas.SnapshotRequest,
  SnapshotResponse: schemas.SnapshotResponse,
  AnalyticsSnapshot: schemas.AnalyticsSnapshot,
  Certificate: schemas.Certificate,
  DiscoveryResponse: schemas.DiscoveryResponse,
  DiscoveryWarning: schemas.DiscoveryWarning,
  CachePurged: schemas.CachePurged,
  CacheNotFound: schemas.CacheNotFound,
  ReloadResponse: schemas.ReloadResponse,
  ReloadTooSoon: schemas.ReloadTooSoon,
};
const NAMES = new Map<unknown, string>(Object.entries(COMPONENTS).map(([name, schema]) => [schema, name]));

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Plain JSON of a TypeBox schema (symbol keys dropped), named schemas replaced by `$ref` below the root. */
function toJson(schema: unknown, root = true): Json {
  if (!root && NAMES.has(schema)) return { $ref: `#/components/schemas/${NAMES.get(schema)}` };
  if (Array.isArray(schema)) return schema.map((item) => toJson(item, false));
  if (schema === null || typeof schema !== 'object') return schema as Json;
  const out: Record<string, Json> = {};
  for (const [key, value] of Object.entries(schema)) out[key] = toJson(value, false);
  return out;
}

const envelope = (description: string): Json => ({
  description,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorEnvelope' } } },
});

const retryAfter: Json = {
  description: 'Seconds until the request may be retried',
  schema: { type: 'integer', minimum: 1, description: 'Seconds' },
};

function operation(endpoint: Endpoint): Json {
  const responses: Record<string, Json> = {};
  for (const [status, response] of Object.entries(endpoint.responses)) {
    const entry: Record<string, Json> = { description: response.description };
    if (response.schema !== undefined) {
      entry.content = { [response.contentType ?? 'application/json']: { schema: toJson(response.schema, false) } };
    }
    if (response.headers !== undefined) {
      entry.headers = Object.fromEntries(
        Object.entries(response.headers).map(([name, h]) => [
          name,
          { description: h.description, schema: toJson(h.schema) },
        ]),
      );
    }
    responses[status] = entry;
  }
  for (const [status, description] of Object.entries(endpoint.errors ?? {})) {
    responses[status] ??= envelope(description);
  }
  if (endpoint.auth) {
    responses['401'] ??= envelope('unauthorized: bearer token absent or wrong (TCP only)');
    responses['429'] ??= {
      ...(envelope('rate limit exceeded: over 60 requests in the 60-second window') as object),
      headers: { 'Retry-After': retryAfter },
    };
  }
  const op: Record<string, Json> = {
    operationId: endpoint.operationId,
    summary: endpoint.summary,
    description: endpoint.description,
    responses,
  };
  if (!endpoint.auth) op.security = [];
  const params = endpoint.openApiParams ?? endpoint.params;
  if (params !== undefined) {
    const properties = (params as { properties?: Record<string, TSchema> }).properties ?? {};
    op.parameters = Object.entries(properties).map(([name, schema]) => ({
      name,
      in: 'path',
      required: true,
      description: String((schema as { description?: unknown }).description ?? name),
      schema: toJson(schema),
    }));
  }
  if (endpoint.body !== undefined) {
    op.requestBody = {
      required: true,
      description: String((endpoint.body as { description?: unknown }).description ?? 'Request body'),
      content: { 'application/json': { schema: toJson(endpoint.body, false) } },
    };
  }
  return op;
}

/**
 * The OpenAPI 3.1 document of the admin API, built from the same TypeBox
 * schemas Fastify validates and serializes with. Pure: no app, no listener.
 */
export function openApiDocument(): Record<string, unknown> {
  const paths: Record<string, Record<string, Json>> = {};
  for (const endpoint of ENDPOINTS) {
    paths[endpoint.path] ??= {};
    const item = paths[endpoint.path] as Record<string, Json>;
    if (endpoint.method === 'PURGE') {
      // OpenAPI 3.1 has no PURGE; 3.2 names custom methods `additionalOperations`, so use that name as an extension.
      item['x-additionalOperations'] = { PURGE: operation(endpoint) };
    } else {
      item[endpoint.method.toLowerCase()] = operation(endpoint);
    }
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'proxyd admin API',
      version: ADMIN_API_VERSION,
      description:
        'Route management, config reload, cache purge, metrics, analytics, managed certificates and container discovery of proxyd. Errors are {error} envelopes; every response carries Access-Control-Allow-Origin: null; a wrong method or OPTIONS gives 405 with Allow.',
    },
    servers: [{ url: 'http://127.0.0.1:6190', description: 'Default TCP admin listener' }],
    security: [{ bearerAuth: [] }],
    paths,
    components: {
      schemas: Object.fromEntries(Object.entries(COMPONENTS).map(([name, schema]) => [name, toJson(schema)])),
      securitySchemes: {
        bearerAuth: {
          type: 'http',
          scheme: 'bearer',
          description: 'The value of PROXY_ADMIN_TOKEN at start; not needed over the Unix socket',
        },
      },
    },
  };
}
