/** Stable codes of the data plane's errors (the route store keeps its own in `store/errors.ts`). */
export const DataPlaneErrorCode = {
  /** A `trusted_proxies` entry is not an IP address or CIDR. */
  INVALID_CIDR: 'PROXY_INVALID_CIDR',
  /** A certificate or key file could not be read or parsed. */
  CERT_LOAD_FAILED: 'PROXY_CERT_LOAD_FAILED',
  /** An upstream `ca_file` could not be read. */
  CA_LOAD_FAILED: 'PROXY_CA_LOAD_FAILED',
} as const;
export type DataPlaneErrorCode = (typeof DataPlaneErrorCode)[keyof typeof DataPlaneErrorCode];

/** The data plane's error class: a stable `code`, a message and an optional cause. */
export class DataPlaneError extends Error {
  readonly code: DataPlaneErrorCode;

  constructor(code: DataPlaneErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'DataPlaneError';
    this.code = code;
  }
}
