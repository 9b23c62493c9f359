import type { IncomingMessage } from 'node:http';
import type { HeaderOp } from '@proxyd/model';
import type { RequestContext } from '../hooks.js';
import { Template } from '../middleware/placeholders.js';
import { HOP_BY_HOP_NAMES, isHopByHop, stripHopByHop } from './hop-by-hop.js';

/** How the request head sent upstream is built for one `reverse_proxy` handler. */
export interface UpstreamHeaderPlan {
  /** `header_up` operations, names lowercase, with their value's placeholders (`{host}`, …; null: none). */
  readonly ops: readonly (HeaderOp & { readonly template: Template | null })[];
  /** Lowercase names that a `set` or `delete` op replaces: the client's lines are not copied. */
  readonly replaced: ReadonlySet<string>;
}

/** Precomputes the header plan of a handler's `header_up` ops. */
export function upstreamHeaderPlan(headerUp: readonly HeaderOp[]): UpstreamHeaderPlan {
  const ops = headerUp.map((op) => ({
    ...op,
    name: op.name.toLowerCase(),
    template: op.op === 'delete' ? null : Template.of(op.value ?? ''),
  }));
  return { ops, replaced: new Set(ops.filter((op) => op.op !== 'add').map((op) => op.name)) };
}

/** What the forwarded-for headers say, decided by the caller (client IP, trusted peer). */
export interface ForwardedFor {
  /** The value of `X-Forwarded-For` sent upstream. */
  readonly forwardedFor: string;
  /** Keep the client's `X-Forwarded-Proto`/`-Host` (the peer is a trusted proxy). */
  readonly trusted: boolean;
  /** `http` or `https`: the scheme the client used to reach us. */
  readonly proto: string;
  /** The value of `X-Forwarded-Host`: the client's Host. */
  readonly host: string;
}

// Names the copy loop must look at: hop-by-hop, `expect`, and the
// `x-forwarded-*` trio. Keyed by length and lowercase first letter, so the
// common headers (host, accept, user-agent, cookie…) pass without a
// lowercase copy of their name.
const CANDIDATES = new Set<number>();
for (const name of [...HOP_BY_HOP_NAMES, 'expect', 'x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host']) {
  CANDIDATES.add((name.length << 8) | name.charCodeAt(0));
}

/**
 * Builds the head of the upstream request as Node's raw `[name, value, …]`
 * list, from the client's raw header lines, in one pass and without
 * touching `req.headers`: ClientRequest then writes it without building a
 * header map of its own.
 *
 * Dropped: hop-by-hop headers (RFC 9110 §7.6.1) and every header the
 * client's `Connection` names (so a client's `Connection: close` never
 * reaches the upstream, whose connection stays pooled); `Expect` (the proxy
 * answers `100 Continue` itself when it forwards the body); every name
 * with an underscore (see {@link hasUnderscore}). Set:
 * `X-Forwarded-For` (one line), `X-Forwarded-Proto` and `X-Forwarded-Host`
 * (a trusted proxy's own values are kept). A chunked request body stays
 * chunked upstream. `header_up` runs last. Original name case and repeated
 * lines are kept.
 *
 * An HTTP/2 request (RFC 9113 §8.3.1) goes up as HTTP/1.1: `Host` first,
 * from `:authority` (the front door put it in `req.headers.host`; a `host`
 * line the client also sent is dropped), no pseudo-header (`:method`,
 * `:path`, …), the `cookie` fields as one line joined with `; ` (RFC 9113
 * §8.2.3; Node joined them in `req.headers.cookie`), and a body without
 * Content-Length goes chunked.
 */
export function buildUpstreamHeaders(
  req: IncomingMessage,
  forwarded: ForwardedFor,
  plan: UpstreamHeaderPlan,
  ctx?: RequestContext,
): string[] {
  const raw = req.rawHeaders;
  const out: string[] = [];
  const connection = req.headers.connection;
  const named = connection === undefined ? null : connectionTokens(connection);
  const replaced = plan.replaced.size > 0 ? plan.replaced : null;
  let chunked = false;
  let contentLength = false;
  let proto = false;
  let host = false;
  const h2 = req.httpVersionMajor === 2;
  if (h2) {
    out.push('host', req.headers.host ?? '');
    const cookie = req.headers.cookie;
    if (cookie !== undefined && !plan.replaced.has('cookie')) out.push('cookie', cookie);
  }
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    const value = raw[i + 1] as string;
    const first = name.charCodeAt(0) | 0x20;
    // Pseudo-headers, Host and Cookie lines of an HTTP/2 request (written above).
    if (h2 && (first === 0x3a || (name.length <= 6 && H2_WRITTEN.has(name.toLowerCase())))) continue;
    if (hasUnderscore(name)) continue;
    if (CANDIDATES.has((name.length << 8) | first) || named !== null || replaced !== null) {
      const lower = name.toLowerCase();
      if (lower === 'transfer-encoding') {
        chunked = true;
        continue;
      }
      if (lower === 'content-length') contentLength = true;
      else if (lower === 'x-forwarded-for' || lower === 'expect' || isHopByHop(lower)) continue;
      else if (named?.has(lower) === true || replaced?.has(lower) === true) continue;
      if (lower === 'x-forwarded-proto') {
        if (!forwarded.trusted || proto) continue;
        proto = true;
      } else if (lower === 'x-forwarded-host') {
        if (!forwarded.trusted || host) continue;
        host = true;
      }
    } else if (first === 0x63 && name.length === 14 && name.toLowerCase() === 'content-length') {
      contentLength = true;
    }
    out.push(name, value);
  }
  // Without Content-Length a streamed body must stay chunked on the upstream hop.
  if (chunked && !contentLength) out.push('transfer-encoding', 'chunked');
  else if (h2 && !contentLength && requestHasBody(req)) out.push('transfer-encoding', 'chunked');
  out.push('x-forwarded-for', forwarded.forwardedFor);
  if (!proto) out.push('x-forwarded-proto', forwarded.proto);
  if (!host) out.push('x-forwarded-host', forwarded.host);
  for (const op of plan.ops) {
    if (op.op === 'set' || op.op === 'add') out.push(op.name, opValue(op, req, ctx));
  }
  return out;
}

