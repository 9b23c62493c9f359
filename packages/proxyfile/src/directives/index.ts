import { analytics } from './analytics.js';
import { basicAuth } from './basic-auth.js';
import { cache } from './cache.js';
import type { Directive } from './directive.js';
import { fileServer, root } from './file-server.js';
import { handle, handlePath } from './handle.js';
import { header } from './header.js';
import { rateLimit } from './rate-limit.js';
import { redir } from './redir.js';
import { respond } from './respond.js';
import { reverseProxy } from './reverse-proxy.js';
import { tls } from './tls.js';
import { underAttack } from './under-attack.js';

/**
 * Every directive, in the order the data plane applies them (proxy-core's
 * middleware order), whatever order a file writes them in.
 */
export const DIRECTIVES: readonly Directive[] = [
  tls,
  underAttack,
  rateLimit,
  basicAuth,
  redir,
  header,
  cache,
  analytics,
  handle,
  handlePath,
  root,
  fileServer,
  respond,
  reverseProxy,
];

/** Directives by name; `basicauth` is Caddy's older spelling of `basic_auth`. */
export const DIRECTIVE_BY_NAME: ReadonlyMap<string, Directive> = new Map([
  ...DIRECTIVES.map((d) => [d.name, d] as const),
  ['basicauth', basicAuth],
]);
