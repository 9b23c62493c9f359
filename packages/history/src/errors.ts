/**
 * The history error registry: every error this package throws has a stable
 * code and a message. `README.md` lists every code (a test checks that).
 */

/** Every error code of the history package, with its message. */
export const HISTORY_ERRORS = {
  HISTORY_BAD_OPTION: 'invalid history option',
  HISTORY_BAD_RANGE: 'invalid range',
  HISTORY_BAD_INTERVAL: 'invalid interval',
  HISTORY_BAD_DIMENSION: 'invalid dimension',
  HISTORY_TOO_MANY_POINTS: 'too many points',
  HISTORY_CLOSED: 'the history database is closed',
  HISTORY_UNREADABLE: 'the history database cannot be opened',
} as const;

/** A stable history error code. */
export type HistoryErrorCode = keyof typeof HISTORY_ERRORS;

/** The one error type this package throws; `code` is stable. */
export class HistoryError extends Error {
  readonly code: HistoryErrorCode;

  constructor(code: HistoryErrorCode, detail?: string, options?: { cause?: unknown }) {
    super(detail === undefined ? HISTORY_ERRORS[code] : `${HISTORY_ERRORS[code]}: ${detail}`, options);
    this.name = 'HistoryError';
    this.code = code;
  }
}
