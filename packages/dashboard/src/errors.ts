/**
 * The dashboard's error registry: every error its listener answers with has a
 * stable code, an HTTP status and a message; the body is the admin API's
 * envelope `{error}` (`<message>` or `<message>: <detail>`). Routes and hooks
 * only throw `DashboardError`; one error handler (`app.ts`) writes it.
 * `README.md` documents every code (a test checks that).
 */

/** One registry entry: the status and the message prefix of a code. */
export interface DashboardErrorSpec {
  readonly status: number;
  readonly message: string;
}

/** Every error code of the dashboard, with its status and message. */
export const DASHBOARD_ERRORS = {
  DASHBOARD_BAD_REQUEST: { status: 400, message: 'bad request' },
  DASHBOARD_INVALID_DOMAIN: { status: 400, message: 'invalid domain' },
  DASHBOARD_INVALID_RANGE: { status: 400, message: 'invalid range' },
  DASHBOARD_INVALID_INTERVAL: { status: 400, message: 'invalid interval' },
  DASHBOARD_INVALID_DIMENSION: { status: 400, message: 'invalid dimension' },
  DASHBOARD_INVALID_LIMIT: { status: 400, message: 'invalid limit' },
  DASHBOARD_UNAUTHORIZED: { status: 401, message: 'unauthorized' },
  DASHBOARD_NOT_FOUND: { status: 404, message: 'not found' },
  DASHBOARD_UNKNOWN_DOMAIN: { status: 404, message: 'unknown domain' },
  DASHBOARD_METHOD_NOT_ALLOWED: { status: 405, message: 'method not allowed' },
  DASHBOARD_INTERNAL: { status: 500, message: 'internal error' },
  DASHBOARD_ASSETS_MISSING: { status: 500, message: 'dashboard assets missing' },
  DASHBOARD_HISTORY_OFF: { status: 501, message: 'history not enabled' },
  DASHBOARD_AUTH_BUSY: { status: 503, message: 'too many password checks in progress' },
} as const satisfies Record<string, DashboardErrorSpec>;

/** A stable dashboard error code (`DASHBOARD_…`). */
export type DashboardErrorCode = keyof typeof DASHBOARD_ERRORS;

/** The one error class of the dashboard: a code, its status, an optional detail and headers. */
export class DashboardError extends Error {
  readonly code: DashboardErrorCode;
  readonly statusCode: number;
  /** Extra response headers (`Allow`, `Retry-After`, `WWW-Authenticate`). */
  readonly headers: Readonly<Record<string, string>>;

  constructor(
    code: DashboardErrorCode,
    detail?: string,
    options: { headers?: Record<string, string>; cause?: unknown } = {},
  ) {
    const spec = DASHBOARD_ERRORS[code];
    super(detail === undefined ? spec.message : `${spec.message}: ${detail}`, { cause: options.cause });
    this.name = 'DashboardError';
    this.code = code;
    this.statusCode = spec.status;
    this.headers = options.headers ?? {};
  }
}
