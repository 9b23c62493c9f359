/** Stable codes of every Proxyfile error. */
export const ProxyfileErrorCode = {
  UNEXPECTED_TOKEN: 'PROXYFILE_UNEXPECTED_TOKEN',
  UNKNOWN_DIRECTIVE: 'PROXYFILE_UNKNOWN_DIRECTIVE',
  INVALID_VALUE: 'PROXYFILE_INVALID_VALUE',
} as const;
export type ProxyfileErrorCode = (typeof ProxyfileErrorCode)[keyof typeof ProxyfileErrorCode];

/** Where an error was found: file name, 1-based line and column. */
export interface Position {
  file: string;
  line: number;
  column: number;
}

/** A Proxyfile that cannot be compiled; the message names `file:line:column`. */
export class ProxyfileError extends Error {
  override readonly name = 'ProxyfileError';
  readonly code: ProxyfileErrorCode;
  readonly position: Position;

  constructor(code: ProxyfileErrorCode, position: Position, detail: string, options?: ErrorOptions) {
    super(`${position.file}:${position.line}:${position.column}: ${detail}`, options);
    this.code = code;
    this.position = position;
  }
}
