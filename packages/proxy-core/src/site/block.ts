import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { AbortHandler, Handler, RespondHandler, ReverseProxyHandler } from '@proxyd/model';
import type { RequestContext } from '../hooks.js';
import type { BasicAuthenticator } from '../middleware/basic-auth.js';
import type { ForwardAuthenticator } from '../middleware/forward-auth.js';
import type { HeaderPlan } from '../middleware/header-plan.js';
import type { PathPattern } from '../middleware/path-pattern.js';
import type { CompiledRedirect } from '../middleware/redirect.js';
import type { RequestMatch } from '../middleware/request-matcher.js';
import type { RequestRewrites } from '../middleware/rewrite.js';
import { type Canned, send } from './canned.js';
import type { Terminal } from './terminal.js';

/** One block (the site itself, or a `handle`/`handle_path`), compiled. */
export interface Block {
  readonly pattern: PathPattern;
  /** `handle_path`: strip the pattern's prefix before the handler sees the path. */
  readonly strip: boolean;
  readonly headers: HeaderPlan;
  readonly auth: BasicAuthenticator | null;
  readonly unauthorized: Canned | null;
  readonly redirects: readonly CompiledRedirect[];
  readonly handler: Handler | null;
  readonly terminal: Terminal;
  /** The block's `forward_auth` (null: none). */
  readonly forwardAuth: ForwardAuthenticator | null;
  /** The block's `rewrite`, `uri` and `try_files` (null: none). */
  readonly rewrites: RequestRewrites | null;
  /** `handle @name`: the site matcher that must match too (null: the pattern decides). */
  readonly match: RequestMatch | null;
  /**
   * `respond @name …`, `abort @name`, then `reverse_proxy @name …`: the first that matches answers
   * instead of `handler` (in `terminal`).
   */
  readonly proxies: readonly {
    readonly match: RequestMatch;
    readonly handler: ReverseProxyHandler | RespondHandler | AbortHandler;
  }[];
}

/** The handler that answers a request in the block: a matching `reverse_proxy @name`, else the block's own. */
export function handlerFor(block: Block, req: IncomingMessage, ctx: RequestContext, mp: string): Handler | null {
  for (const p of block.proxies) if (p.match.matches(req, ctx, mp)) return p.handler;
  return block.handler;
}

/** Answers 401 with the block's challenge. */
export function deny(req: IncomingMessage, res: ServerResponse, ctx: RequestContext, block: Block): void {
  if (res.destroyed) return;
  req.resume();
  send(req, res, block.unauthorized as Canned, ctx);
}

/** Answers with the first of the block's redirects whose `from` matches; false when none does. */
export function redirect(
  req: IncomingMessage,
  res: ServerResponse,
  ctx: RequestContext,
  block: Block,
  mp: string,
): boolean {
  for (const r of block.redirects) {
    if (!r.pattern.matches(mp) || (r.match !== null && !r.match.matches(req, ctx, mp))) continue;
    const headers: OutgoingHttpHeaders = { location: r.location(req, ctx), 'content-length': 0 };
    block.headers.editFor(req, ctx)(headers, r.status);
    req.resume();
    res.writeHead(r.status, headers).end();
    return true;
  }
  return false;
}

/** The request target a `handle_path` block passes on: the pattern's prefix removed, the query kept. */
export function strippedUrl(req: IncomingMessage, ctx: RequestContext, block: Block): string {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const rest = block.pattern.remainder(ctx.path);
  return (rest.startsWith('/') ? rest : `/${rest}`) + (q < 0 ? '' : url.slice(q));
}
