import type { IncomingMessage } from 'node:http';
import {
  PLACEHOLDER_PATTERN,
  REMAINDER_PLACEHOLDER,
  REQUEST_PLACEHOLDERS,
  type RequestPlaceholder,
} from '@proxyd/model';
import type { RequestContext } from '../hooks.js';
import type { PathPattern } from './path-pattern.js';

/** One part of a compiled template: literal text, a request placeholder, or `redir`'s remainder. */
type Part = string | RequestPlaceholder | typeof REMAINDER;
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
      const kind = (REQUEST_PLACEHOLDERS as Record<string, RequestPlaceholder>)[name];
      const part = kind ?? (remainder && name === REMAINDER_PLACEHOLDER ? REMAINDER : null);
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
      switch (part) {
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
        case REMAINDER:
          out += from === undefined ? '' : from.remainder(ctx.path);
          break;
        default:
          out += part;
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
