/**
 * The order in which the data plane applies a site's directives, whatever
 * order a Proxyfile writes them in: the one table the site pipeline
 * (proxy-core `site-handler.ts`), the Proxyfile's directive list and the
 * README follow.
 *
 * - `front_door`: before the site's steps — `bind` (the local addresses the
 *   site answers on), `tls` (the HTTP→HTTPS redirect
 *   and the certificate) and `analytics` (its reserved `/_proxyd/*` paths
 *   answered by `hooks.intercept`; counting and injection apply to the
 *   response), `log` (the site's access log: one line per request the
 *   site answered, whatever step answered it).
 * - `headers`: the security headers and `header` ops, compiled once and
 *   applied to every response the site writes (its own answers included).
 * - `encode`: wraps the response, so every answer below (the site's own,
 *   cached, proxied after analytics injection) is compressed on its way out.
 * - `under_attack`, `rate_limit`, `basic_auth` (the site's), `forward_auth`
 *   (the site's: the auth server's subrequest, after basic_auth as in
 *   Caddy), `redir` (the site's, first matching `from` in file order).
 * - `rewrite`: the site's `rewrite` (the first that matches), `uri` edits,
 *   then `try_files` (Caddy's order); a `handle` block's own run after its
 *   `redir`.
 * - `handle`: `handle` / `handle_path` selection (most specific pattern
 *   first), then the chosen block's own `basic_auth`, `forward_auth` and
 *   `redir`.
 * - `cache`: in front of `reverse_proxy`.
 * - `terminal`: `file_server` (with `root`), `abort`, `respond` or
 *   `reverse_proxy`; none: 404. A block's `abort @name` and `respond @name`
 *   are tried before its `reverse_proxy @name`, then its own handler
 *   (Caddy's order: abort, respond, reverse_proxy). `handle_errors` blocks
 *   answer instead of the errors proxyd produces there (404, 403, 502,
 *   503, 504, `try_files =<status>`).
 */
export const SITE_STEP_ORDER = [
  'front_door',
  'headers',
  'encode',
  'under_attack',
  'rate_limit',
  'basic_auth',
  'forward_auth',
  'redir',
  'rewrite',
  'handle',
  'cache',
  'terminal',
] as const;

/** One step of {@link SITE_STEP_ORDER}. */
export type SiteStepName = (typeof SITE_STEP_ORDER)[number];

/**
 * Every site directive with the step that applies it, in data-plane order
 * (steps as in {@link SITE_STEP_ORDER}; within a step, the order the
 * Proxyfile lists them in).
 */
export const SITE_DIRECTIVES: readonly { readonly name: string; readonly step: SiteStepName }[] = [
  { name: 'bind', step: 'front_door' },
  { name: 'tls', step: 'front_door' },
  { name: 'analytics', step: 'front_door' },
  { name: 'log', step: 'front_door' },
  { name: 'header', step: 'headers' },
  { name: 'encode', step: 'encode' },
  { name: 'under_attack', step: 'under_attack' },
  { name: 'rate_limit', step: 'rate_limit' },
  { name: 'basic_auth', step: 'basic_auth' },
  { name: 'forward_auth', step: 'forward_auth' },
  { name: 'redir', step: 'redir' },
  { name: 'rewrite', step: 'rewrite' },
  { name: 'uri', step: 'rewrite' },
  { name: 'try_files', step: 'rewrite' },
  { name: 'handle', step: 'handle' },
  { name: 'handle_path', step: 'handle' },
  { name: 'cache', step: 'cache' },
  { name: 'root', step: 'terminal' },
  { name: 'file_server', step: 'terminal' },
  { name: 'abort', step: 'terminal' },
  { name: 'respond', step: 'terminal' },
  { name: 'reverse_proxy', step: 'terminal' },
  { name: 'handle_errors', step: 'terminal' },
];
