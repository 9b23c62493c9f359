import { readBindAddresses } from '../values.js';
import type { Directive } from './directive.js';

/**
 * ```
 * bind <address>...
 * ```
 * The local addresses the site answers on, as Caddy's `bind`: IP literals
 * (`127.0.0.1`, `::1`, `[::1]`, `0.0.0.0` for every IPv4 address, `::` for
 * every address). Listeners are opened on them at the site's port; a
 * connection that arrived at another local address does not reach the
 * site (404). Without it, the site answers on the global `default_bind`.
 */
export const bind: Directive = {
  name: 'bind',
  scope: 'site',
  once: true,
  parse(d, state) {
    state.site.bind = readBindAddresses(d);
  },
};
