import type { Handler, HeaderOp, Site } from '@proxyd/model';
import type { CacheRegistry } from '../cache/response-cache.js';
import { BasicAuthenticator, type BasicAuthOptions } from '../middleware/basic-auth.js';
import { ForwardAuthenticator } from '../middleware/forward-auth.js';
import { HeaderPlan } from '../middleware/header-plan.js';
import { PathPattern } from '../middleware/path-pattern.js';
import { CompiledRedirect } from '../middleware/redirect.js';
import { matcherOf, type RequestMatch } from '../middleware/request-matcher.js';
import { RequestRewrites } from '../middleware/rewrite.js';
import type { Forwarder } from '../pipeline.js';
import type { Block } from './block.js';
import { canned } from './canned.js';
import { compileTerminal, type ErrorHook, type Terminal } from './terminal.js';

/** What a block (the site, a `handle`, a `handle_errors`) holds that {@link compileBlock} compiles. */
export type BlockFields = Pick<
  Site,
  | 'basic_auth'
  | 'redirects'
  | 'handler'
  | 'matched_proxies'
  | 'matched_responses'
  | 'rewrites'
  | 'uri'
  | 'try_files'
  | 'forward_auth'
>;

/** What every block of one site is compiled with (built once per site by `compileSite`). */
export interface BlockEnv {
  /** The site's named matchers (`@name`), compiled. */
  readonly matchers: ReadonlyMap<string, RequestMatch>;
  /** The clock and the bcrypt check of `basic_auth`. */
  readonly authOptions: BasicAuthOptions;
  readonly forwarder: Forwarder;
  /** Where the `cache` step keeps its caches (undefined: the site does not cache). */
  readonly caches: CacheRegistry | undefined;
  /** The site's `handle_errors` hook (null: the site has none). */
  readonly errors: ErrorHook | null;
}

/**
 * Compiles one block (the site itself, a `handle`/`handle_path`, a
 * `handle_errors`) into a {@link Block}: its header plan, `basic_auth`,
 * redirects, rewrites, `forward_auth` and terminal handler (`… @name`
 * handlers first). `errorRoute`: a `handle_errors` block, whose own errors
 * are proxyd's plain answers (no second error route).
 */
export function compileBlock(
  env: BlockEnv,
  pattern: string | null,
  strip: boolean,
  ops: readonly HeaderOp[],
  fields: BlockFields,
  match: RequestMatch | null,
  errorRoute = false,
): Block {
  const { matchers, authOptions, forwarder, caches, errors } = env;
  const headers = new HeaderPlan(ops, matchers);
  const auth = fields.basic_auth === null ? null : new BasicAuthenticator(fields.basic_auth, authOptions);
  const hook = errorRoute ? null : errors;
  // `reverse_proxy { header_down … }`: its ops run on the upstream's headers before the block's.
  const planFor = (h: Handler | null): HeaderPlan =>
    h?.kind === 'reverse_proxy' && h.header_down !== undefined && h.header_down.length > 0
      ? new HeaderPlan([...h.header_down, ...ops], matchers)
      : headers;
  // `respond @name …` / `abort @name` before `reverse_proxy @name …` (Caddy's directive order).
  const proxies = [...(fields.matched_responses ?? []), ...(fields.matched_proxies ?? [])].map((p) => ({
    match: matcherOf(matchers, p.matcher) as RequestMatch,
    handler: p.handler,
    terminal: compileTerminal(p.handler, planFor(p.handler), forwarder, caches, hook, errorRoute),
  }));
  const own = compileTerminal(fields.handler, planFor(fields.handler), forwarder, caches, hook, errorRoute);
  const rewrites = new RequestRewrites(fields, matchers);
  // `… @name`: the first whose matcher matches answers, else the block's own handler.
  const terminal: Terminal =
    proxies.length === 0
      ? own
      : (req, res, ctx, path) => {
          for (const p of proxies) {
            if (p.match.matches(req, ctx)) {
              p.terminal(req, res, ctx, path);
              return;
            }
          }
          own(req, res, ctx, path);
        };
  return {
    pattern: new PathPattern(pattern),
    strip,
    headers,
    auth,
    unauthorized: auth === null ? null : canned(headers, 401, 'unauthorized\n', { 'www-authenticate': auth.challenge }),
    redirects: fields.redirects.map((r) => new CompiledRedirect(r, matchers)),
    handler: fields.handler,
    terminal,
    rewrites: rewrites.empty ? null : rewrites,
    forwardAuth: fields.forward_auth === undefined ? null : new ForwardAuthenticator(fields.forward_auth, matchers),
    match,
    proxies,
  };
}
