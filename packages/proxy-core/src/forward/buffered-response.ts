import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { Transform } from 'node:stream';
import { type DataPlaneHooks, type RequestContext, SMALL_BODY_BYTES } from '../hooks.js';
import type { ForwardOptions } from '../pipeline.js';
import { kExchange } from '../slots.js';
import { applyRewrite, destroyPipedTarget, rewriteFor, transformFor } from './response-hooks.js';

/**
 * Answers with a response whose whole body is in memory (a cache HIT)
 * through the same response path as an upstream's: `editResponseHeaders`,
 * then `hooks.rewriteBody` (body at most {@link SMALL_BODY_BYTES}; sent
 * with the new Content-Length) or else `hooks.transformResponse`. HEAD
 * gets the head only. `headers` is edited in place: pass a copy.
 */
export function deliverBuffered(
  hooks: DataPlaneHooks,
  req: IncomingMessage,
  res: ServerResponse,
  ctx: RequestContext,
  options: ForwardOptions,
  status: number,
  headers: IncomingHttpHeaders,
  body: Buffer,
): void {
  options.editResponseHeaders?.(headers, status);
  const rewrite = body.length <= SMALL_BODY_BYTES ? rewriteFor(hooks, ctx, req, status, headers) : null;
  if (rewrite !== null) {
    const out = applyRewrite(rewrite, body);
    headers['content-length'] = String(out.length);
    res.writeHead(status, headers);
    res.end(req.method === 'HEAD' ? undefined : out);
    return;
  }
  const transform = transformFor(hooks, ctx, req, status, headers);
  res.writeHead(status, headers);
  if (req.method === 'HEAD') {
    transform?.destroy();
    res.end();
  } else if (transform !== null) {
    transform.on('error', destroyPipedTarget);
    (transform as Transform & { [kExchange]?: { res: ServerResponse } })[kExchange] = { res };
    transform.pipe(res);
    transform.end(body);
  } else {
    res.end(body);
  }
}
