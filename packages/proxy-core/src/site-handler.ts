import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { forwardThroughCache } from './cache/cache-step.js';
import type { RequestContext } from './hooks.js';
import { AUTH_BUSY, AUTH_DENIED, AUTH_OK, BasicAuthenticator, type PasswordVerifier } from './middleware/basic-auth.js';
import { FileServer } from './middleware/file-server.js';
import { type HeaderEdit, HeaderPlan } from './middleware/header-plan.js';
import { matchablePath, PathPattern } from './middleware/path-pattern.js';
import { RateLimiter } from './middleware/rate-limiter.js';
import { CompiledRedirect } from './middleware/redirect.js';
import { UnderAttackGuard } from './middleware/under-attack.js';
import type { HandleBlock, Handler, HeaderOp, Site } from './model/index.js';
import type { CompiledSite, Forwarder } from './pipeline.js';

/** What {@link compileSite} needs besides the Site. */
export interface SiteDeps {
  /** Forwards `reverse_proxy` requests (pools, health, cache, 502/503/504). */
  forwarder: Forwarder;
  /** Per-process HMAC key of `under_attack` challenges and cookies; never sent to clients. */
  secret: Buffer;
  /** The clock, ms since the epoch (default `Date.now`); tests inject one. */
  now?: () => number;
  /** bcrypt verification of `basic_auth` (default bcryptjs `compare`); tests count calls. */
  verifyPassword?: PasswordVerifier;
  /** Hard cap on rate-limit keys per domain (default 100,000). */
  rateLimitMaxKeys?: number;
}

const TEXT = 'text/plain; charset=utf-8';

/**
 * `compileSite` in the shape `ProxyServer`'s `compileSite` option takes:
 * `new ProxyServer({ compileSite: createSiteCompiler({ secret }) })`.
 */
export function createSiteCompiler(
  deps: Omit<SiteDeps, 'forwarder'>,
): (site: Site, forwarder: Forwarder) => CompiledSite {
  return (site, forwarder) => compileSite(site, { ...deps, forwarder });
}

/** Precomputed answer: the same headers object is handed to every `writeHead` (Node only reads it). */
interface Canned {
  readonly status: number;
  readonly body: Buffer;
  readonly plain: OutgoingHttpHeaders;
  readonly secure: OutgoingHttpHeaders;
}

function canned(plan: HeaderPlan, status: number, body: string, extra: OutgoingHttpHeaders = {}): Canned {
  // 1xx, 204 and 304 carry neither a body nor Content-Length (RFC 9110 §8.6).
  const bodiless = status < 200 || status === 204 || status === 304;
  const bytes = Buffer.from(bodiless ? '' : body);
  const base: OutgoingHttpHeaders = bodiless ? { ...extra } : { 'content-length': bytes.length, ...extra };
  if (bytes.length > 0 && base['content-type'] === undefined) base['content-type'] = TEXT;
  const plain = { ...base };
  const secure = { ...base };
  plan.plain(plain, status);
  plan.secure(secure, status);
  return { status, body: bytes, plain, secure };
}

function send(res: ServerResponse, answer: Canned, secure: boolean): void {
  res.writeHead(answer.status, secure ? answer.secure : answer.plain).end(answer.body);
}

/** The terminal step of a block. */
type Terminal = (req: IncomingMessage, res: ServerResponse, ctx: RequestContext, path: string) => void;

