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
  /** The client's IP after `trusted_proxies` (the X-Forwarded-For client when the peer is trusted). */
  '{client_ip}': 'client_ip',
  '{http.vars.client_ip}': 'client_ip',
  /** `http` or `https`: the scheme the client used. */
  '{scheme}': 'scheme',
  '{http.request.scheme}': 'scheme',
  /** In `handle_errors`: the error's status code (empty outside an error). */
  '{err.status_code}': 'err_status_code',
  '{http.error.status_code}': 'err_status_code',
  /** In `handle_errors`: the status's reason phrase (`Not Found`). */
  '{err.status_text}': 'err_status_text',
  '{http.error.status_text}': 'err_status_text',
  /** In `handle_errors`: proxyd's short message for the error (`no healthy upstream`). */
  '{err.message}': 'err_message',
  '{http.error.message}': 'err_message',
} as const;

/** What a request placeholder stands for. */
export type RequestPlaceholder = (typeof REQUEST_PLACEHOLDERS)[keyof typeof REQUEST_PLACEHOLDERS];

/**
 * The placeholders that take a name after their prefix (Caddy's), short and
 * long forms: `{header.<Field>}` (the request header's value, several lines
 * joined with `, `; empty when absent), `{query.<key>}` (the first value of
 * the query key, percent-decoded; empty when absent), `{re.<name>.<group>}`
 * (a capture of the regexp matcher `<name>` that matched this request, by
 * number or group name; `{re.<group>}` the last regexp that matched).
 */
export const PREFIXED_PLACEHOLDERS = {
  'header.': 'header',
  'http.request.header.': 'header',
  'query.': 'query_param',
  'http.request.uri.query.': 'query_param',
  're.': 'regexp',
  'http.regexp.': 'regexp',
} as const;

/** What a prefixed placeholder stands for. */
export type PrefixedPlaceholder = (typeof PREFIXED_PLACEHOLDERS)[keyof typeof PREFIXED_PLACEHOLDERS];

/** A placeholder read from its text: a fixed one, or a prefixed one with its argument. */
export type PlaceholderRef =
  | { readonly kind: RequestPlaceholder }
  | { readonly kind: 'header' | 'query_param'; readonly arg: string }
  | { readonly kind: 'regexp'; readonly name: string; readonly group: string };

/**
 * Reads a placeholder (`{…}` included), or null when it is not a request
 * placeholder. `{re.a.1}` is matcher `a`'s group 1; `{re.1}` group 1 of the
 * last regexp that matched.
 */
export function requestPlaceholder(text: string): PlaceholderRef | null {
  const fixed = (REQUEST_PLACEHOLDERS as Record<string, RequestPlaceholder>)[text];
  if (fixed !== undefined) return { kind: fixed };
  const inner = text.slice(1, -1);
  for (const [prefix, kind] of Object.entries(PREFIXED_PLACEHOLDERS) as [string, PrefixedPlaceholder][]) {
    if (!inner.startsWith(prefix) || inner.length === prefix.length) continue;
    const arg = inner.slice(prefix.length);
    if (kind !== 'regexp') return { kind, arg };
    const dot = arg.lastIndexOf('.');
    const group = arg.slice(dot + 1);
    if (group.length === 0 || dot === 0) return null;
    return { kind, name: dot < 0 ? '' : arg.slice(0, dot), group };
  }
  return null;
}

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
    if (m[0] === REMAINDER_PLACEHOLDER || requestPlaceholder(m[0]) !== null) return true;
  }
  return false;
}
