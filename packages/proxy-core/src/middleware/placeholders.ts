import { type IncomingMessage, STATUS_CODES } from 'node:http';
import type { PlaceholderRef, RequestPlaceholder } from '@proxyd/model';
import { PLACEHOLDER_PATTERN, REMAINDER_PLACEHOLDER, requestPlaceholder } from '@proxyd/model/rules';
import type { RequestContext } from '../hooks.js';
import { type ErrorSlot, kError } from '../slots.js';
import type { PathPattern } from './path-pattern.js';
import { capturesOf } from './request-matcher.js';

/** A placeholder with an argument (`{header.X}`, `{query.k}`, `{re.name.1}`), compiled. */
type Prefixed = Exclude<PlaceholderRef, { readonly kind: RequestPlaceholder }>;

/**
 * One part of a compiled template: literal text (a string), a request
 * placeholder (its kind, wrapped in an array so it cannot be confused with
 * text), a prefixed placeholder, or `redir`'s remainder.
 */
type Part = string | readonly [RequestPlaceholder] | Prefixed | typeof REMAINDER;
const REMAINDER = 0;

/**
 * A value with request placeholders (`{host}`, `{uri}`, …, see the model's
 * `REQUEST_PLACEHOLDERS`), compiled once into literal and placeholder parts.
 * {@link Template.of} gives null for a value without any: the caller keeps
 * its fixed string and pays nothing per request. A `{…}` that is not a
 * placeholder is kept as written (Caddy's rule; the Proxyfile refuses it).
 */
export class Template {
  readonly #parts: readonly Part[];

  private constructor(parts: readonly Part[]) {
    this.#parts = parts;
  }

  /**
   * The template of `text`, or null when it holds no placeholder.
   * `remainder`: `{http.request.uri.path.remainder}` is a placeholder too (`redir`).
   */
  static of(text: string, remainder = false): Template | null {
    if (text.indexOf('{') < 0) return null;
    const parts: Part[] = [];
    let last = 0;
    for (const m of text.matchAll(PLACEHOLDER_PATTERN)) {
      const name = m[0];
      const ref = requestPlaceholder(name);
      const part: Part | null =
        ref === null
          ? remainder && name === REMAINDER_PLACEHOLDER
            ? REMAINDER
            : null
          : 'arg' in ref || 'group' in ref
            ? ref
            : [ref.kind];
      if (part === null) continue;
      const at = m.index ?? 0;
      if (at > last) parts.push(text.slice(last, at));
      parts.push(part);
      last = at + name.length;
    }
    if (parts.length === 0) return null;
    if (last < text.length) parts.push(text.slice(last));
    return new Template(parts);
  }

  /** The value for one request; `from` is the `redir` pattern whose remainder `{…remainder}` is. */
  render(req: IncomingMessage, ctx: RequestContext, from?: PathPattern): string {
    let out = '';
    for (const part of this.#parts) {
      if (typeof part === 'string') {
        out += part;
        continue;
      }
      if (part === REMAINDER) {
        out += from === undefined ? '' : from.remainder(ctx.path);
        continue;
      }
      if (!Array.isArray(part)) {
        out += prefixed(part as Prefixed, req);
        continue;
      }
      switch ((part as readonly [RequestPlaceholder])[0]) {
        case 'uri':
          out += ctx.path + query(req, true);
          break;
        case 'host':
          out += ctx.host;
          break;
        case 'path':
          out += ctx.path;
          break;
        case 'query':
          out += query(req, false);
          break;
        case 'remote_host':
          out += remoteHost(req);
          break;
        case 'client_ip':
          out += ctx.clientIp;
          break;
        case 'scheme':
          out += ctx.secure ? 'https' : 'http';
          break;
        case 'err_status_code':
          out += errorOf(req)?.status ?? '';
          break;
        case 'err_status_text':
          out += STATUS_CODES[errorOf(req)?.status ?? 0] ?? '';
          break;
        case 'err_message':
          out += errorOf(req)?.message ?? '';
          break;
      }
    }
    return out;
  }
}

/** The request's query: with its `?` (`withMark`, empty when none) or without. */
function query(req: IncomingMessage, withMark: boolean): string {
  const url = req.url ?? '';
  const q = url.indexOf('?');
  if (q < 0) return '';
  return withMark ? url.slice(q) : url.slice(q + 1);
}

/** The connection peer's IP, an IPv4-mapped IPv6 address as IPv4. */
function remoteHost(req: IncomingMessage): string {
  const ip = req.socket.remoteAddress ?? '';
  return ip.startsWith('::ffff:') && ip.indexOf('.') > 0 ? ip.slice(7) : ip;
}

/** The value of a prefixed placeholder for one request (empty when the header, key or capture is absent). */
function prefixed(part: Prefixed, req: IncomingMessage): string {
  switch (part.kind) {
    case 'header': {
      const value = req.headers[part.arg.toLowerCase()];
      if (value === undefined) return '';
      return typeof value === 'string' ? value : value.join(', ');
    }
    case 'query_param': {
      const url = req.url ?? '';
      const q = url.indexOf('?');
      if (q < 0) return '';
      return new URLSearchParams(url.slice(q + 1)).get(part.arg) ?? '';
    }
    default: {
      const m = capturesOf(req)?.get(part.name);
      if (m === undefined) return '';
      const index = /^\d+$/.test(part.group) ? Number(part.group) : -1;
      return (index >= 0 ? m[index] : m.groups?.[part.group]) ?? '';
    }
  }
}

/** The error a `handle_errors` block is answering for `req` (undefined: none). */
export function errorOf(req: IncomingMessage): ErrorSlot | undefined {
  return (req as IncomingMessage & { [kError]?: ErrorSlot })[kError];
}
