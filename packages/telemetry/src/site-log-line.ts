import type { RequestRecord } from '@proxyd/model';

/** The `logger` of every site access line (Caddy names its access loggers `http.log.access…`). */
export const SITE_LOG_LOGGER = 'http.log.access';

/**
 * One access line of a site's `log`, Caddy's JSON shape, ending in `\n`:
 *
 * ```json
 * {"level":"info","ts":1764038852.123,"logger":"http.log.access","msg":"handled request",
 *  "request":{"client_ip":"203.0.113.7","proto":"HTTP/1.1","method":"GET","host":"a.example.com",
 *  "uri":"/path","headers":{"User-Agent":["curl/8.5.0"],"Referer":["https://b.example/"]}},
 *  "bytes_read":0,"duration":0.004,"size":512,"status":200,"resp_headers":{"Content-Type":["text/html"]}}
 * ```
 *
 * - `ts`: when the response finished, seconds since the epoch (µs precision).
 * - `client_ip`: the real client, after `trusted_proxies` (Caddy's
 *   `remote_ip`, the peer address, is not written: the data plane's record
 *   carries the client only).
 * - `proto`: `HTTP/1.1` for any HTTP/1.x request, `HTTP/2.0` for HTTP/2.
 * - `uri`: the path without the query string (queries often carry tokens).
 * - `headers`: only `User-Agent` and `Referer`, when sent; never
 *   `Authorization`, `Cookie` or any other header.
 * - `bytes_read`: the request body's `Content-Length` (0 without one, a
 *   chunked body included: the data plane does not count a body it streams).
 * - `duration`: seconds (µs precision); `size`: body bytes sent; `status`: 0
 *   when the client went away before a header went out.
 */
export function formatSiteLogLine(r: RequestRecord): string {
  let headers = '';
  if (r.userAgent !== undefined) headers = `"User-Agent":[${JSON.stringify(r.userAgent)}]`;
  if (r.referer !== undefined) headers += `${headers === '' ? '' : ','}"Referer":[${JSON.stringify(r.referer)}]`;
  const resp = r.contentType === undefined ? '' : `,"resp_headers":{"Content-Type":[${JSON.stringify(r.contentType)}]}`;
  return (
    `{"level":"info","ts":${micros(r.startedAt + r.durationMs)},"logger":"${SITE_LOG_LOGGER}","msg":"handled request",` +
    `"request":{"client_ip":${JSON.stringify(r.clientIp)},"proto":"${r.protocol === 'h2' ? 'HTTP/2.0' : 'HTTP/1.1'}",` +
    `"method":${JSON.stringify(r.method)},"host":${JSON.stringify(r.host)},"uri":${JSON.stringify(r.path)},` +
    `"headers":{${headers}}},"bytes_read":${r.bytesReceived ?? 0},"duration":${micros(r.durationMs)},"size":${r.bytesSent},"status":${r.status}${resp}}\n`
  );
}

/** Milliseconds as seconds, rounded to the microsecond (no float noise such as 0.0003261720000000423). */
function micros(ms: number): number {
  return Math.round(ms * 1000) / 1e6;
}
