import type { Endpoint } from '../endpoint.js';
import { AdminError } from '../errors.js';
import type { DiscoveryStatus } from '../ports.js';
import { DiscoveryResponse, type DiscoveryWarning } from '../schemas.js';

/** The answer without a discovery port: this process discovers nothing. */
const off = (): DiscoveryResponse => ({
  enabled: false,
  socket: null,
  connected: false,
  api_version: null,
  last_error: null,
  containers: 0,
  warnings: [],
});

const compare = (a: string | null, b: string | null): number =>
  a === b ? 0 : a === null ? -1 : b === null ? 1 : a < b ? -1 : 1;

function toResponse(status: DiscoveryStatus): DiscoveryResponse {
  const { containers } = status;
  // A count the schema would only truncate or pass through (1.5, -1, NaN) is a port bug: answer like a failed schema.
  if (!Number.isSafeInteger(containers) || containers < 0) {
    throw new AdminError('ADMIN_SERIALIZE', `containers ${String(containers)} is not a count`);
  }
  const warnings = status.warnings
    .map((w): DiscoveryWarning => ({ container: w.container, label: w.label, reason: w.reason }))
    .sort((a, b) => compare(a.container, b.container) || compare(a.label, b.label) || compare(a.reason, b.reason));
  return {
    enabled: status.enabled,
    socket: status.socket,
    connected: status.connected,
    api_version: status.apiVersion,
    last_error: status.lastError,
    containers,
    warnings,
  };
}

/** `GET /discovery`: the state of container discovery; `enabled: false` and zeros when it does not run. */
export const getDiscovery: Endpoint = {
  method: 'GET',
  path: '/discovery',
  url: '/discovery',
  tag: 'discovery',
  operationId: 'getDiscovery',
  summary: 'Container discovery',
  description:
    'The state of container discovery (routes from proxy.* labels of Docker or Podman containers): whether it is on, the runtime endpoint, the connection, the runtime API version, the last error, the number of discovered containers and the warnings (invalid labels, ambiguous networks), sorted by container then label. When discovery does not run: enabled false, socket, api_version and last_error null, connected false, containers 0, warnings [].',
  auth: true,
  responses: { 200: { description: 'The discovery state', schema: DiscoveryResponse } },
  errors: {
    500: 'internal error: the discovery source failed to answer; serialize error: its state could not be serialized',
  },
  handler: (ctx) => async () => {
    if (ctx.discovery === undefined) return off();
    return toResponse(await ctx.discovery.status());
  },
};
