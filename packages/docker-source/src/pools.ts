import {
  defaultReverseProxy,
  ENCODE_DEFAULT_MINIMUM_LENGTH,
  emptySite,
  type RouteSpec,
  type UpstreamAddress,
} from '@proxyd/model';
import type { ContainerMember, SiteSettings } from './labels.js';
import type { ContainerHealth } from './runtime/runtime.js';
import type { LabelWarning } from './warnings.js';

/** The `source` tag of every label route (spec §2.1: shown as `"docker"` in `GET /routes`). */
export const DOCKER_SOURCE_TAG = 'docker';

/** Whether a member with this Docker health state is in rotation: no healthcheck counts as healthy. */
export function inRotation(health: ContainerHealth): boolean {
  return health === 'none' || health === 'healthy';
}

/** The route of one domain and how it was derived. */
export interface PoolRoute {
  route: RouteSpec;
  /**
   * A text that is equal for two pools exactly when their routes are:
   * the watcher keeps the previous `RouteSpec` object when it is unchanged,
   * so the data plane keeps that pool (its health state, its round-robin
   * position) across table swaps.
   */
  key: string;
  /** Members whose settings differ from the pool's (the first member's). */
  warnings: LabelWarning[];
}

const byName = (a: ContainerMember, b: ContainerMember): number =>
  a.container.name < b.container.name
    ? -1
    : a.container.name > b.container.name
      ? 1
      : a.container.id < b.container.id
        ? -1
        : a.container.id > b.container.id
          ? 1
          : 0;

/** The first setting two members disagree on, as the label that sets it; null when they agree. */
function differingLabel(a: SiteSettings, b: SiteSettings): string | null {
  if (a.tls !== b.tls) return 'proxy.tls';
  if (a.rateLimit !== b.rateLimit) return 'proxy.rate_limit';
  if ((a.encode ?? []).join() !== (b.encode ?? []).join()) return 'proxy.encode';
  const names = new Set([...a.headers, ...b.headers].map((h) => h.name));
  for (const name of [...names].sort()) {
    const va = a.headers.find((h) => h.name === name)?.value;
    const vb = b.headers.find((h) => h.name === name)?.value;
    if (va !== vb) return `proxy.header.${name}`;
  }
  return null;
}

/**
 * Every running container of one domain → one route (origin `labels`,
 * source `"docker"`) whose `reverse_proxy` pool holds every member in
 * rotation, round-robin, ordered by container name. Docker health
 * `unhealthy` and `starting` are out; no healthcheck counts as healthy;
 * proxyd's own passive checks apply on top. Members with the same address
 * count once.
 *
 * When no member is in rotation the route stays, with an empty pool: the
 * data plane then answers 503 `no healthy upstream` (not 404, which would
 * say the domain is unknown). The model's schema still says `minItems: 1`
 * for upstreams; nothing checks it at run time (README, "Empty pools").
 *
 * Members should agree on the site settings (`proxy.tls`,
 * `proxy.rate_limit`, `proxy.encode`, `proxy.header.*`); the first member by name sets
 * them, and each member that differs gets a warning (it still serves).
 */
export function poolRoute(domain: string, members: readonly ContainerMember[]): PoolRoute {
  const sorted = [...members].sort(byName);
  const first = sorted[0];
  const settings: SiteSettings = first?.settings ?? { tls: 'auto', rateLimit: null, headers: [] };
  const warnings: LabelWarning[] = [];
  const upstreams: UpstreamAddress[] = [];
  const seen = new Set<string>();
  for (const member of sorted) {
    if (first && member !== first) {
      const label = differingLabel(settings, member.settings);
      if (label) {
        warnings.push({
          container: member.container,
          label,
          reason: `differs from ${first.container.name} for ${domain}; the pool uses ${first.container.name}'s settings`,
        });
      }
    }
    if (!inRotation(member.health)) continue;
    const key = `${member.upstream.host} ${member.upstream.port}`;
    if (seen.has(key)) continue;
    seen.add(key);
    upstreams.push({ host: member.upstream.host, port: member.upstream.port });
  }

  const off = settings.tls === 'off';
  const site = emptySite([{ scheme: off ? 'http' : null, host: domain, port: null }]);
  if (off) site.tls.mode = 'off';
  site.rate_limit = settings.rateLimit;
  site.header = settings.headers.map((h) => ({ ...h }));
  if (settings.encode !== undefined)
    site.encode = { encodings: [...settings.encode], minimum_length: ENCODE_DEFAULT_MINIMUM_LENGTH };
  site.handler = defaultReverseProxy(upstreams);
  return {
    route: { domain, origin: 'labels', source: DOCKER_SOURCE_TAG, site },
    key: JSON.stringify([upstreams, settings]),
    warnings,
  };
}
