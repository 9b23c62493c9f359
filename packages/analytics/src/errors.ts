/**
 * The analytics error registry: every error this package throws has a stable
 * code and a message. `README.md` lists every code.
 */

/** Every error code of the analytics package, with its message. */
export const ANALYTICS_ERRORS = {
  ANALYTICS_SCRIPT_MISSING: 'the browser script asset is missing: run `pnpm --filter @proxyd/analytics build`',
  ANALYTICS_GEOIP_UNREADABLE: 'the GeoIP database cannot be read',
  ANALYTICS_BAD_OPTION: 'invalid analytics option',
  ANALYTICS_KEY_FILE: 'the analytics key file cannot be read or written',
  ANALYTICS_BAD_STATE: 'an analytics state has another version or shape',
} as const;

/** A stable analytics error code. */
export type AnalyticsErrorCode = keyof typeof ANALYTICS_ERRORS;

/** The one error type this package throws; `code` is stable. */
export class AnalyticsError extends Error {
  readonly code: AnalyticsErrorCode;

  constructor(code: AnalyticsErrorCode, detail?: string) {
    super(detail === undefined ? ANALYTICS_ERRORS[code] : `${ANALYTICS_ERRORS[code]}: ${detail}`);
    this.name = 'AnalyticsError';
    this.code = code;
  }
}
