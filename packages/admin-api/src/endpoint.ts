import type { FastifyReply, FastifyRequest } from 'fastify';
import type { TSchema } from 'typebox';
import type {
  AnalyticsPort,
  CachePort,
  CertificatesPort,
  DiscoveryPort,
  MetricsPort,
  ReloadPort,
  RouteStorePort,
  StatsPort,
  StoragePort,
} from './ports.js';

/** One entry of an OpenAPI document's `servers`. */
export interface OpenApiServer {
  /** Base URL, e.g. `http://127.0.0.1:6190`. */
  url: string;
  description: string;
}

/** The tags that group the operations in the OpenAPI document (one per endpoint). */
export type AdminTag =
  | 'health'
  | 'routes'
  | 'cache'
  | 'config'
  | 'metrics'
  | 'analytics'
  | 'certificates'
  | 'discovery'
  | 'stats'
  | 'openapi';

/** The HTTP methods the admin API routes. */
export type AdminMethod = 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PURGE';

/** What every handler may use: the ports, the clock and the audit sink. */
export interface AdminContext {
  routes: RouteStorePort;
  analytics: AnalyticsPort | undefined;
  cache: CachePort | undefined;
  reload: ReloadPort | undefined;
  metrics: MetricsPort | undefined;
  certificates: CertificatesPort | undefined;
  storage: StoragePort | undefined;
  discovery: DiscoveryPort | undefined;
  stats: StatsPort | undefined;
  /** Milliseconds since the epoch. */
  now(): number;
  /** Process start, ms since the epoch. */
  startedAt: number;
  /** Records one audit event (principal "admin"). */
  audit(action: string, resource: string): void;
  /** The OpenAPI document served at /openapi.json, naming `servers`. */
  openApiDocument(servers: readonly OpenApiServer[]): unknown;
}

/** One documented response of an endpoint. */
export interface EndpointResponse {
  description: string;
  /** Body schema; absent for bodiless responses. */
  schema?: TSchema;
  /** Media type of the body (default application/json; text bodies are not serialized by schema). */
  contentType?: string;
  /** Documented response headers. */
  headers?: Record<string, { description: string; schema: TSchema }>;
  /** Other media types of the same response (e.g. `text/csv`), documented beside the main one. */
  alternatives?: Array<{ contentType: string; schema: TSchema; description: string }>;
}

/** One endpoint: its contract (which also drives OpenAPI and `Allow`) and its handler. */
export interface Endpoint {
  method: AdminMethod;
  /** OpenAPI path template, e.g. `/routes/{domain}`. */
  path: string;
  /** Fastify route URL, e.g. `/routes/:domain`. */
  url: string;
  /** The OpenAPI tag of the operation. */
  tag: AdminTag;
  operationId: string;
  summary: string;
  description: string;
  /** False only for GET /health. */
  auth: boolean;
  /** Schema of path parameters as Fastify sees them. */
  params?: TSchema;
  /** Path parameters as OpenAPI documents them (when they differ from `params`). */
  openApiParams?: TSchema;
  body?: TSchema;
  /** Query parameters, for OpenAPI (an object schema; optional properties are optional parameters). The handler parses them. */
  query?: TSchema;
  responses: Record<number, EndpointResponse>;
  /**
   * Error statuses this endpoint answers with the `{error}` envelope, besides
   * those every endpoint of its kind has (401/429 with `auth`; 400/413 for a
   * method whose body is read), documented in OpenAPI.
   */
  errors?: Record<number, string>;
  handler(ctx: AdminContext): (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;
}