/** One block (the site itself, or a `handle`/`handle_path`), compiled. */
interface Block {
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

/**
 * Compiles a Site into its request handler. Directives run in one fixed
 * order, whatever order the Proxyfile wrote them in (README "Directive
 * order"):
 *
 * 1. `under_attack` (challenge page / `/_proxyd/challenge`)
 * 2. `rate_limit` (429, `Retry-After: 1`)
 * 3. site `basic_auth` (401)
 * 4. site `redir` (first match in file order)
 * 5. `handle` / `handle_path` selection (most specific pattern first;
 *    pattern-less `handle` as fallback; none matching: the site's own handler)
 * 6. the block's `basic_auth`, then its `redir`
 * 7. the terminal handler: `reverse_proxy`, `file_server`, `respond`, or 404
 *
 * Response headers (defaults + site `header` + block `header`) are applied
 * to every response, the site's own answers (429, 401, redirects, challenge)
 * included.
 */
export function compileSite(site: Site, deps: SiteDeps): CompiledSite {
  const now = deps.now ?? Date.now;
  const authOptions = {
    now,
    ...(deps.verifyPassword ? { verify: deps.verifyPassword } : {}),
  };
  const forwarder = deps.forwarder;

  const compileBlock = (
    pattern: string | null,
    strip: boolean,
    ops: readonly HeaderOp[],
    fields: Pick<Site, 'basic_auth' | 'redirects' | 'handler'>,
  ): Block => {
    const headers = new HeaderPlan(ops);
    const auth = fields.basic_auth === null ? null : new BasicAuthenticator(fields.basic_auth, authOptions);
    return {
      pattern: new PathPattern(pattern),
      strip,
      headers,
      auth,
      unauthorized:
        auth === null ? null : canned(headers, 401, 'unauthorized\n', { 'www-authenticate': auth.challenge }),
      redirects: fields.redirects.map((r) => new CompiledRedirect(r)),
      handler: fields.handler,
      terminal: compileTerminal(fields.handler, headers, forwarder),
    };
  };

  const siteBlock = compileBlock(null, false, site.header, site);
  const siteHeaders = siteBlock.headers;
  const blocks: Block[] = site.handles
    .map((h: HandleBlock, index) => ({ h, index, spec: new PathPattern(h.path).specificity() }))
    .sort((a, b) => b.spec - a.spec || a.index - b.index)
    .map(({ h }) => compileBlock(h.path, h.kind === 'handle_path', [...site.header, ...h.header], h));
  const needsMatchPath = blocks.length > 0 || site.redirects.length > 0;

  const limiter =
    site.rate_limit === null
      ? null
      : new RateLimiter({
          limit: site.rate_limit,
          ...(deps.now !== undefined ? { now: deps.now } : {}),
          ...(deps.rateLimitMaxKeys !== undefined ? { maxKeys: deps.rateLimitMaxKeys } : {}),
        });
  const tooMany = canned(siteHeaders, 429, 'rate limit exceeded\n', { 'retry-after': '1' });
  const authBusy = canned(siteHeaders, 503, 'too many password checks in progress\n', { 'retry-after': '1' });
  /** The bcrypt gate is full: nothing was checked, so neither 401 nor access; the client retries. */
  const busy = (req: IncomingMessage, res: ServerResponse, ctx: RequestContext): void => {
    if (res.destroyed) return;
    req.resume();
    send(res, authBusy, ctx.secure);
  };
  const guard = site.under_attack.enabled
    ? new UnderAttackGuard({ secret: deps.secret, difficulty: site.under_attack.difficulty, now })
    : null;

  /** Runs a block's own auth and redirects, then its terminal handler. */
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
          (ok) => (ok ? finishBlock(req, res, ctx, block, mp) : deny(req, res, ctx, block)),
          () => deny(req, res, ctx, block),
        );
        return;
      }
    }
    finishBlock(req, res, ctx, block, mp);
  };

  const finishBlock = (req: IncomingMessage, res: ServerResponse, ctx: RequestContext, block: Block, mp: string) => {
    if (res.destroyed) return;
    if (block !== siteBlock && block.redirects.length > 0 && redirect(req, res, ctx, block, mp)) return;
    const url = req.url ?? '/';
    let path = url;
    if (block.strip) {
      const q = url.indexOf('?');
      const rest = block.pattern.remainder(ctx.path);
      path = (rest.startsWith('/') ? rest : `/${rest}`) + (q < 0 ? '' : url.slice(q));
    }
    block.terminal(req, res, ctx, path);
  };

  /** Site-level steps after the access checks: site redirects, then block selection. */
  const route = (req: IncomingMessage, res: ServerResponse, ctx: RequestContext): void => {
    if (res.destroyed) return;
    if (!needsMatchPath) {
      finishBlock(req, res, ctx, siteBlock, '');
      return;
    }
    const mp = matchablePath(ctx.path);
    if (siteBlock.redirects.length > 0 && redirect(req, res, ctx, siteBlock, mp)) return;
    for (const block of blocks) {
      if (block.pattern.matches(mp)) {
        runBlock(req, res, ctx, block, mp);
        return;
      }
    }
    finishBlock(req, res, ctx, siteBlock, mp);
  };

  const handle = (req: IncomingMessage, res: ServerResponse, ctx: RequestContext): void => {
    if (guard?.intercept(req, res, ctx, siteHeaders.edit(ctx.secure))) return;
    if (limiter !== null && !limiter.admit(ctx.domain, ctx.clientIp)) {
      req.resume();
      send(res, tooMany, ctx.secure);
      return;
    }
    const auth = siteBlock.auth;
    if (auth !== null) {
      const verdict = auth.check(req.headers.authorization);
      if (verdict !== AUTH_OK) {
        if (verdict === AUTH_DENIED) {
          deny(req, res, ctx, siteBlock);
          return;
        }
        if (verdict === AUTH_BUSY) {
          busy(req, res, ctx);
          return;
        }
        verdict.then(
          (ok) => (ok ? route(req, res, ctx) : deny(req, res, ctx, siteBlock)),
          () => deny(req, res, ctx, siteBlock),
        );
        return;
      }
    }
    route(req, res, ctx);
  };

  /** Access checks for a WebSocket upgrade, then the chosen block's `reverse_proxy`. */
  const upgrade = (req: IncomingMessage, socket: Duplex, head: Buffer, ctx: RequestContext): void => {
    const refuse = (status: string): void => {
      socket.end(`HTTP/1.1 ${status}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`);
    };
    if (guard !== null && !guard.cleared(req.headers.cookie, ctx)) {
      refuse('403 Forbidden');
      return;
    }
    if (limiter !== null && !limiter.admit(ctx.domain, ctx.clientIp)) {
      refuse('429 Too Many Requests');
      return;
    }
    const mp = matchablePath(ctx.path);
    const block = blocks.find((b) => b.pattern.matches(mp)) ?? siteBlock;
    const handler = block.handler;
    if (handler?.kind !== 'reverse_proxy' || forwarder.upgrade === undefined) {
      refuse('403 Forbidden');
      return;
    }
    const checks = [siteBlock.auth, block === siteBlock ? null : block.auth].filter(
      (a): a is BasicAuthenticator => a !== null,
    );
    const go = (): void => {
      if (socket.destroyed) return;
      if (block.strip) {
        const url = req.url ?? '/';
        const q = url.indexOf('?');
        const rest = block.pattern.remainder(ctx.path);
        req.url = (rest.startsWith('/') ? rest : `/${rest}`) + (q < 0 ? '' : url.slice(q));
      }
      forwarder.upgrade?.(req, socket, head, ctx, handler);
    };
    const verdicts = checks.map((a) => a.check(req.headers.authorization));
    if (verdicts.some((v) => v === AUTH_DENIED)) {
      refuse('401 Unauthorized');
      return;
    }
    if (verdicts.some((v) => v === AUTH_BUSY)) {
      refuse('503 Service Unavailable');
      return;
    }
    Promise.all(verdicts.map((v) => (v === AUTH_OK ? true : v))).then(
      (oks) => (oks.every((ok) => ok === true) ? go() : refuse('401 Unauthorized')),
      () => refuse('401 Unauthorized'),
    );
  };

  return { handle, upgrade };
}

