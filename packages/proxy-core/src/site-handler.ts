import { type IncomingMessage, type ServerResponse, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { HandleBlock, Site, SiteStepName } from '@proxyd/model';
import { markRequest, type RequestContext, RequestEvent } from './hooks.js';
import {
  AUTH_BUSY,
  AUTH_DENIED,
  AUTH_OK,
  type BasicAuthenticator,
  type PasswordVerifier,
} from './middleware/basic-auth.js';
import { ResponseEncoder } from './middleware/encode.js';
import { AUTH_ALLOWED } from './middleware/forward-auth.js';
import { matchablePath, PathPattern } from './middleware/path-pattern.js';
import { RateLimiter } from './middleware/rate-limiter.js';
import { compileMatchers, matcherOf } from './middleware/request-matcher.js';
import { UnderAttackGuard } from './middleware/under-attack.js';
import type { CompiledSite, Forwarder } from './pipeline.js';
import { type Block, deny, handlerFor, redirect, strippedUrl } from './site/block.js';
import { answerHead, canned, send } from './site/canned.js';
import { type BlockEnv, compileBlock } from './site/compile-block.js';
import { fastPlanOf } from './site/fast-plan.js';
import type { ErrorHook } from './site/terminal.js';
import { type ErrorSlot, kError } from './slots.js';

/** What {@link compileSite} needs besides the Site. */
export interface SiteDeps {
  /** Forwards `reverse_proxy` requests (pools, health, 502/503/504); its `caches` serve the `cache` step. */
  forwarder: Forwarder;
  /** Per-process HMAC key of `under_attack` challenges and cookies; never sent to clients. */
  secret: Buffer;
  /** The clock, ms since the epoch (default `Date.now`); tests inject one. */
  now?: () => number;
  /** bcrypt verification of `basic_auth` (default bcryptjs `compare`); tests count calls. */
  verifyPassword?: PasswordVerifier;
  /** Hard cap on rate-limit keys per domain (default 100,000). */
  rateLimitMaxKeys?: number;
  /**
   * Where a site's `rate_limit <n>/s` counts (default a {@link RateLimiter}
   * per compiled site, in this process). A multi-core daemon's workers count
   * in one place for all of them, so the limit stays exact whichever worker
   * a client reaches; such a counter answers later (a promise). A rejected
   * answer admits the request (the limit fails open, the site stays up).
   */
  rateLimitCounter?: (limit: number) => RateLimitCounter;
}

/** Counts `rate_limit` admissions: true admitted, false over the limit (see {@link RateLimiter.admit}). */
export interface RateLimitCounter {
  admit(domain: string, ip: string): boolean | Promise<boolean>;
}

/**
 * `compileSite` in the shape `ProxyServer`'s `compileSite` option takes:
 * `new ProxyServer({ compileSite: createSiteCompiler({ secret }) })`.
 */
export function createSiteCompiler(
  deps: Omit<SiteDeps, 'forwarder'>,
): (site: Site, forwarder: Forwarder) => CompiledSite {
  return (site, forwarder) => compileSite(site, { ...deps, forwarder });
}

/** Answers that a step writes on a raw socket when it refuses an upgrade. */
function refuse(socket: Duplex, status: string): void {
  socket.end(`HTTP/1.1 ${status}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`);
}

/**
 * One compiled site step. `request` answers (returns true: the walk stops,
 * and a step that waits — a bcrypt check — resumes the walk at `next`
 * itself) or lets the next step run (false). `upgrade` is the step's form
 * for a WebSocket upgrade (same return), or null when upgrades skip it.
 */
interface SiteStep {
  readonly name: SiteStepName;
  readonly request: (req: IncomingMessage, res: ServerResponse, ctx: RequestContext, next: number) => boolean;
  readonly upgrade:
    | ((req: IncomingMessage, socket: Duplex, head: Buffer, ctx: RequestContext, next: number) => boolean)
    | null;
}

/** A compiled site: its handler, and the names of the steps it runs, in order (tests, diagnostics). */
export interface SitePipeline extends CompiledSite {
  readonly steps: readonly SiteStepName[];
}

/**
 * Compiles a Site into its request handler: one ordered table of steps
 * (model `SITE_STEP_ORDER`), compiled once per site with the steps the site
 * does not use left out, walked by index for requests and for WebSocket
 * upgrades (no per-request allocation by the walk). Directives run in that
 * order whatever order the Proxyfile wrote them in (README "Directive
 * order"):
 *
 * - `headers`: defaults + site `header` + block `header`, compiled into
 *   every answer below (the site's own 429, 401, redirects and challenge
 *   included); no step at request time.
 * - `encode`: wraps the response (compressed on its way out: every answer
 *   below, cached and proxied ones after analytics injection); upgrades skip it.
 * - `under_attack` (challenge page / `/_proxyd/challenge`; upgrade without
 *   clearance: 403)
 * - `rate_limit` (429, `Retry-After: 1`)
 * - `basic_auth`, the site's (401; 503 when the bcrypt gate is full)
 * - `redir`, the site's (first match in file order; not for upgrades)
 * - `handle`: `handle` / `handle_path` selection (most specific pattern
 *   first; pattern-less `handle` as fallback; none matching: the site's own
 *   handler), then the block's `basic_auth` and `redir`, then `cache` and
 *   the terminal handler (`reverse_proxy`, `file_server`, `respond`, or
 *   404). An upgrade is refused 403 unless the chosen handler is
 *   `reverse_proxy`; then the site's and the block's `basic_auth` are
 *   checked together (the upgrade form of `basic_auth` is this step's).
 */
export function compileSite(site: Site, deps: SiteDeps): SitePipeline {
  const now = deps.now ?? Date.now;
  const authOptions = {
    now,
    ...(deps.verifyPassword ? { verify: deps.verifyPassword } : {}),
  };
  const forwarder = deps.forwarder;
  // The `cache` step stands in front of `reverse_proxy` when the site caches.
  const caches = site.cache === null ? undefined : forwarder.caches;
  // Named matchers (`@name`), compiled once; a site without any pays nothing per request.
  const matchers = compileMatchers(site.matchers);

  // `handle_errors`: the blocks that answer instead of proxyd's own errors; compiled below, reached
  // through this hook (null, and nothing per request, for a site without them).
  const errorBlocks: { readonly test: (status: number) => boolean; readonly block: Block }[] = [];
  const errors: ErrorHook | null =
    (site.handle_errors ?? []).length === 0
      ? null
      : (req, res, ctx, status, message) => {
          if (res.headersSent || res.destroyed) return false;
          for (const e of errorBlocks) {
            if (!e.test(status)) continue;
            runErrorBlock(req, res, ctx, e.block, status, message);
            return true;
          }
          return false;
        };

  // What every block below (the site's, each `handle`, each `handle_errors`) is compiled with.
  const blockEnv: BlockEnv = { matchers, authOptions, forwarder, caches, errors };

  /** Answers `status` as an error: the site's `handle_errors`, else proxyd's plain answer. */
  const answerError = (
    req: IncomingMessage,
    res: ServerResponse,
    ctx: RequestContext,
    status: number,
    message = (STATUS_CODES[status] ?? 'error').toLowerCase(),
  ): void => {
    if (res.destroyed || res.headersSent) return;
    if (errors?.(req, res, ctx, status, message) === true) return;
    req.resume();
    const { bytes, base } = answerHead(status, `${message}\n`);
    siteHeaders.editFor(req, ctx)(base, status);
    res.writeHead(status, base).end(bytes);
  };

  /** `forward_auth`: a refusal that a `handle_errors` block takes (none without handle_errors). */
  const refusedBy = (req: IncomingMessage, res: ServerResponse, ctx: RequestContext) =>
    errors === null
      ? undefined
      : (status: number) => errors(req, res, ctx, status, (STATUS_CODES[status] ?? 'error').toLowerCase());

  /** Runs a `handle_errors` block for the error `status`: its redirects, rewrites, then its handler. */
  const runErrorBlock = (
    req: IncomingMessage,
    res: ServerResponse,
    ctx: RequestContext,
    block: Block,
    status: number,
    message: string,
  ): void => {
    (req as IncomingMessage & { [kError]?: ErrorSlot })[kError] = { status, message };
    req.resume();
    const mp = matchablePath(ctx.path);
    if (block.redirects.length > 0 && redirect(req, res, ctx, block, mp)) return;
    const done = block.rewrites?.apply(req, ctx) ?? null;
    if (done === null) {
      block.terminal(req, res, ctx, req.url ?? '/');
      return;
    }
    // `try_files … =<status>` inside an error block: no second error route, proxyd's answer.
    done.then(
      (failed) => {
        if (res.destroyed) return;
        if (failed === null) block.terminal(req, res, ctx, req.url ?? '/');
        else send(req, res, canned(block.headers, failed, `${(STATUS_CODES[failed] ?? 'error').toLowerCase()}\n`), ctx);
      },
      () => res.destroy(),
    );
  };

  // `headers`: compiled into every block and canned answer.
  const siteBlock = compileBlock(blockEnv, null, false, site.header, site, null);
  const siteHeaders = siteBlock.headers;
  // Most specific first (Caddy's sort): path patterns, then `handle @name` (by its first path, else
  // after every pattern) in file order, then the fallback.
  const blocks: Block[] = site.handles
    .map((h: HandleBlock, index) => {
      const match = matcherOf(matchers, h.matcher);
      return { h, index, match, spec: match === null ? new PathPattern(h.path).specificity() : match.specificity };
    })
    .sort((a, b) => b.spec - a.spec || a.index - b.index)
    .map(({ h, match }) =>
      compileBlock(blockEnv, h.path, h.kind === 'handle_path', [...site.header, ...h.header], h, match),
    );
  for (const e of site.handle_errors ?? []) {
    const codes = new Set(e.statuses.filter((x) => !x.endsWith('xx')).map(Number));
    const classes = new Set(e.statuses.filter((x) => x.endsWith('xx')).map((x) => Number(x[0])));
    errorBlocks.push({
      test: e.statuses.length === 0 ? () => true : (st) => codes.has(st) || classes.has(Math.floor(st / 100)),
      block: compileBlock(blockEnv, null, false, [...site.header, ...e.header], e, null, true),
    });
  }
  const authBusy = canned(siteHeaders, 503, 'too many password checks in progress\n', { 'retry-after': '1' });
  /** The bcrypt gate is full: nothing was checked, so neither 401 nor access; the client retries. */
  const busy = (req: IncomingMessage, res: ServerResponse, ctx: RequestContext): void => {
    if (res.destroyed) return;
    req.resume();
    send(req, res, authBusy, ctx);
  };

  const steps: SiteStep[] = [];

  /** Runs the steps from `from` until one answers. */
  const walk = (req: IncomingMessage, res: ServerResponse, ctx: RequestContext, from: number): void => {
    for (let i = from; i < steps.length; i++) {
      if ((steps[i] as SiteStep).request(req, res, ctx, i + 1)) return;
    }
  };
  /** The upgrade form of {@link walk}: the steps that have one, from `from`. */
  const walkUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer, ctx: RequestContext, from: number): void => {
    for (let i = from; i < steps.length; i++) {
      if ((steps[i] as SiteStep).upgrade?.(req, socket, head, ctx, i + 1)) return;
    }
  };

  const encoder = site.encode === null ? null : new ResponseEncoder(site.encode);
  if (encoder !== null) {
    steps.push({
      name: 'encode',
      request: (req, res) => {
        encoder.wrap(req, res);
        return false;
      },
      upgrade: null,
    });
  }

  if (site.under_attack.enabled) {
    const guard = new UnderAttackGuard({ secret: deps.secret, difficulty: site.under_attack.difficulty, now });
    steps.push({
      name: 'under_attack',
      request: (req, res, ctx) => guard.intercept(req, res, ctx, siteHeaders.editFor(req, ctx)),
      upgrade: (req, socket, _head, ctx) => {
        if (guard.cleared(req.headers.cookie, ctx)) return false;
        refuse(socket, '403 Forbidden');
        return true;
      },
    });
  }

  if (site.rate_limit !== null) {
    const limiter: RateLimitCounter =
      deps.rateLimitCounter?.(site.rate_limit) ??
      new RateLimiter({
        limit: site.rate_limit,
        ...(deps.now !== undefined ? { now: deps.now } : {}),
        ...(deps.rateLimitMaxKeys !== undefined ? { maxKeys: deps.rateLimitMaxKeys } : {}),
      });
    const tooMany = canned(siteHeaders, 429, 'rate limit exceeded\n', { 'retry-after': '1' });
    const refuseRequest = (req: IncomingMessage, res: ServerResponse, ctx: RequestContext): void => {
      markRequest(res, RequestEvent.RateLimited);
      if (res.destroyed) return;
      req.resume();
      send(req, res, tooMany, ctx);
    };
    steps.push({
      name: 'rate_limit',
      request: (req, res, ctx, next) => {
        const verdict = limiter.admit(ctx.domain, ctx.clientIp);
        if (verdict === true) return false;
        if (verdict === false) refuseRequest(req, res, ctx);
        else {
          verdict.then(
            (ok) => (ok ? walk(req, res, ctx, next) : refuseRequest(req, res, ctx)),
            () => walk(req, res, ctx, next),
          );
        }
        return true;
      },
      upgrade: (req, socket, head, ctx, next) => {
        const verdict = limiter.admit(ctx.domain, ctx.clientIp);
        if (verdict === true) return false;
        if (verdict === false) refuse(socket, '429 Too Many Requests');
        else {
          verdict.then(
            (ok) => (ok ? walkUpgrade(req, socket, head, ctx, next) : refuse(socket, '429 Too Many Requests')),
            () => walkUpgrade(req, socket, head, ctx, next),
          );
        }
        return true;
      },
    });
  }

  const siteAuth = siteBlock.auth;
  if (siteAuth !== null) {
    steps.push({
      name: 'basic_auth',
      request: (req, res, ctx, next) => {
        const verdict = siteAuth.check(req.headers.authorization);
        if (verdict === AUTH_OK) return false;
        if (verdict === AUTH_DENIED) deny(req, res, ctx, siteBlock);
        else if (verdict === AUTH_BUSY) busy(req, res, ctx);
        else {
          verdict.then(
            (ok) => (ok ? walk(req, res, ctx, next) : deny(req, res, ctx, siteBlock)),
            () => deny(req, res, ctx, siteBlock),
          );
        }
        return true;
      },
      // Checked with the block's own basic_auth by the `handle` step's upgrade form.
      upgrade: null,
    });
  }

  const siteForwardAuth = siteBlock.forwardAuth;
  if (siteForwardAuth !== null) {
    steps.push({
      name: 'forward_auth',
      request: (req, res, ctx, next) => {
        if (res.destroyed) return true;
        if (!siteForwardAuth.applies(req, ctx)) return false;
        siteForwardAuth.check(
          req,
          ctx,
          { res, plan: siteHeaders, refused: refusedBy(req, res, ctx) },
          (status, message) => answerError(req, res, ctx, status, message),
          (verdict) => {
            if (verdict === AUTH_ALLOWED) walk(req, res, ctx, next);
          },
        );
        return true;
      },
      upgrade: (req, socket, head, ctx, next) => {
        if (!siteForwardAuth.applies(req, ctx)) return false;
        siteForwardAuth.check(
          req,
          ctx,
          { socket },
          (status) => refuse(socket, `${status} ${STATUS_CODES[status]}`),
          (verdict) => {
            if (verdict === AUTH_ALLOWED) walkUpgrade(req, socket, head, ctx, next);
          },
        );
        return true;
      },
    });
  }

  if (siteBlock.redirects.length > 0) {
    steps.push({
      name: 'redir',
      request: (req, res, ctx) => {
        if (res.destroyed) return true;
        return redirect(req, res, ctx, siteBlock, matchablePath(ctx.path));
      },
      upgrade: null,
    });
  }

  const siteRewrites = siteBlock.rewrites;
  if (siteRewrites !== null) {
    steps.push({
      name: 'rewrite',
      request: (req, res, ctx, next) => {
        if (res.destroyed) return true;
        const done = siteRewrites.apply(req, ctx);
        if (done === null) return false;
        done.then(
          (failed) => (failed === null ? walk(req, res, ctx, next) : answerError(req, res, ctx, failed)),
          () => res.destroy(),
        );
        return true;
      },
      upgrade: (req, socket, head, ctx, next) => {
        const done = siteRewrites.apply(req, ctx);
        if (done === null) return false;
        done.then(
          (failed) => (failed === null ? walkUpgrade(req, socket, head, ctx, next) : refuse(socket, '404 Not Found')),
          () => socket.destroy(),
        );
        return true;
      },
    });
  }

  /** The block's own auth and redirects (not the site block's: those were steps), then its terminal handler. */
  const runBlock = (req: IncomingMessage, res: ServerResponse, ctx: RequestContext, block: Block, mp: string): void => {
    if (block.auth !== null && block !== siteBlock) {
      const verdict = block.auth.check(req.headers.authorization);
      if (verdict !== AUTH_OK) {
        if (verdict === AUTH_DENIED) {
          deny(req, res, ctx, block);
          return;
        }
        if (verdict === AUTH_BUSY) {
          busy(req, res, ctx);
          return;
        }
        verdict.then(
          (ok) => (ok ? forwardAuthBlock(req, res, ctx, block, mp) : deny(req, res, ctx, block)),
          () => deny(req, res, ctx, block),
        );
        return;
      }
    }
    forwardAuthBlock(req, res, ctx, block, mp);
  };

  /** The block's own `forward_auth` (not the site's: that was a step), then the rest of the block. */
  const forwardAuthBlock = (
    req: IncomingMessage,
    res: ServerResponse,
    ctx: RequestContext,
    block: Block,
    mp: string,
  ): void => {
    const fa = block.forwardAuth;
    if (fa === null || block === siteBlock || !fa.applies(req, ctx)) {
      finishBlock(req, res, ctx, block, mp);
      return;
    }
    fa.check(
      req,
      ctx,
      { res, plan: block.headers, refused: refusedBy(req, res, ctx) },
      (status, message) => answerError(req, res, ctx, status, message),
      (verdict) => {
        if (verdict === AUTH_ALLOWED && !res.destroyed) finishBlock(req, res, ctx, block, mp);
      },
    );
  };

  const finishBlock = (req: IncomingMessage, res: ServerResponse, ctx: RequestContext, block: Block, mp: string) => {
    if (res.destroyed) return;
    if (block !== siteBlock && block.redirects.length > 0 && redirect(req, res, ctx, block, mp)) return;
    const done = block === siteBlock ? null : (block.rewrites?.apply(req, ctx) ?? null);
    if (done === null) {
      block.terminal(req, res, ctx, block.strip ? strippedUrl(req, ctx, block) : (req.url ?? '/'));
      return;
    }
    done.then(
      (failed) => {
        if (res.destroyed) return;
        if (failed !== null) answerError(req, res, ctx, failed);
        else block.terminal(req, res, ctx, block.strip ? strippedUrl(req, ctx, block) : (req.url ?? '/'));
      },
      () => res.destroy(),
    );
  };

  steps.push({
    name: 'handle',
    request:
      blocks.length === 0
        ? (req, res, ctx) => {
            finishBlock(req, res, ctx, siteBlock, '');
            return true;
          }
        : (req, res, ctx) => {
            if (res.destroyed) return true;
            const mp = matchablePath(ctx.path);
            for (const block of blocks) {
              if (block.pattern.matches(mp) && (block.match === null || block.match.matches(req, ctx, mp))) {
                runBlock(req, res, ctx, block, mp);
                return true;
              }
            }
            finishBlock(req, res, ctx, siteBlock, mp);
            return true;
          },
    upgrade: (req, socket, head, ctx) => {
      const mp = matchablePath(ctx.path);
      const block =
        blocks.find((b) => b.pattern.matches(mp) && (b.match === null || b.match.matches(req, ctx, mp))) ?? siteBlock;
      const handler = handlerFor(block, req, ctx, mp);
      if (handler?.kind === 'abort') {
        socket.destroy();
        return true;
      }
      if (handler?.kind !== 'reverse_proxy' || forwarder.upgrade === undefined) {
        refuse(socket, '403 Forbidden');
        return true;
      }
      const checks = [siteBlock.auth, block === siteBlock ? null : block.auth].filter(
        (a): a is BasicAuthenticator => a !== null,
      );
      const forward = (): void => {
        if (socket.destroyed) return;
        if (block.strip) req.url = strippedUrl(req, ctx, block);
        forwarder.upgrade?.(req, socket, head, ctx, handler);
      };
      const fa = block === siteBlock ? null : block.forwardAuth;
      const go = (): void => {
        if (fa === null || !fa.applies(req, ctx)) {
          forward();
          return;
        }
        fa.check(
          req,
          ctx,
          { socket },
          (status) => refuse(socket, `${status} ${STATUS_CODES[status]}`),
          (verdict) => {
            if (verdict === AUTH_ALLOWED) forward();
          },
        );
      };
      const verdicts = checks.map((a) => a.check(req.headers.authorization));
      if (verdicts.some((v) => v === AUTH_DENIED)) {
        refuse(socket, '401 Unauthorized');
        return true;
      }
      if (verdicts.some((v) => v === AUTH_BUSY)) {
        refuse(socket, '503 Service Unavailable');
        return true;
      }
      Promise.all(verdicts.map((v) => (v === AUTH_OK ? true : v))).then(
        (oks) => (oks.every((ok) => ok === true) ? go() : refuse(socket, '401 Unauthorized')),
        () => refuse(socket, '401 Unauthorized'),
      );
      return true;
    },
  });

  const first = steps[0] as SiteStep;
  const fast = fastPlanOf(site, steps.length, blocks.length, errors, caches, siteBlock, matchers, encoder);
  return {
    ...(fast === null ? {} : { fast }),
    steps: [
      'headers',
      ...steps.map((step) => step.name),
      ...(caches !== undefined &&
      [siteBlock, ...blocks].some(
        (b) => b.handler?.kind === 'reverse_proxy' || b.proxies.some((p) => p.handler.kind === 'reverse_proxy'),
      )
        ? (['cache'] as const)
        : []),
      'terminal',
    ],
    // The common site has one step (`handle`): called directly, no walk.
    handle:
      steps.length === 1
        ? (req, res, ctx) => void first.request(req, res, ctx, 1)
        : (req, res, ctx) => walk(req, res, ctx, 0),
    upgrade: (req, socket, head, ctx) => walkUpgrade(req, socket, head, ctx, 0),
  };
}
