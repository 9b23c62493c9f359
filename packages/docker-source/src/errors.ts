/** Stable codes of the docker-source package's errors. */
export const DockerErrorCode = {
  /** A runtime host given by `--docker-host` or `DOCKER_HOST` is not `unix://<path>`, `tcp://<host>:<port>` or an absolute socket path. */
  INVALID_HOST: 'DOCKER_INVALID_HOST',
  /** The runtime socket did not answer (connection refused, socket missing, timeout); the message carries the OS error. */
  UNREACHABLE: 'DOCKER_UNREACHABLE',
  /** The runtime answered a request with an error status; the message carries the status and the runtime's message. */
  API_ERROR: 'DOCKER_API_ERROR',
  /** The event stream ended or failed; the watcher keeps its routes and reconnects. */
  STREAM_ENDED: 'DOCKER_STREAM_ENDED',
  /** A call after `close()` / `stop()`. */
  CLOSED: 'DOCKER_CLOSED',
} as const;
export type DockerErrorCode = (typeof DockerErrorCode)[keyof typeof DockerErrorCode];

/** The one error class of the docker-source package: a stable `code`, a message, an optional HTTP `status` of the runtime's answer and a cause. */
export class DockerSourceError extends Error {
  readonly code: DockerErrorCode;
  /** The runtime's HTTP status, for `DOCKER_API_ERROR`. */
  readonly status: number | undefined;

  constructor(code: DockerErrorCode, message: string, options?: { cause?: unknown; status?: number }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'DockerSourceError';
    this.code = code;
    this.status = options?.status;
  }
}
