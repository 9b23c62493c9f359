import { SITE_DIRECTIVES } from '@proxyd/model';
import { abort } from './abort.js';
import { analytics } from './analytics.js';
import { basicAuth } from './basic-auth.js';
import { bind } from './bind.js';
import { cache } from './cache.js';
import type { Directive } from './directive.js';
import { encode } from './encode.js';
import { fileServer, root } from './file-server.js';
import { forwardAuth } from './forward-auth.js';
import { handle, handlePath } from './handle.js';
import { handleErrors } from './handle-errors.js';
import { header } from './header.js';
import { log } from './log.js';
import { rateLimit } from './rate-limit.js';
import { redir } from './redir.js';
import { respond } from './respond.js';
import { reverseProxy } from './reverse-proxy.js';
import { rewrite } from './rewrite.js';
import { tls } from './tls.js';
import { tryFiles } from './try-files.js';
import { underAttack } from './under-attack.js';
import { uri } from './uri.js';

/** Every directive parser, in no particular order. */
const PARSERS: readonly Directive[] = [
  bind,
  tls,
  analytics,
  log,
  header,
  encode,
  underAttack,
  rateLimit,
  basicAuth,
  forwardAuth,
  redir,
  rewrite,
  uri,
  tryFiles,
  handle,
  handlePath,
  cache,
  root,
  fileServer,
  abort,
  respond,
  reverseProxy,
  handleErrors,
];

/**
 * Every directive, in the order the data plane applies them: proxy-core's
 * `SITE_DIRECTIVES` (the site steps' order), whatever order a file writes
 * them in. `index.test.ts` checks that every parser has a step there and
 * every step's directive a parser here.
 */
export const DIRECTIVES: readonly Directive[] = SITE_DIRECTIVES.flatMap(({ name }) =>
  PARSERS.filter((d) => d.name === name),
);

/** Directives by name; `basicauth` is Caddy's older spelling of `basic_auth`. */
export const DIRECTIVE_BY_NAME: ReadonlyMap<string, Directive> = new Map([
  ...DIRECTIVES.map((d) => [d.name, d] as const),
  ['basicauth', basicAuth],
]);
