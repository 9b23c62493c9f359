import { deserialize, serialize } from 'node:v8';
import { RouteCompactor } from '../contract/compact-routes.js';
import type { RouteUpdate } from '../contract/route-tables.js';

const encoded = new WeakMap<RouteUpdate, Uint8Array>();
/** One per primary: the numbers of the shared API sites hold across messages. */
const compactor = new RouteCompactor();

/**
 * A route update as it crosses IPC: serialised once (V8's structured
 * serialisation, what `serialization: 'advanced'` does per message) and the
 * same bytes sent to every worker, so a table of 100,000 routes is encoded
 * once per publication, not once per worker. The same update object gives
 * the same bytes. API routes go column-wise (`RouteCompactor`: a domain and
 * a source each, their shared sites once): 100,000 of them to one upstream
 * are ~2 MB, not 26 MB of Site objects.
 */
export function encodeRouteUpdate(update: RouteUpdate): Uint8Array {
  let bytes = encoded.get(update);
  if (bytes === undefined) {
    bytes = serialize(compactor.compact(update));
    encoded.set(update, bytes);
  }
  return bytes;
}

/** The update {@link encodeRouteUpdate} encoded (a worker's side). */
export function decodeRouteUpdate(bytes: Uint8Array): RouteUpdate {
  return deserialize(bytes) as RouteUpdate;
}
