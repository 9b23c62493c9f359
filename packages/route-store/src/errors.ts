/** Stable codes of the route store's errors. */
export const StoreErrorCode = {
  /** An upstream is not a valid `host:port`. */
  INVALID_UPSTREAM: 'STORE_INVALID_UPSTREAM',
  /** The state file could not be written; the write was not applied. */
  PERSIST_FAILED: 'STORE_PERSIST_FAILED',
  /** The state file could not be read (other than a missing or corrupt file). */
  LOAD_FAILED: 'STORE_LOAD_FAILED',
  /** The write would take the table past its route limit (`MAX_ROUTES`); nothing of it was applied. */
  ROUTE_LIMIT: 'STORE_ROUTE_LIMIT',
  /** With `storage redis`: the fleet's storage does not answer; the write was not applied (anywhere). */
  FLEET_UNAVAILABLE: 'STORE_FLEET_UNAVAILABLE',
  /** The store was closed; no more writes are accepted. */
  CLOSED: 'STORE_CLOSED',
} as const;
export type StoreErrorCode = (typeof StoreErrorCode)[keyof typeof StoreErrorCode];

/** The one error class of the route store: a stable `code`, a message and an optional cause. */
export class StoreError extends Error {
  readonly code: StoreErrorCode;

  constructor(code: StoreErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreError';
    this.code = code;
  }
}
