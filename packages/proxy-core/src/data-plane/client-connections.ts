import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { kOwed } from '../client-errors.js';

/** Whether the server drains ({@link ProxyServer.drain}); `kOwed`: requests in flight on an HTTP/1 connection. */
export const kDraining = Symbol('proxyd.draining');
/** Set on an HTTP/1 connection that closes after a refused request ({@link closesAfter}). */
export const kRefused = Symbol('proxyd.refused');
export type DrainSocket = Duplex & {
  [kOwed]?: number;
  [kDraining]?: boolean;
  [kRefused]?: boolean;
  alpnProtocol?: string | false | null;
};

/**
 * Marks a request's HTTP/1 connection as closing after a refusal: the
 * requests Node's parser still hands over on it (pipelined behind the
 * refused one, or sent while it closes) are dropped, never routed nor
 * forwarded ({@link refusedBefore}); their answers could not be sent.
 */
export function closesAfter(req: IncomingMessage): void {
  if (req.httpVersionMajor === 1) (req.socket as DrainSocket)[kRefused] = true;
}

/** Whether a request came on a connection closing after a refusal ({@link closesAfter}): its body is discarded. */
export function refusedBefore(req: IncomingMessage): boolean {
  if ((req.socket as DrainSocket | null)?.[kRefused] !== true) return false;
  req.resume();
  return true;
}
