import type { TSchema } from 'typebox';
import { createAllowTable } from './allow.js';
import type { AdminTag, Endpoint, OpenApiServer } from './endpoint.js';
import { ENDPOINTS } from './endpoints/index.js';
import { DEFAULT_SERVER } from './endpoints/openapi-json.js';
import * as stats from './endpoints/stats-schemas.js';
import * as schemas from './schemas.js';

export { DEFAULT_SERVER };

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
  StatsDomains: stats.StatsDomains,
  StatsPoint: stats.StatsPoint,
  StatsTimeseries: stats.StatsTimeseries,
  StatsTotals: stats.StatsTotals,
  StatsBreakdown: stats.StatsBreakdown,
  StatsVitals: stats.StatsVitals,
};
const NAMES = new Map<unknown, string>(Object.entries(COMPONENTS).map(([name, schema]) => [schema, name]));

/** The tags of the document, in order, with what each groups. */
const TAGS: ReadonlyArray<{ name: AdminTag; description: string }> = [
  { name: 'health', description: 'Liveness; no token, not rate limited' },
  { name: 'routes', description: 'The route table: list, add or replace, reconcile one source, delete' },
  {
    name: 'cache',
    description: 'Purge one cached response: PURGE (spec), or its DELETE alias, which generated clients can call',
  },
  { name: 'config', description: 'Reload the Proxyfile' },
  { name: 'metrics', description: 'Prometheus text exposition' },
  { name: 'analytics', description: 'First-party analytics snapshots per domain' },
  { name: 'certificates', description: 'Names managed by automatic HTTPS' },
  { name: 'discovery', description: 'Container discovery (the docker source)' },
  {
    name: 'stats',
    description:
      'Analytics history (per minute, hour and day, kept in the state directory): time series, totals, breakdowns, Web Vitals; JSON or CSV',
  },
  { name: 'openapi', description: 'This document' },
];

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

const ref = (kind: 'headers' | 'responses' | 'schemas', name: string): Json => ({
  $ref: `#/components/${kind}/${name}`,
});
const ENVELOPE = ref('schemas', 'ErrorEnvelope');
const CORS: Record<string, Json> = { 'Access-Control-Allow-Origin': ref('headers', 'AccessControlAllowOrigin') };
const RETRY_AFTER: Record<string, Json> = { ...CORS, 'Retry-After': ref('headers', 'RetryAfter') };

/** Statuses the listener answers for a request to any operation, before or around the app (`server-events.ts`, timeouts). */
const LISTENER_RESPONSES: Record<string, string> = {
  '408': 'RequestTimeout',
  '417': 'ExpectationFailed',
  '431': 'HeadersTooLarge',
};

/** Methods whose body the app reads (json-body.ts): an invalid Content-Type header is 400, over 64 KB 413. */
const BODY_METHODS = new Set(['POST', 'PUT', 'DELETE', 'OPTIONS']);

/** The responses of one operation, merged status by status: descriptions joined, one schema per media type. */
class Responses {
  readonly #byStatus = new Map<
    string,
    { descriptions: string[]; content: Record<string, Json>; headers: Record<string, Json> }
  >();
  readonly #refs = new Map<string, string>();

  /** Adds a body (or none) under `status`; a media type already declared there keeps its schema. */
  add(status: string, description: string, content: Record<string, Json> = {}, headers: Record<string, Json> = CORS) {
    const entry = this.#byStatus.get(status);
    if (entry === undefined) {
      this.#byStatus.set(status, { descriptions: [description], content: { ...content }, headers: { ...headers } });
      return;
    }
    const fresh = Object.keys(content).filter((type) => entry.content[type] === undefined);
    if (fresh.length === 0) return;
    entry.descriptions.push(description);
    for (const type of fresh) entry.content[type] = content[type] as Json;
    Object.assign(entry.headers, headers);
  }

