import type { IncomingMessage, ServerResponse } from 'node:http';
import { forwardThroughCache } from '../cache/cache-step.js';
import type { CacheRegistry } from '../cache/response-cache.js';
import type { RequestContext } from '../hooks.js';
import { FileServer } from '../middleware/file-server.js';
import type { HeaderEdit, HeaderPlan } from '../middleware/header-plan.js';
import { Template } from '../middleware/placeholders.js';
import type { Handler } from '../model/index.js';
import type { Forwarder } from '../pipeline.js';
import { answerHead, canned, send } from './canned.js';

/** The terminal step of a block. */
export type Terminal = (req: IncomingMessage, res: ServerResponse, ctx: RequestContext, path: string) => void;

/**
 * The `cache` and `terminal` steps of a block: its handler (`reverse_proxy`
 * behind the site's cache when it has one, `respond`, `file_server`) or,
 * without one, 404 `not found`.
 */
export function compileTerminal(
  handler: Handler | null,
  plan: HeaderPlan,
  forwarder: Forwarder,
  caches: CacheRegistry | undefined,
): Terminal {
  if (handler === null) {
    const notFound = canned(plan, 404, 'not found\n');
    return (req, res, ctx) => {
      req.resume();
      send(req, res, notFound, ctx);
    };
  }
  switch (handler.kind) {
    case 'reverse_proxy': {
      const plain: HeaderEdit = plan.plain;
      const secure: HeaderEdit = plan.secure;
      if (caches !== undefined) {
        return (req, res, ctx, path) =>
          forwardThroughCache(forwarder, caches, req, res, ctx, handler, {
            path,
            editResponseHeaders: plan.dynamic ? plan.editFor(req, ctx) : ctx.secure ? secure : plain,
          });
      }
      if (plan.dynamic) {
        return (req, res, ctx, path) =>
          forwarder.forward(req, res, ctx, handler, { path, editResponseHeaders: plan.editFor(req, ctx) });
      }
      return (req, res, ctx, path) =>
        forwarder.forward(req, res, ctx, handler, { path, editResponseHeaders: ctx.secure ? secure : plain });
    }
    case 'respond': {
      const template = Template.of(handler.body);
      const answer = canned(plan, handler.status, handler.body);
      if (template === null) {
        return (req, res, ctx) => {
          req.resume();
          send(req, res, answer, ctx);
        };
      }
      // `respond "Hello {host}"`: the body is built per request.
      return (req, res, ctx) => {
        req.resume();
        const { bytes, base } = answerHead(handler.status, template.render(req, ctx));
        plan.editFor(req, ctx)(base, handler.status);
        res.writeHead(handler.status, base).end(bytes);
      };
    }
    case 'abort':
      // Caddy's abort: no answer at all. Destroying the response closes an HTTP/1 connection
      // and resets an HTTP/2 stream; the request record shows status 0.
      return (req, res) => {
        req.resume();
        res.destroy();
      };
    case 'file_server': {
      const server = new FileServer(handler.root);
      return (req, res, ctx, path) => {
        req.resume();
        const q = path.indexOf('?');
        const url = req.url ?? '/';
        const uq = url.indexOf('?');
        server.serve(
          req,
          res,
          {
            relPath: q < 0 ? path : path.slice(0, q),
            urlPath: ctx.path,
            query: uq < 0 ? '' : url.slice(uq + 1),
          },
          plan.editFor(req, ctx),
        );
      };
    }
  }
}
