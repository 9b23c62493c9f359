import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Site } from '@proxyd/model';
import { forwardThroughCache } from './cache/cache-step.js';
import type { RequestContext } from './hooks.js';
import type { CompiledSite, Forwarder, ForwardOptions } from './pipeline.js';

/**
 * The default security headers: `X-Content-Type-Options: nosniff`,
 * `X-Frame-Options: SAMEORIGIN`, and on HTTPS `Strict-Transport-Security:
 * max-age=31536000`. Used by {@link compileFallbackSite} only; the site
 * middleware owns the real set and the `header` overrides.
 */
function securityHeaders(secure: boolean): (headers: OutgoingHttpHeaders) => void {
  return secure
    ? (headers) => {
        headers['x-content-type-options'] ??= 'nosniff';
        headers['x-frame-options'] ??= 'SAMEORIGIN';
        headers['strict-transport-security'] ??= 'max-age=31536000';
      }
    : (headers) => {
        headers['x-content-type-options'] ??= 'nosniff';
        headers['x-frame-options'] ??= 'SAMEORIGIN';
      };
}

const plainEdit = securityHeaders(false);
const secureEdit = securityHeaders(true);

/**
 * A minimal CompiledSite used until (or instead of) the site middleware:
 * the site's terminal handler only — `reverse_proxy` through the forwarder
 * with the default security headers, `respond`, otherwise 404. No
 * `basic_auth`, `rate_limit`, `redir`, `handle` or `file_server`.
 */
export function compileFallbackSite(site: Site, forwarder: Forwarder): CompiledSite {
  const handler = site.handler;
  const plain: ForwardOptions = { path: '/', editResponseHeaders: plainEdit };
  const caches = site.cache === null ? undefined : forwarder.caches;
  return {
    handle(req: IncomingMessage, res: ServerResponse, ctx: RequestContext): void {
      if (handler?.kind === 'reverse_proxy') {
        const options: ForwardOptions = ctx.secure
          ? { path: req.url ?? '/', editResponseHeaders: secureEdit }
          : req.url === '/'
            ? plain
            : { path: req.url ?? '/', editResponseHeaders: plainEdit };
        // The site `cache` step in front of the forwarder, as in compileSite.
        if (caches !== undefined) forwardThroughCache(forwarder, caches, req, res, ctx, handler, options);
        else forwarder.forward(req, res, ctx, handler, options);
      } else if (handler?.kind === 'respond') {
        res.writeHead(handler.status, { 'content-type': 'text/plain; charset=utf-8' }).end(handler.body);
      } else {
        res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found\n');
      }
    },
  };
}
