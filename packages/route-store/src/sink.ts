import type { RouteSpec } from '@proxyd/model';
import type { DeclaredOrigin } from './precedence.js';

/**
 * What a route source writes through (the Proxyfile now, the container
 * labels next). `RouteStore` implements it; a source imports this type
 * only, never the store.
 */
export interface RouteSink {
  /**
   * Replaces the complete set of routes `origin` declares, domains
   * case-insensitive. Which domains the routes then hold follows the
   * precedence table (`ORIGINS`). Resolves once the new table is published.
   */
  replaceOrigin(origin: DeclaredOrigin, routes: readonly RouteSpec[]): Promise<void>;
}
