/** Exit status of a command that ran and failed (a bad Proxyfile, a refused reload). */
export const EXIT_FAILURE = 1;
/** Exit status of a command used wrongly (unknown option, missing file argument, bad flag value). */
export const EXIT_USAGE = 2;

/**
 * A command used wrongly: the message is printed as one line,
 * `proxyd: <message>`, and the process exits with {@link EXIT_USAGE}.
 */
export class UsageError extends Error {
  override readonly name = 'UsageError';
  readonly exitCode = EXIT_USAGE;
}

/** What to do when a port below 1024 cannot be bound (one sentence, no line break). */
export const PRIVILEGED_PORT_HINT =
  'ports below 1024 need a privilege: grant it to node with `sudo setcap cap_net_bind_service=+ep $(readlink -f $(which node))`, run as root, use the systemd unit (AmbientCapabilities=CAP_NET_BIND_SERVICE), or set http_port/https_port (and admin) above 1024 in the Proxyfile';

interface SystemErrorLike {
  code?: unknown;
  syscall?: unknown;
  address?: unknown;
  port?: unknown;
  message?: unknown;
}

/**
 * The port of a `listen EACCES` error below 1024, else null. Reads the
 * error's `port` field, or the message (`listen EACCES: permission denied
 * 0.0.0.0:80`) when the error crossed a process boundary without its fields.
 */
function privilegedPort(err: SystemErrorLike): { address: string; port: number } | null {
  if (err.code === 'EACCES' && err.syscall === 'listen' && typeof err.port === 'number') {
    return err.port > 0 && err.port < 1024 ? { address: String(err.address ?? ''), port: err.port } : null;
  }
  const m = /listen EACCES: permission denied (\S*?):(\d+)\b/.exec(String(err.message ?? ''));
  if (!m) return null;
  const port = Number(m[2]);
  return port > 0 && port < 1024 ? { address: m[1] as string, port } : null;
}

/**
 * The one line printed for an error that ends a command: `proxyd: <message>`,
 * the message's lines joined with "; " (never a stack trace). A Proxyfile
 * error is printed as the compiler prints it, `file:line:column: detail`,
 * without the prefix. A `listen EACCES` on a port below 1024 says how to get
 * the privilege.
 */
export function errorLine(err: unknown): string {
  const e = (typeof err === 'object' && err !== null ? err : {}) as SystemErrorLike;
  const port = privilegedPort(e);
  if (port) {
    const where = port.address
      ? `${port.address.includes(':') ? `[${port.address}]` : port.address}:${port.port}`
      : port.port;
    return `proxyd: cannot listen on ${where}: permission denied; ${PRIVILEGED_PORT_HINT}`;
  }
  const message = err instanceof Error ? err.message : String(err);
  const text = message
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '')
    .join('; ');
  if (err instanceof Error && err.name === 'ProxyfileError') return text;
  return `proxyd: ${text.replace(/^proxyd: /, '')}`;
}

/** The exit status for an error that ends a command: {@link EXIT_USAGE} for usage errors, else 1. */
export function exitCodeOf(err: unknown): number {
  if (err instanceof UsageError) return EXIT_USAGE;
  const code = (err as { exitCode?: unknown } | null)?.exitCode;
  return typeof code === 'number' && code > 0 ? code : EXIT_FAILURE;
}
