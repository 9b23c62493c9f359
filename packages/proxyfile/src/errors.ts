/**
 * The one registry of Proxyfile error codes. Every code is stable (scripts may
 * match on it) and documented in the package README; a test checks both.
 */
export const ProxyfileErrorCode = {
  /** A token where another was expected (syntax). */
  UNEXPECTED_TOKEN: 'PROXYFILE_UNEXPECTED_TOKEN',
  /** The line or the file ended where more was expected. */
  UNEXPECTED_END: 'PROXYFILE_UNEXPECTED_END',
  /** A quoted string that never closes. */
  UNTERMINATED_QUOTE: 'PROXYFILE_UNTERMINATED_QUOTE',
  /** A directive name nobody knows (the message suggests the nearest one). */
  UNKNOWN_DIRECTIVE: 'PROXYFILE_UNKNOWN_DIRECTIVE',
  /** A directive in a block where it has no meaning (e.g. `tls` inside `handle`). */
  DIRECTIVE_NOT_ALLOWED: 'PROXYFILE_DIRECTIVE_NOT_ALLOWED',
  /** A directive (or a second terminal handler) repeated in one block. */
  DUPLICATE_DIRECTIVE: 'PROXYFILE_DUPLICATE_DIRECTIVE',
  /** An option of the global block nobody knows. */
  UNKNOWN_GLOBAL_OPTION: 'PROXYFILE_UNKNOWN_GLOBAL_OPTION',
  /** A value of the wrong form (port, duration, size, status, path…). */
  INVALID_VALUE: 'PROXYFILE_INVALID_VALUE',
  /** A site address that is not `[scheme://]host[:port]` with a valid domain. */
  INVALID_SITE_ADDRESS: 'PROXYFILE_INVALID_SITE_ADDRESS',
  /** A `@name` that the site block does not define. */
  UNKNOWN_MATCHER: 'PROXYFILE_UNKNOWN_MATCHER',
  /** The same host in two site addresses. */
  DUPLICATE_SITE_ADDRESS: 'PROXYFILE_DUPLICATE_SITE_ADDRESS',
  /** An upstream that is not `host:port` (or `http(s)://host[:port]`). */
  INVALID_UPSTREAM: 'PROXYFILE_INVALID_UPSTREAM',
  /** A rate limit that is not `<n>/s`. */
  INVALID_RATE_LIMIT: 'PROXYFILE_INVALID_RATE_LIMIT',
  /** A basic_auth password that is not a bcrypt hash. */
  INVALID_BCRYPT_HASH: 'PROXYFILE_INVALID_BCRYPT_HASH',
  /** A redirect status other than 301, 302, 303, 307, 308. */
  INVALID_REDIRECT_STATUS: 'PROXYFILE_INVALID_REDIRECT_STATUS',
  /** An import that cannot be read (missing file, unknown snippet). */
  IMPORT_FAILED: 'PROXYFILE_IMPORT_FAILED',
  /** Imports that import themselves; the message names the chain. */
  IMPORT_CYCLE: 'PROXYFILE_IMPORT_CYCLE',
  /** A snippet `(name)` defined twice. */
  DUPLICATE_SNIPPET: 'PROXYFILE_DUPLICATE_SNIPPET',
  /** Imports that expand past 1,000,000 tokens, or blocks nested more than 100 deep. */
  TOO_LARGE: 'PROXYFILE_TOO_LARGE',
} as const;
export type ProxyfileErrorCode = (typeof ProxyfileErrorCode)[keyof typeof ProxyfileErrorCode];

/** Where an error was found: file name, 1-based line and column (a tab counts as one column). */
export interface Position {
  file: string;
  line: number;
  column: number;
}

/** A Proxyfile that cannot be compiled; the message starts with `file:line:column: `. */
export class ProxyfileError extends Error {
  override readonly name = 'ProxyfileError';
  /** Stable code from {@link ProxyfileErrorCode}. */
  readonly code: ProxyfileErrorCode;
  /** Where the problem is. */
  readonly position: Position;
  /** The message without the position prefix. */
  readonly detail: string;

  constructor(code: ProxyfileErrorCode, position: Position, detail: string, options?: ErrorOptions) {
    super(`${position.file}:${position.line}:${position.column}: ${detail}`, options);
    this.code = code;
    this.position = position;
    this.detail = detail;
  }
}
