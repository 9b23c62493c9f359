import type { IncomingMessage } from 'node:http';
import type { Rewrite, TryFiles, UriOp } from '@proxyd/model';
import type { RequestContext } from '../hooks.js';
import { FileServer } from './file-server.js';
import { matchablePath, PathPattern } from './path-pattern.js';
import { Template } from './placeholders.js';
import { matcherOf, type RequestMatch } from './request-matcher.js';

/** Where a rewrite applies: its path pattern and its matcher (null: none). */
interface Scope {
  readonly pattern: PathPattern;
  readonly match: RequestMatch | null;
}

interface CompiledRewrite extends Scope {
  readonly to: string;
  readonly template: Template | null;
}

interface CompiledUri extends Scope {
  readonly op: UriOp['op'];
  readonly find: string;
  readonly replace: string;
  readonly limit: number;
  readonly re: RegExp | null;
}

interface CompiledTryFiles {
  readonly match: RequestMatch | null;
  readonly files: readonly { readonly text: string; readonly template: Template | null }[];
  readonly status: number | null;
  readonly server: FileServer;
}

function inScope(s: Scope, req: IncomingMessage, ctx: RequestContext, mp: string): boolean {
  return s.pattern.matches(mp) && (s.match === null || s.match.matches(req, ctx, mp));
}

/** Sets the request's target: `req.url` (what the handler and the upstream see) and `ctx.path`. */
export function setTarget(req: IncomingMessage, ctx: RequestContext, path: string, query: string | null): void {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const keep = q < 0 ? '' : url.slice(q);
  const p = path.startsWith('/') ? path : `/${path}`;
  req.url = p + (query === null ? keep : query === '' ? '' : `?${query}`);
  (ctx as { path: string }).path = p;
}

/**
 * A block's `rewrite`, `uri` and `try_files`, compiled once (Caddy's order:
 * rewrite, then uri, then try_files). {@link apply} changes the request's
 * target in place: `req.url` and `ctx.path`; the request record keeps the
 * path the client sent.
 */
export class RequestRewrites {
  readonly #rewrites: readonly CompiledRewrite[];
  readonly #uri: readonly CompiledUri[];
  readonly #tryFiles: CompiledTryFiles | null;

  constructor(
    fields: { rewrites?: readonly Rewrite[]; uri?: readonly UriOp[]; try_files?: TryFiles },
    matchers: ReadonlyMap<string, RequestMatch>,
  ) {
    this.#rewrites = (fields.rewrites ?? []).map((r) => ({
      pattern: new PathPattern(r.path),
      match: matcherOf(matchers, r.matcher),
      to: r.to,
      template: Template.of(r.to),
    }));
    this.#uri = (fields.uri ?? []).map((u) => ({
      pattern: new PathPattern(u.path),
      match: matcherOf(matchers, u.matcher),
      op: u.op,
      find: u.find,
      replace: u.replace,
      limit: u.limit,
      re: u.op === 'path_regexp' ? new RegExp(u.find, 'g') : null,
    }));
    const t = fields.try_files;
    this.#tryFiles =
      t === undefined
        ? null
        : {
            match: matcherOf(matchers, t.matcher),
            files: t.files.map((f) => ({ text: f, template: Template.of(f) })),
            status: t.status,
            server: new FileServer(t.root),
          };
  }

  /** Whether the block has any (a block without pays nothing). */
  get empty(): boolean {
    return this.#rewrites.length === 0 && this.#uri.length === 0 && this.#tryFiles === null;
  }

  /**
   * Applies the block's rewrites. Returns null when done synchronously;
   * with `try_files`, a promise of null (done) or of the status to answer
   * (`=404` and no candidate exists).
   */
  apply(req: IncomingMessage, ctx: RequestContext): Promise<number | null> | null {
    let mp = matchablePath(ctx.path);
    for (const r of this.#rewrites) {
      if (!inScope(r, req, ctx, mp)) continue;
      const to = r.template === null ? r.to : r.template.render(req, ctx);
      const q = to.indexOf('?');
      // `rewrite ?a=b` keeps the path; a `?` sets the query; none keeps it.
      setTarget(req, ctx, q === 0 ? ctx.path : q < 0 ? to : to.slice(0, q), q < 0 ? null : to.slice(q + 1));
      mp = matchablePath(ctx.path);
      break;
    }
    for (const u of this.#uri) {
      if (!inScope(u, req, ctx, mp)) continue;
      setTarget(req, ctx, editPath(u, ctx.path), null);
      mp = matchablePath(ctx.path);
    }
    const t = this.#tryFiles;
    if (t === null || (t.match !== null && !t.match.matches(req, ctx, mp))) return null;
    return this.#tryFilesIn(t, req, ctx);
  }

  async #tryFilesIn(t: CompiledTryFiles, req: IncomingMessage, ctx: RequestContext): Promise<number | null> {
    for (const f of t.files) {
      const candidate = f.template === null ? f.text : f.template.render(req, ctx);
      const q = candidate.indexOf('?');
      const path = q < 0 ? candidate : candidate.slice(0, q);
      if (path === '') continue;
      const directory = path.endsWith('/');
      if (await t.server.exists(path, directory)) {
        setTarget(req, ctx, path, q < 0 ? null : candidate.slice(q + 1));
        return null;
      }
    }
    return t.status;
  }
}

/** One `uri` edit of a raw path. */
function editPath(u: CompiledUri, path: string): string {
  switch (u.op) {
    case 'strip_prefix': {
      const prefix = u.find.startsWith('/') ? u.find : `/${u.find}`;
      return path.startsWith(prefix) ? path.slice(prefix.length) || '/' : path;
    }
    case 'strip_suffix':
      return path.endsWith(u.find) ? path.slice(0, path.length - u.find.length) || '/' : path;
    case 'replace': {
      if (u.limit === 0) return path.split(u.find).join(u.replace);
      let out = path;
      let from = 0;
      for (let n = 0; n < u.limit; n++) {
        const at = out.indexOf(u.find, from);
        if (at < 0) break;
        out = out.slice(0, at) + u.replace + out.slice(at + u.find.length);
        from = at + u.replace.length;
      }
      return out;
    }
    default:
      return path.replace(u.re as RegExp, u.replace);
  }
}
