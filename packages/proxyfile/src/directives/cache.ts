import { type CacheConfig, DEFAULTS } from '@proxyd/model';
import { ProxyfileErrorCode } from '../errors.js';
import { show } from '../lexer.js';
import { parseSize, readDuration } from '../values.js';
import type { Directive } from './directive.js';

/**
 * ```
 * cache [{
 *     max_size <bytes>     # 1048576, 512KB, 10MB, 1GB (×1000) or 10MiB, 1GiB (×1024); default 64MiB
 *     ttl <duration>       # upper bound on freshness; default 5m
 * }]
 * ```
 * Caches cacheable upstream responses of the site in memory (LRU).
 */
export const cache: Directive = {
  name: 'cache',
  scope: 'site',
  once: true,
  parse(d, state) {
    d.end();
    const config: CacheConfig = { max_size_bytes: DEFAULTS.cache_max_size_bytes, ttl_ms: DEFAULTS.cache_ttl_ms };
    const seen = new Set<string>();
    for (const sub of d.blockLines()) {
      const name = sub.name.text;
      if (seen.has(name)) throw sub.error(sub.name, ProxyfileErrorCode.DUPLICATE_DIRECTIVE, `"${name}" is set twice`);
      seen.add(name);
      if (name === 'max_size') {
        const t = sub.arg('a size such as 10MB or 1GiB');
        const bytes = parseSize(t.text);
        if (bytes === null || bytes < 1) {
          throw sub.unexpected(t, 'a size such as 1048576, 10MB or 1GiB', ProxyfileErrorCode.INVALID_VALUE);
        }
        config.max_size_bytes = bytes;
      } else if (name === 'ttl') {
        config.ttl_ms = readDuration(sub, 0);
      } else {
        throw sub.error(
          sub.name,
          ProxyfileErrorCode.UNKNOWN_DIRECTIVE,
          `unexpected ${show(sub.name)}, expected a cache option (max_size, ttl)`,
        );
      }
      sub.end();
      sub.noBlock();
    }
    state.site.cache = config;
  },
};
