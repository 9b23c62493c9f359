import type { RequestRecord } from '@proxyd/model';
import type { LogFilter, Logging } from './logging.js';

/** The log target of the access log. */
export const ACCESS_TARGET = 'proxy::access';

/** The levels that turn the access log on: info and below. */
const ENABLING = new Set(['trace', 'debug', 'info']);

/**
 * Whether `filter` turns the access log on: only a `PROXY_LOG` directive
 * naming `proxy::access` (or a target above it, such as `proxy`) at `info`
 * or lower does; the default level never does, so `PROXY_LOG` unset, or
 * `info`, or `debug`, keeps it off.
 */
export function accessLogEnabled(filter: LogFilter): boolean {
  // filter.targets is sorted longest first: the first match is the most specific directive.
  for (const d of filter.targets) {
    if (ACCESS_TARGET === d.target || ACCESS_TARGET.startsWith(`${d.target}::`)) return ENABLING.has(d.level);
  }
  return false;
}

/**
 * The access log as an `onRequest` consumer: one JSON line per finished
 * request, target `proxy::access`, level info, message `request`, with
 * `client_ip` (the real client, after `trusted_proxies`), `host`, `method`,
 * `path` (no query string), `status` (0 when no header went out), `bytes`
 * (body bytes sent), `duration_ms`, `protocol` (`h1` or `h2`), `user_agent`
 * and `referer` (null when absent).
 *
 * Returns undefined when {@link accessLogEnabled} is false, so that the
 * daemon registers no hook and a request costs nothing for it.
 */
export function createAccessLog(logging: Logging): ((record: RequestRecord) => void) | undefined {
  if (!accessLogEnabled(logging.filter)) return undefined;
  const log = logging.forTarget(ACCESS_TARGET);
  return (r) => {
    log.info(
      {
        client_ip: r.clientIp,
        host: r.host,
        method: r.method,
        path: r.path,
        status: r.status,
        bytes: r.bytesSent,
        duration_ms: r.durationMs,
        protocol: r.protocol ?? 'h1',
        user_agent: r.userAgent ?? null,
        referer: r.referer ?? null,
      },
      'request',
    );
  };
}
