/**
 * The response-cache key a `PURGE /cache/{host}/{path}` names, as the
 * cache stores it: the host lowercase, the path as given (with its query),
 * a missing leading `/` added (`a.test` → `a.test/`). Used by every node's
 * cache and by the index a node's workers share, so both read a purge alike.
 */
export function cachePurgeKey(key: string): string {
  const slash = key.indexOf('/');
  return slash < 0 ? `${key.toLowerCase()}/` : `${key.slice(0, slash).toLowerCase()}${key.slice(slash)}`;
}