/** A `header_up` value for this request: its placeholders filled when the request context is known. */
function opValue(
  op: HeaderOp & { readonly template: Template | null },
  req: IncomingMessage,
  ctx: RequestContext | undefined,
): string {
  return op.template === null || ctx === undefined ? (op.value ?? '') : op.template.render(req, ctx);
}

const SIMPLE_CONNECTION = new Set(['keep-alive', 'close', 'upgrade']);

/**
 * Whether a client's request header name holds `_`: such a header is not
 * forwarded (nginx's default, `underscores_in_headers off`). Upstreams that
 * map headers to variables (CGI, PHP, many frameworks: `X-Forwarded-For` →
 * `HTTP_X_FORWARDED_FOR`) read `X_Forwarded_For` as the same name, so a
 * client could spoof the proxy's own `X-Forwarded-*` or an auth header a
 * `header_up … delete` removed. `header_up` ops are the operator's and
 * are sent as written.
 */
function hasUnderscore(name: string): boolean {
  return name.includes('_');
}

/** Lines of an HTTP/2 request that {@link buildUpstreamHeaders} writes itself, once. */
const H2_WRITTEN = new Set(['host', 'cookie']);

/**
 * Whether a request has a body to stream upstream: HTTP/1.1 says so with
 * Content-Length or Transfer-Encoding; HTTP/2 by a HEADERS frame without
 * END_STREAM (a body may come without Content-Length).
 */
export function requestHasBody(req: IncomingMessage): boolean {
  const headers = req.headers;
  if (headers['content-length'] !== undefined || headers['transfer-encoding'] !== undefined) return true;
  if (req.httpVersionMajor !== 2) return false;
  return (req as IncomingMessage & { stream?: { endAfterHeaders?: boolean } }).stream?.endAfterHeaders === false;
}

/** Lowercase header names a `Connection` value lists, or null for the usual `keep-alive`/`close`. */
function connectionTokens(value: string): ReadonlySet<string> | null {
  if (SIMPLE_CONNECTION.has(value.toLowerCase())) return null;
  const names = new Set<string>();
  for (const token of value.split(',')) {
    const name = token.trim().toLowerCase();
    if (name.length > 0) names.add(name);
  }
  return names;
}

/**
 * The WebSocket form of {@link buildUpstreamHeaders}: edits `req.headers`
 * in place (http-proxy-3's `ws` pass copies them), with the same rules —
 * hop-by-hop headers and names with `_` out (the caller puts `Connection`
 * and `Upgrade` back),
 * a chunked body stays chunked, `X-Forwarded-*` from `forwarded`, then
 * `header_up`.
 */
export function editUpstreamHeaders(
  req: IncomingMessage,
  forwarded: ForwardedFor,
  plan: UpstreamHeaderPlan,
  ctx?: RequestContext,
): void {
  const headers = req.headers;
  const chunked = headers['transfer-encoding'] !== undefined;
  stripHopByHop(headers, req.rawHeaders);
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    if (hasUnderscore(name)) delete headers[name.toLowerCase()];
  }
  // Without Content-Length a streamed body must stay chunked on the upstream hop.
  if (chunked && headers['content-length'] === undefined) headers['transfer-encoding'] = 'chunked';
  headers['x-forwarded-for'] = forwarded.forwardedFor;
  if (!forwarded.trusted || headers['x-forwarded-proto'] === undefined) headers['x-forwarded-proto'] = forwarded.proto;
  if (!forwarded.trusted || headers['x-forwarded-host'] === undefined) headers['x-forwarded-host'] = forwarded.host;
  for (const op of plan.ops) {
    if (op.op === 'delete') delete headers[op.name];
    else if (op.op === 'set') headers[op.name] = opValue(op, req, ctx);
    else {
      const prev = headers[op.name];
      const value = opValue(op, req, ctx);
      headers[op.name] = prev === undefined ? value : `${prev}, ${value}`;
    }
  }
}
