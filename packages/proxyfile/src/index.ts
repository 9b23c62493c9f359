/** The model's `host:port` rule (`@proxyd/model`), for the CLI, which imports only proxyfile and admin-api. */
export { type HostPort, type Parsed, parseHostPort } from '@proxyd/model';
export { DIRECTIVES } from './directives/index.js';
export { type Position, ProxyfileError, ProxyfileErrorCode } from './errors.js';
export { type FormatOptions, format, isFormatted } from './format.js';
export { GLOBAL_OPTION_NAMES } from './global-options.js';
export { type ParseOptions, parse } from './parse.js';
export {
  createReloader,
  type ProxyfileLogger,
  type Reloader,
  type ReloaderOptions,
  type ReloadResult,
} from './reload.js';
export {
  createProxyfileSource,
  loadProxyfile,
  type ProxyfileReload,
  type ProxyfileSource,
  type ProxyfileSourceOptions,
  routesFromConfig,
} from './route-source.js';
export { type ConfigSummary, summarize } from './summary.js';
export {
  type ProxyfileInputs,
  type ProxyfileWatch,
  proxyfileInputs,
  WATCH_DEBOUNCE_MS,
  type WatchOptions,
  watchProxyfile,
} from './watch.js';
