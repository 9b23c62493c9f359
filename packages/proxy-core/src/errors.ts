/**
 * The data plane's error registry: every code this package throws, or sets on
 * an error it destroys a socket with, is declared here; `README.md` documents
 * every code (a test checks that). The route store keeps its own registry in
 * `@proxyd/route-store`.
 */
export const DataPlaneErrorCode = {
  /** A `trusted_proxies` entry is not an IP address or CIDR. */
  INVALID_CIDR: 'PROXY_INVALID_CIDR',
  /** A certificate or key file could not be read or parsed. */
  CERT_LOAD_FAILED: 'PROXY_CERT_LOAD_FAILED',
  /** An upstream `ca_file` could not be read. */
  CA_LOAD_FAILED: 'PROXY_CA_LOAD_FAILED',
  /** An upstream connect took longer than the forwarder's `connectTimeoutMs` (default 5 s; the client gets 504, the member leaves the rotation). */
  CONNECT_TIMEOUT: 'PROXY_CONNECT_TIMEOUT',
  /** An upstream socket stayed silent longer than `idleTimeoutMs` (default 60 s; the client gets 504). */
  IDLE_TIMEOUT: 'PROXY_IDLE_TIMEOUT',
} as const;
/** A stable data-plane error code (`PROXY_…`). */
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
