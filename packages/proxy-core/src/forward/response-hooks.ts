import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { Transform } from 'node:stream';
import { type DataPlaneHooks, type RequestContext, SMALL_BODY_BYTES } from '../hooks.js';
import { kExchange } from '../slots.js';
import type { Emitter } from './exchange.js';

/** `hooks.rewriteBody`'s function for this response, or null (absent, declined or threw). */
export function rewriteFor(
  hooks: DataPlaneHooks,
  ctx: RequestContext,
  req: IncomingMessage,
  status: number,
  headers: IncomingHttpHeaders,
): ((body: Buffer) => Buffer) | null {
  if (hooks.rewriteBody === undefined) return null;
  try {
    return hooks.rewriteBody(ctx, req, status, headers);
  } catch {
    return null;
  }
}

/**
 * The rewrite of a response's whole body: `hooks.rewriteBody`'s function when the response declares a
 * Content-Length of at most `SMALL_BODY_BYTES` (a body collected whole), else null.
 */
export function wholeRewriteFor(
  hooks: DataPlaneHooks,
  ctx: RequestContext,
  req: IncomingMessage,
  status: number,
  headers: IncomingHttpHeaders,
): ((body: Buffer) => Buffer) | null {
  const declared = headers['content-length'];
  if (hooks.rewriteBody === undefined || declared === undefined || Number(declared) > SMALL_BODY_BYTES) return null;
  return rewriteFor(hooks, ctx, req, status, headers);
}

/** The rewritten body, or the original when the rewrite throws (a page never breaks). */
export function applyRewrite(rewrite: (body: Buffer) => Buffer, body: Buffer): Buffer {
  try {
    return rewrite(body);
  } catch {
    return body;
  }
}

/** `hooks.transformResponse`'s stream for this response, or null (absent, declined or threw). */
export function transformFor(
  hooks: DataPlaneHooks,
  ctx: RequestContext,
  req: IncomingMessage,
  status: number,
  headers: IncomingHttpHeaders,
): Transform | null {
  if (hooks.transformResponse === undefined) return null;
  try {
    return hooks.transformResponse(ctx, req, status, headers);
  } catch {
    return null;
  }
}

/** A transform piped into the client's response failed: the response cannot be completed. */
export function destroyPipedTarget(this: Emitter & Transform): void {
  this[kExchange]?.res.destroy();
}
