import type http from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { Transform } from 'node:stream';
import { kExchange } from '../slots.js';
import { type Emitter, type Exchange, WholeBody } from './exchange.js';
import { responseHeaders } from './response-headers.js';
import { applyRewrite, destroyPipedTarget, transformFor, wholeRewriteFor } from './response-hooks.js';

/** An upstream response; Node's client-side IncomingMessage keeps its ClientRequest in `req`. */
type UpstreamResponse = IncomingMessage & { req?: Emitter };

/**
 * The upstream answered: hop-by-hop headers out → the observer (a cache
 * fill) → `editResponseHeaders` → `hooks.rewriteBody` for a small declared
 * body, else `hooks.transformResponse` → head written, body streamed by the
 * two-listener pump (or piped through the transform).
 */
export function onUpstreamResponse(this: Emitter & http.ClientRequest, proxyRes: IncomingMessage): void {
  const exchange = this[kExchange];
  if (exchange === undefined) return;
  const { res, req, ctx, options } = exchange;
  if (exchange.aborted || res.destroyed) {
    proxyRes.resume();
    return;
  }
  exchange.proxyRes = proxyRes;
  const status = proxyRes.statusCode ?? 502;
  const headers = responseHeaders(proxyRes.rawHeaders, proxyRes.socket);
  // A 204 has no body, whatever the upstream declared (RFC 9110 §8.6: no Content-Length on it).
  if (status === 204 && headers['content-length'] !== undefined) delete headers['content-length'];
  // Node emits 'error' (after 'aborted') when the upstream resets mid-body.
  proxyRes.on('error', onUpstreamBodyError);
  if (exchange.timing?.streamAll === true || isEventStream(headers['content-type'])) startStream(exchange, proxyRes);
  exchange.observer?.onUpstreamResponse(proxyRes, status, headers);
  options.editResponseHeaders?.(headers, status);
  if (exchange.setCookie !== null) appendSetCookie(headers, exchange.setCookie);
  const hooks = exchange.hooks;
  const rewrite = wholeRewriteFor(hooks, ctx, req, status, headers);
  if (rewrite !== null) {
    rewriteWhole(exchange, proxyRes, status, headers, rewrite);
    return;
  }
  const transform = transformFor(hooks, ctx, req, status, headers);
  res.writeHead(status, headers);
  if (transform !== null) {
    (transform as Emitter & Transform)[kExchange] = exchange;
    transform.on('error', destroyPipedTarget);
    proxyRes.pipe(transform).pipe(res);
  } else {
    // A two-listener pump instead of pipe() (which adds seven listeners and
    // removes them again); backpressure through 'drain'.
    proxyRes.on('data', pumpData);
    proxyRes.on('end', pumpEnd);
  }
}

/**
 * Collects a small upstream body (its Content-Length is at most
 * `SMALL_BODY_BYTES`), rewrites it whole and sends head and body in
 * one write with the new Content-Length. Listeners are module functions (no
 * closure per response) that reach the state through the exchange, as the
 * pump does, so no property is added to Node's IncomingMessage. A one-chunk
 * body is not copied before the rewrite.
 */
function rewriteWhole(
  exchange: Exchange,
  proxyRes: IncomingMessage,
  status: number,
  headers: IncomingHttpHeaders,
  rewrite: (body: Buffer) => Buffer,
): void {
  exchange.whole = new WholeBody(status, headers, rewrite);
  proxyRes.on('data', collectWholeBody);
  proxyRes.on('end', sendWholeBody);
}

function collectWholeBody(this: UpstreamResponse, chunk: Buffer): void {
  this.req?.[kExchange]?.whole?.chunks.push(chunk);
}

function sendWholeBody(this: UpstreamResponse): void {
  const exchange = this.req?.[kExchange];
  const whole = exchange?.whole;
  if (exchange === undefined || !whole) return;
  const { headers } = whole;
  const res = exchange.res;
  if (exchange.aborted || res.destroyed) return;
  // A small body usually comes in one chunk: rewritten as it is, not copied first.
  const chunks = whole.chunks;
  const body = applyRewrite(whole.rewrite, chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks));
  headers['content-length'] = String(body.length);
  res.writeHead(whole.status, headers);
  res.end(body);
}

function pumpData(this: UpstreamResponse, chunk: Buffer): void {
  const exchange = this.req?.[kExchange];
  if (exchange === undefined) return;
  const res = exchange.res;
  if (res.destroyed) return;
  if (!res.write(chunk)) {
    this.pause();
    if (!exchange.drainHooked) {
      exchange.drainHooked = true;
      res.on('drain', resumeUpstream);
    }
  }
}

function resumeUpstream(this: Emitter & ServerResponse): void {
  this[kExchange]?.proxyRes?.resume();
}

function pumpEnd(this: UpstreamResponse): void {
  const exchange = this.req?.[kExchange];
  if (exchange !== undefined && !exchange.res.destroyed) exchange.res.end();
}

/** The upstream reset mid-body: the client's response cannot be completed, so it is destroyed. */
function onUpstreamBodyError(this: UpstreamResponse): void {
  const exchange = this.req?.[kExchange];
  if (exchange !== undefined && !exchange.res.writableFinished) exchange.res.destroy();
}

const EVENT_STREAM = /^text\/event-stream/i;

/** Whether a response is Server-Sent Events (`text/event-stream`, any parameters); no allocation per response. */
function isEventStream(type: string | string[] | undefined): boolean {
  return typeof type === 'string' && EVENT_STREAM.test(type);
}

/**
 * A streamed response (SSE, or `flush_interval -1`): its head arrived, so
 * the upstream's silence no longer means trouble (an event stream is quiet
 * between events), and the read timeout stops; `stream_timeout`, when set,
 * bounds its life instead. The socket gets its idle timeout back when it
 * is pooled again (`UpstreamAgent.addRequest`).
 */
function startStream(exchange: Exchange, proxyRes: IncomingMessage): void {
  const socket = proxyRes.socket;
  socket?.setTimeout(0);
  const limit = exchange.timing?.streamTimeoutMs ?? 0;
  if (limit <= 0) return;
  // Both sides go: the client learns the stream ended without its last chunk (no clean end).
  const timer = setTimeout(() => {
    proxyRes.destroy();
    if (!exchange.res.writableFinished) exchange.res.destroy();
  }, limit);
  proxyRes.once('close', () => clearTimeout(timer));
}

/** Adds a `Set-Cookie` line to the response headers, after the upstream's own. */
function appendSetCookie(headers: IncomingHttpHeaders, cookie: string): void {
  const have = headers['set-cookie'];
  headers['set-cookie'] = have === undefined ? [cookie] : [...have, cookie];
}
