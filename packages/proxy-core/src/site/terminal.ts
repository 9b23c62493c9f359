import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Handler } from '@proxyd/model';
import { forwardThroughCache } from '../cache/cache-step.js';
import type { CacheRegistry } from '../cache/response-cache.js';
import type { RequestContext } from '../hooks.js';
import { FileServer } from '../middleware/file-server.js';
import type { HeaderEdit, HeaderPlan } from '../middleware/header-plan.js';
import { errorOf, Template } from '../middleware/placeholders.js';
import type { Forwarder } from '../pipeline.js';
import { answerHead, canned, send } from './canned.js';

/** The terminal step of a block. */
export type Terminal = (req: IncomingMessage, res: ServerResponse, ctx: RequestContext, path: string) => void;

/**
 * The site's `handle_errors`: answers an error proxyd would otherwise answer
 * itself (`status`, proxyd's short `message`); false when no block takes it.
 */
export type ErrorHook = (
  req: IncomingMessage,
  res: ServerResponse,
  ctx: RequestContext,
  status: number,
  message: string,
) => boolean;

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
  errors: ErrorHook | null = null,
  errorRoute = false,
): Terminal {
  if (handler === null) {
    const notFound = canned(plan, 404, 'not found\n');
    return (req, res, ctx) => {
      req.resume();
      if (errors?.(req, res, ctx, 404, 'not found') === true) return;
      send(req, res, notFound, ctx);
    };
  }
  switch (handler.kind) {
    case 'reverse_proxy': {
      const plain: HeaderEdit = plan.plain;
      const secure: HeaderEdit = plan.secure;
      if (errors !== null) {
        // `handle_errors`: the forwarder's 502/503/504 go to the site's error blocks (one closure per request).
        return (req, res, ctx, path) => {
          const options = {
            path,
            editResponseHeaders: plan.dynamic ? plan.editFor(req, ctx) : ctx.secure ? secure : plain,
            onError: (status: number, message: string) => errors(req, res, ctx, status, message),
          };
          if (caches !== undefined) forwardThroughCache(forwarder, caches, req, res, ctx, handler, options);
          else forwarder.forward(req, res, ctx, handler, options);
        };
      }
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
      if (errorRoute && handler.error_status === true) {
        // `respond <body> {err.status_code}` in handle_errors: the error's status.
        return (req, res, ctx) => {
          req.resume();
          const status = errorOf(req)?.status ?? handler.status;
          const { bytes, base } = answerHead(status, template === null ? handler.body : template.render(req, ctx));
          plan.editFor(req, ctx)(base, status);
          res.writeHead(status, base).end(bytes);
        };
      }
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
          errorRoute
            ? { status: errorOf(req)?.status }
            : errors === null
              ? undefined
              : { onError: (status, message) => errors(req, res, ctx, status, message) },
        );
      };
    }
  }
}
