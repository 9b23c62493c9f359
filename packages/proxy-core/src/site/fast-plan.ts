import type { Site } from '@proxyd/model';
import type { ResponseEncoder } from '../middleware/encode.js';
import { HeaderPlan } from '../middleware/header-plan.js';
import type { RequestMatch } from '../middleware/request-matcher.js';
import type { FastPlan } from '../pipeline.js';
import type { Block } from './block.js';
import type { ErrorHook } from './terminal.js';

/**
 * The site's {@link FastPlan} when it is one `reverse_proxy` and nothing
 * else runs per request but `encode` and `basic_auth` (only the `handle`
 * step and theirs, no `handle` blocks, `handle_errors`, cache,
 * `forward_auth`, redirects, rewrites or `… @name` handlers); else null.
 * Its `header` ops may hold placeholders and matchers (the plan's edit is
 * then built per request, as `site/terminal.ts` builds it).
 */
export function fastPlanOf(
  site: Site,
  stepCount: number,
  blockCount: number,
  errors: ErrorHook | null,
  caches: unknown,
  block: Block,
  matchers: ReadonlyMap<string, RequestMatch>,
  encoder: ResponseEncoder | null,
): FastPlan | null {
  const handler = site.handler;
  if (handler?.kind !== 'reverse_proxy' || blockCount !== 0 || errors !== null) return null;
  // The `handle` step, and `encode` and the site's `basic_auth` when it has them.
  if (stepCount !== 1 + (encoder === null ? 0 : 1) + (block.auth === null ? 0 : 1)) return null;
  if (caches !== undefined || block.forwardAuth !== null || block.redirects.length > 0) {
    return null;
  }
  if (block.rewrites !== null || block.proxies.length > 0) return null;
  const plan =
    handler.header_down !== undefined && handler.header_down.length > 0
      ? new HeaderPlan([...handler.header_down, ...site.header], matchers)
      : block.headers;
  return {
    handler,
    plain: plan.plain,
    secure: plan.secure,
    dynamic: plan.dynamic ? plan : null,
    auth: block.auth,
    encoder,
  };
}
