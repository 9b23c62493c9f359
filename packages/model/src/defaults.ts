import type { SiteAddress, UpstreamAddress } from './addresses.js';
import type { GlobalOptions, HistoryOptions } from './global-options.js';
import type { ReverseProxyHandler } from './handlers.js';
import type { Site } from './site.js';
import type { AutoHttps, KeyType } from './tls.js';

/** Defaults, in one place, for compilers and route sources. */
export const DEFAULTS = Object.freeze({
  http_port: 80,
  https_port: 443,
  admin: '127.0.0.1:6190',
  health_interval_ms: 10_000,
  health_timeout_ms: 5_000,
  fail_duration_ms: 10_000,
  cache_max_size_bytes: 64 * 1024 * 1024,
  cache_ttl_ms: 300_000,
  under_attack_difficulty: 16,
  key_type: 'p256' as KeyType,
  auto_https: 'on' as AutoHttps,
  grace_period_ms: 30_000,
});

/** The global options with every default applied. */
export function defaultGlobalOptions(): GlobalOptions {
  return {
    http_port: DEFAULTS.http_port,
    https_port: DEFAULTS.https_port,
    email: null,
    admin: null,
    auto_https: DEFAULTS.auto_https,
    acme_ca: [],
    acme_ca_root: null,
    acme_eab: null,
    on_demand_ask: null,
    key_type: DEFAULTS.key_type,
    state_dir: null,
    trusted_proxies: [],
    geoip_db: null,
    docker: { enabled: true, host: null, network: null },
    default_bind: [],
    grace_period_ms: DEFAULTS.grace_period_ms,
    metrics: null,
  };
}

/** The `history` global option when the Proxyfile does not set it: on, 48 h of minutes, 90 days of hours, days until the 256 MB bound. */
export function defaultHistoryOptions(): HistoryOptions {
  return {
    enabled: true,
    minute_retention_ms: 48 * 3_600_000,
    hour_retention_ms: 90 * 86_400_000,
    day_retention_ms: null,
    max_size_bytes: 256_000_000,
  };
}

/** A reverse_proxy handler with every default applied. */
export function defaultReverseProxy(upstreams: UpstreamAddress[]): ReverseProxyHandler {
  return {
    kind: 'reverse_proxy',
    upstreams,
    lb_policy: 'round_robin',
    health: {
      uri: null,
      interval_ms: DEFAULTS.health_interval_ms,
      timeout_ms: DEFAULTS.health_timeout_ms,
      fail_duration_ms: DEFAULTS.fail_duration_ms,
    },
    header_up: [],
    tls: { enabled: false, insecure_skip_verify: false, server_name: null, ca_file: null },
  };
}

/** A site with no directives: addresses only, TLS auto, analytics on. */
export function emptySite(addresses: SiteAddress[]): Site {
  return {
    addresses,
    tls: { mode: 'auto', cert_file: null, key_file: null, on_demand: false },
    rate_limit: null,
    cache: null,
    encode: null,
    under_attack: { enabled: false, difficulty: DEFAULTS.under_attack_difficulty },
    analytics: true,
    handles: [],
    bind: [],
    header: [],
    basic_auth: null,
    redirects: [],
    handler: null,
    log: null,
  };
}
