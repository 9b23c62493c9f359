/**
 * The admin API's error registry: every error the app answers with has a
 * stable code, an HTTP status and a message (spec §7). Handlers and hooks only
 * throw `AdminError`; one error handler (`error-handler.ts`) turns it, and
 * Fastify's own failures, into the `{error}` envelope. `README.md` documents
 * every code (a test checks that).
 */

/** One registry entry: the status and the message prefix of a code. */
export interface AdminErrorSpec {
  /** HTTP status code. */
  readonly status: number;
  /** The `error` string, or its prefix when the error carries a detail (`<message>: <detail>`). */
  readonly message: string;
}

/** Every error code of the admin API, with its status and message. */
export const ADMIN_ERRORS = {
  ADMIN_INVALID_JSON: { status: 400, message: 'invalid JSON' },
  ADMIN_INVALID_DOMAIN: { status: 400, message: 'invalid domain' },
  ADMIN_INVALID_UPSTREAM: { status: 400, message: 'invalid upstream address' },
  ADMIN_INVALID_SOURCE: { status: 400, message: 'invalid source' },
  ADMIN_DUPLICATE_DOMAIN: { status: 400, message: 'duplicate domain' },
  ADMIN_MISSING_DOMAIN: { status: 400, message: 'missing domain' },
  ADMIN_INVALID_CACHE_KEY: { status: 400, message: 'invalid cache key' },
  ADMIN_INVALID_URL: { status: 400, message: 'invalid URL' },
  ADMIN_BAD_REQUEST: { status: 400, message: 'bad request' },
  ADMIN_INVALID_RANGE: { status: 400, message: 'invalid range' },
  ADMIN_INVALID_INTERVAL: { status: 400, message: 'invalid interval' },
  ADMIN_INVALID_DIMENSION: { status: 400, message: 'invalid dimension' },
  ADMIN_INVALID_LIMIT: { status: 400, message: 'invalid limit' },
  ADMIN_INVALID_FORMAT: { status: 400, message: 'invalid format' },
  ADMIN_UNAUTHORIZED: { status: 401, message: 'unauthorized' },
  ADMIN_NOT_FOUND: { status: 404, message: 'not found' },
  ADMIN_ROUTE_NOT_FOUND: { status: 404, message: 'route not found' },
  ADMIN_ANALYTICS_NOT_FOUND: { status: 404, message: 'no analytics for domain' },
  ADMIN_METRICS_DISABLED: { status: 404, message: 'metrics disabled' },
  ADMIN_STATS_NOT_FOUND: { status: 404, message: 'no history for domain' },
  ADMIN_METHOD_NOT_ALLOWED: { status: 405, message: 'method not allowed' },
  ADMIN_ROUTE_LIMIT: { status: 409, message: 'route limit reached' },
  ADMIN_REQUEST_TIMEOUT: { status: 408, message: 'request timeout' },
  ADMIN_BODY_TOO_LARGE: { status: 413, message: 'request body too large' },
  ADMIN_DOMAIN_TOO_LONG: { status: 414, message: 'domain segment too long' },
  ADMIN_EXPECTATION_FAILED: { status: 417, message: 'expectation failed' },
  ADMIN_HEADERS_TOO_LARGE: { status: 431, message: 'request header fields too large' },
  ADMIN_RATE_LIMITED: { status: 429, message: 'rate limit exceeded' },
  ADMIN_AUTH_THROTTLED: { status: 429, message: 'rate limit exceeded' },
  ADMIN_RELOAD_TOO_SOON: { status: 429, message: 'reload too soon' },
  ADMIN_SERIALIZE: { status: 500, message: 'serialize error' },
  ADMIN_INTERNAL: { status: 500, message: 'internal error' },
  ADMIN_RELOAD_NOT_SUPPORTED: { status: 501, message: 'reload not supported — config watcher not active' },
  ADMIN_CACHE_NOT_ENABLED: { status: 501, message: 'cache not enabled' },
  ADMIN_HISTORY_NOT_ENABLED: { status: 501, message: 'history not enabled' },
  ADMIN_STORAGE_UNAVAILABLE: { status: 503, message: 'storage unavailable' },
} as const satisfies Record<string, AdminErrorSpec>;

/** A stable admin error code (`ADMIN_…`). */
export type AdminErrorCode = keyof typeof ADMIN_ERRORS;

/** The one error class of the admin API: a code, its status, an optional detail and headers. */
export class AdminError extends Error {
  /** The stable code. */
  readonly code: AdminErrorCode;
  /** HTTP status, from the registry. */
  readonly statusCode: number;
  /** Extra response headers (e.g. `Allow`, `Retry-After`). */
  readonly headers: Readonly<Record<string, string>>;
  /** Extra envelope fields beside `error` (e.g. `retry_after`). */
  readonly extra: Readonly<Record<string, unknown>>;

  constructor(
    code: AdminErrorCode,
    detail?: string,
    options: { headers?: Record<string, string>; extra?: Record<string, unknown>; cause?: unknown } = {},
  ) {
    const spec = ADMIN_ERRORS[code];
    super(detail === undefined ? spec.message : `${spec.message}: ${detail}`, { cause: options.cause });
    this.name = 'AdminError';
    this.code = code;
    this.statusCode = spec.status;
    this.headers = options.headers ?? {};
    this.extra = options.extra ?? {};
  }
}

/** Quotes user input for an error detail, cut to 80 characters so echoes stay short. */
export function quote(value: string): string {
  const cut = value.length > 80 ? `${value.slice(0, 80)}…` : value;
  return JSON.stringify(cut);
}
