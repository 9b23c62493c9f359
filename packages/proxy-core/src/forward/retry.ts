import type http from 'node:http';
import { DataPlaneErrorCode } from '../errors.js';
import type { Exchange } from './exchange.js';

/**
 * Error codes that mean "could not connect to this member" (passive health).
 * A reset on a reused keep-alive socket is not one: it is a race with the
 * upstream's idle close, not a sign the member is down.
 */
const CONNECT_FAILURES = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

/** Methods that may be sent twice (RFC 9110 §9.2.2) and carry no body here. */
const RETRIABLE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Whether an upstream error code is a timeout (answered 504, else 502). */
export function isTimeout(code: string): boolean {
  return code === DataPlaneErrorCode.CONNECT_TIMEOUT || code === DataPlaneErrorCode.IDLE_TIMEOUT;
}

/** Whether an upstream error takes the member out of rotation for `fail_duration`. */
export function isConnectFailure(code: string): boolean {
  return code === DataPlaneErrorCode.CONNECT_TIMEOUT || CONNECT_FAILURES.has(code);
}

/**
 * Whether a failed exchange may be sent again: the first try went out on a
 * reused keep-alive socket that the upstream reset or closed before any
 * response byte, the request has no body, and its method is idempotent.
 */
export function retriable(exchange: Exchange, code: string): boolean {
  return (
    !exchange.retried &&
    (code === 'ECONNRESET' || code === 'EPIPE') &&
    exchange.proxyRes === null &&
    !exchange.res.headersSent &&
    !exchange.hasBody &&
    (exchange.proxyReq as (http.ClientRequest & { reusedSocket?: boolean }) | null)?.reusedSocket === true &&
    RETRIABLE_METHODS.has(exchange.req.method ?? '')
  );
}