function deny(req: IncomingMessage, res: ServerResponse, ctx: RequestContext, block: Block): void {
  if (res.destroyed) return;
  req.resume();
  send(res, block.unauthorized as Canned, ctx.secure);
}

/** Answers with the first of the block's redirects whose `from` matches; false when none does. */
function redirect(req: IncomingMessage, res: ServerResponse, ctx: RequestContext, block: Block, mp: string): boolean {
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

function compileTerminal(handler: Handler | null, plan: HeaderPlan, forwarder: Forwarder): Terminal {
  if (handler === null) {
    const notFound = canned(plan, 404, 'not found\n');
    return (req, res, ctx) => {
      req.resume();
      send(res, notFound, ctx.secure);
    };
  }
  switch (handler.kind) {
    case 'reverse_proxy': {
      const plain: HeaderEdit = plan.plain;
      const secure: HeaderEdit = plan.secure;
      const caches = forwarder.caches;
      if (caches !== undefined) {
        return (req, res, ctx, path) =>
          forwardThroughCache(forwarder, caches, req, res, ctx, handler, {
            path,
            editResponseHeaders: ctx.secure ? secure : plain,
          });
      }
      return (req, res, ctx, path) =>
        forwarder.forward(req, res, ctx, handler, { path, editResponseHeaders: ctx.secure ? secure : plain });
    }
    case 'respond': {
      const answer = canned(plan, handler.status, handler.body);
      return (req, res, ctx) => {
        req.resume();
        send(res, answer, ctx.secure);
      };
    }
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
          plan.edit(ctx.secure),
        );
      };
    }
  }
}