  /** Declares `status` as a shared response of `components.responses`, unless the operation has its own. */
  addRef(status: string, name: string) {
    if (!this.#byStatus.has(status)) this.#refs.set(status, name);
  }

  toJson(): Record<string, Json> {
    const out: Record<string, Json> = {};
    const statuses = [...new Set([...this.#byStatus.keys(), ...this.#refs.keys()])].sort();
    for (const status of statuses) {
      const entry = this.#byStatus.get(status);
      if (entry === undefined) {
        out[status] = ref('responses', this.#refs.get(status) as string);
        continue;
      }
      const response: Record<string, Json> = { description: entry.descriptions.join('; '), headers: entry.headers };
      if (Object.keys(entry.content).length > 0) response.content = entry.content;
      out[status] = response;
    }
    return out;
  }
}

const envelope = (): Record<string, Json> => ({ 'application/json': { schema: ENVELOPE } });

function pathParameters(schema: TSchema | undefined): Json[] | undefined {
  if (schema === undefined) return undefined;
  const properties = (schema as { properties?: Record<string, TSchema> }).properties ?? {};
  return Object.entries(properties).map(([name, property]) => ({
    name,
    in: 'path',
    required: true,
    description: String((property as { description?: unknown }).description ?? name),
    schema: toJson(property),
  }));
}

/** The query parameters of an object schema: optional properties are optional parameters. */
function queryParameters(schema: TSchema | undefined): Json[] {
  if (schema === undefined) return [];
  const { properties = {}, required = [] } = schema as { properties?: Record<string, TSchema>; required?: string[] };
  return Object.entries(properties).map(([name, property]) => ({
    name,
    in: 'query',
    required: required.includes(name),
    description: String((property as { description?: unknown }).description ?? name),
    schema: toJson(property),
  }));
}

function operation(endpoint: Endpoint): Record<string, Json> {
  const responses = new Responses();
  for (const [status, response] of Object.entries(endpoint.responses)) {
    const content =
      response.schema === undefined
        ? {}
        : { [response.contentType ?? 'application/json']: { schema: toJson(response.schema, false) } };
    const headers = { ...CORS };
    for (const [name, h] of Object.entries(response.headers ?? {})) {
      headers[name] = { description: h.description, schema: toJson(h.schema) };
    }
    responses.add(status, response.description, content, headers);
    for (const alt of response.alternatives ?? []) {
      responses.add(status, alt.description, { [alt.contentType]: { schema: toJson(alt.schema, false) } }, headers);
    }
  }
  for (const [status, description] of Object.entries(endpoint.errors ?? {})) {
    responses.add(status, description, envelope());
  }
  if (BODY_METHODS.has(endpoint.method)) {
    responses.add('400', 'invalid JSON: an invalid Content-Type header', envelope());
    responses.add('413', 'request body too large (over 64 KB)', envelope());
  }
  if (endpoint.auth) {
    responses.addRef('401', 'Unauthorized');
    responses.add(
      '429',
      'rate limit exceeded: over 60 requests in the 60-second window, or this client locked out after 10 wrong tokens',
      envelope(),
      RETRY_AFTER,
    );
  }
  for (const [status, name] of Object.entries(LISTENER_RESPONSES)) responses.addRef(status, name);
  const op: Record<string, Json> = {
    operationId: endpoint.operationId,
    tags: [endpoint.tag],
    summary: endpoint.summary,
    description: endpoint.description,
  };
  if (!endpoint.auth) op.security = [];
  const parameters = [
    ...(pathParameters(endpoint.openApiParams ?? endpoint.params) ?? []),
    ...queryParameters(endpoint.query),
  ];
  if (parameters.length > 0) op.parameters = parameters;
  if (endpoint.body !== undefined) {
    op.requestBody = {
      required: true,
      description: String((endpoint.body as { description?: unknown }).description ?? 'Request body'),
      content: { 'application/json': { schema: toJson(endpoint.body, false) } },
    };
  }
  op.responses = responses.toJson();
  return op;
}

const capitalized = (word: string) => word.charAt(0).toUpperCase() + word.slice(1);

/** `/cache/{host}/{path}` → `CacheByHostByPath`, `/openapi.json` → `OpenapiJson`. */
function pathName(path: string): string {
  return path
    .split('/')
    .filter((segment) => segment.length > 0)
    .map((segment) =>
      segment.startsWith('{')
        ? `By${capitalized(segment.slice(1, -1))}`
        : segment
            .split(/[^A-Za-z0-9]+/)
            .map(capitalized)
            .join(''),
    )
    .join('');
}

/**
 * The `options` operation of a path item: OPTIONS is never served (spec §4,
 * §5 rule 3), so this declares the 405 and the path's `Allow`, the answer any
 * other method the path does not list gets too.
 */
function optionsOperation(path: string, endpoints: readonly Endpoint[], allow: string): Record<string, Json> {
  const first = endpoints[0] as Endpoint;
  const responses = new Responses();
  const templated = path.includes('{');
  responses.add(
    '400',
    templated
      ? 'invalid JSON: an invalid Content-Type header; invalid URL: malformed percent-encoding'
      : 'invalid JSON: an invalid Content-Type header',
    envelope(),
  );
  responses.add('405', `method not allowed; Allow: ${allow}`, envelope(), {
    ...CORS,
    Allow: {
      description: 'The methods this path accepts (HEAD wherever GET is), comma-separated, sorted',
      schema: { type: 'string', const: allow },
    },
  });
  responses.add('413', 'request body too large (over 64 KB)', envelope());
  for (const [status, name] of Object.entries(LISTENER_RESPONSES)) responses.addRef(status, name);
  const op: Record<string, Json> = {
    operationId: `options${pathName(path)}`,
    tags: [first.tag],
    summary: `Methods of ${path} (always 405)`,
    description: `OPTIONS is never served, so a browser's CORS preflight fails (browsers are unsupported): 405 method not allowed with Allow: ${allow}, no token needed, not rate limited. Any other method this path does not list is 405 with the same Allow too, after the token check (401 without it).`,
    security: [],
  };
  const parameters = pathParameters(first.openApiParams ?? first.params);
  if (parameters !== undefined) op.parameters = parameters;
  op.responses = responses.toJson();
  return op;
}

/** What {@link openApiDocument} may be told. */
export interface OpenApiDocumentOptions {
  /** The document's `servers` (default: [{@link DEFAULT_SERVER}]). */
  servers?: readonly OpenApiServer[];
}

/**
 * The OpenAPI 3.1 document of the admin API, built from the same TypeBox
 * schemas Fastify validates and serializes with. Pure: no app, no listener.
 */
export function openApiDocument(options: OpenApiDocumentOptions = {}): Record<string, unknown> {
  const allow = createAllowTable(ENDPOINTS);
  const byPath = new Map<string, Endpoint[]>();
  for (const endpoint of ENDPOINTS) byPath.set(endpoint.path, [...(byPath.get(endpoint.path) ?? []), endpoint]);
  const paths: Record<string, Record<string, Json>> = {};
  for (const [path, endpoints] of byPath) {
    const item: Record<string, Json> = {};
    for (const endpoint of endpoints) {
      if (endpoint.method === 'PURGE') {
        // OpenAPI 3.1 has no PURGE; 3.2 names custom methods `additionalOperations`, so use that name as an extension.
        item['x-additionalOperations'] = { PURGE: operation(endpoint) };
      } else {
        item[endpoint.method.toLowerCase()] = operation(endpoint);
      }
    }
    const sample = path.replace(/\{[^}]+\}/g, 'x');
    item.options = optionsOperation(path, endpoints, allow.methodsFor(sample).join(', '));
    paths[path] = item;
  }
  const envelopeResponse = (description: string, headers: Record<string, Json> = CORS): Json => ({
    description,
    headers,
    content: envelope(),
  });
  return {
    openapi: '3.1.0',
    info: {
      title: 'proxyd admin API',
      version: ADMIN_API_VERSION,
      description:
        'Route management, config reload, cache purge, metrics, analytics and their history, managed certificates and container discovery of proxyd. Errors are {error} envelopes. Every response carries Access-Control-Allow-Origin: null (browsers are unsupported). OPTIONS on any path, and any method a path does not list, is 405 with Allow listing the methods it accepts (each path item declares it as its options operation). PURGE /cache/{host}/{path} is declared under x-additionalOperations (OpenAPI 3.1 has no PURGE); DELETE on the same path is its alias for generated clients. A request the server cannot parse at all gets 400 bad request before any operation is known.',
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    servers: (options.servers ?? [DEFAULT_SERVER]).map((server) => ({ ...server })),
    security: [{ bearerAuth: [] }],
    tags: TAGS.map((tag) => ({ ...tag })),
    paths,
    components: {
      schemas: Object.fromEntries(Object.entries(COMPONENTS).map(([name, schema]) => [name, toJson(schema)])),
      headers: {
        AccessControlAllowOrigin: {
          description: 'Always "null", on every response: browsers are unsupported (spec §5)',
          schema: { type: 'string', const: 'null' },
        },
        RetryAfter: {
          description: 'Seconds until the request may be retried',
          schema: { type: 'integer', minimum: 1, description: 'Seconds' },
        },
      },
      responses: {
        Unauthorized: envelopeResponse('unauthorized: bearer token absent or wrong (TCP only)'),
        RequestTimeout: envelopeResponse(
          'request timeout: the headers took over 10 s or the whole request over 30 s (the defaults); the connection closes',
        ),
        ExpectationFailed: envelopeResponse(
          'expectation failed: an Expect header other than 100-continue; the connection closes',
        ),
        HeadersTooLarge: envelopeResponse("request header fields too large: over Node's header size limit"),
      },
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
