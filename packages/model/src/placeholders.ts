/**
 * The request placeholders (Caddy's) that `redir` targets, `header` and
 * `header_up` values and `respond` bodies may hold, resolved per request by
 * the data plane. Short forms and Caddy's long forms name the same value.
 */
export const REQUEST_PLACEHOLDERS = {
  /** Path and query as the client sent them (`/a?b=1`). */
  '{uri}': 'uri',
  '{http.request.uri}': 'uri',
  /** Host without port, lowercase. */
  '{host}': 'host',
  '{http.request.host}': 'host',
  /** Path as the client sent it, without the query. */
  '{path}': 'path',
  '{http.request.uri.path}': 'path',
  /** Query without `?` (empty when none). */
  '{query}': 'query',
  '{http.request.uri.query}': 'query',
  /** IP address of the connection's peer (not the X-Forwarded-For client). */
  '{remote_host}': 'remote_host',
  '{http.request.remote.host}': 'remote_host',
} as const;

/** What a request placeholder stands for. */
export type RequestPlaceholder = (typeof REQUEST_PLACEHOLDERS)[keyof typeof REQUEST_PLACEHOLDERS];

/** `redir`'s own placeholder: what the `*` of its `<from>` pattern matched. */
export const REMAINDER_PLACEHOLDER = '{http.request.uri.path.remainder}';

/**
 * What counts as a placeholder in text: `{` + a name of letters, digits,
 * `_`, `.` and `-` + `}`. Other braces (`{"ok":true}`, `{ }`) are text.
 */
export const PLACEHOLDER_PATTERN = /\{[A-Za-z_][A-Za-z0-9_.-]*\}/g;

/** Whether `text` holds a request placeholder (or the remainder) that the data plane resolves. */
export function hasRequestPlaceholder(text: string): boolean {
  if (text.indexOf('{') < 0) return false;
  for (const m of text.matchAll(PLACEHOLDER_PATTERN)) {
    if (m[0] in REQUEST_PLACEHOLDERS || m[0] === REMAINDER_PLACEHOLDER) return true;
  }
  return false;
}
