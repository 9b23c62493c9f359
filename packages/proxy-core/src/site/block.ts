import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { RequestContext } from '../hooks.js';
import type { BasicAuthenticator } from '../middleware/basic-auth.js';
import type { HeaderPlan } from '../middleware/header-plan.js';
import type { PathPattern } from '../middleware/path-pattern.js';
import type { CompiledRedirect } from '../middleware/redirect.js';
import type { Handler } from '../model/index.js';
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
}

/** Answers 401 with the block's challenge. */
export function deny(req: IncomingMessage, res: ServerResponse, ctx: RequestContext, block: Block): void {
  if (res.destroyed) return;
  req.resume();
  send(res, block.unauthorized as Canned, ctx.secure);
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
    if (!r.pattern.matches(mp)) continue;
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const location = r.location({ path: ctx.path, query: q < 0 ? '' : url.slice(q + 1), host: ctx.host });
    const headers: OutgoingHttpHeaders = { location, 'content-length': 0 };
    block.headers.edit(ctx.secure)(headers, r.status);
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
