import type { ContainerNetwork } from './runtime/runtime.js';

/** What {@link chooseAddress} decides from. */
export interface NetworkChoiceInput {
  /** The container's `HostConfig.NetworkMode`. */
  networkMode: string;
  /** The container's networks, as inspect shows them. */
  networks: readonly ContainerNetwork[];
  /** The `proxy.network` label; null when absent. */
  label: string | null;
  /** The configured default network (`docker_network` option); null when none. */
  defaultNetwork: string | null;
  /** The networks of proxyd's own container; null when proxyd does not run in a container. */
  ownNetworks: readonly string[] | null;
}

/** Which rule picked the network. */
export type NetworkRule = 'host' | 'label' | 'default' | 'shared' | 'only';

/** The address to proxy to, or why there is none. */
export type NetworkChoice =
  | {
      ok: true;
      /** IPv4 address, or IPv6 without brackets; `127.0.0.1` for a host-network container. */
      host: string;
      /** The network the address is on; null for a host-network container. */
      network: string | null;
      rule: NetworkRule;
    }
  | { ok: false; reason: string };

const names = (networks: readonly { name: string }[]) => networks.map((n) => JSON.stringify(n.name)).join(', ');

function addressOn(network: ContainerNetwork, rule: NetworkRule): NetworkChoice {
  const host = network.ipv4 || network.ipv6;
  if (host === '') return { ok: false, reason: `the container has no address on network "${network.name}"` };
  return { ok: true, host, network: network.name, rule };
}

/**
 * The address proxyd forwards to, never picked at random:
 *
 * 1. a host-network container (`NetworkMode: host`) → `127.0.0.1`;
 * 2. the `proxy.network` label, which must name one of its networks;
 * 3. the configured default network, when the container is on it (else
 *    the next rules);
 * 4. the one network the container shares with proxyd's own container;
 * 5. the container's only network;
 *
 * else no address, with a reason that lists the networks. A container
 * sharing another's namespace (`container:<id>`) or with `none` has no
 * address of its own.
 */
export function chooseAddress(input: NetworkChoiceInput): NetworkChoice {
  const { networkMode, networks, label, defaultNetwork, ownNetworks } = input;
  if (networkMode === 'host') return { ok: true, host: '127.0.0.1', network: null, rule: 'host' };
  if (networkMode.startsWith('container:')) {
    return {
      ok: false,
      reason: `the container shares the network of container ${networkMode.slice('container:'.length, 'container:'.length + 12)}: put the labels on that container`,
    };
  }
  if (networks.length === 0) {
    return { ok: false, reason: `the container is on no network (network mode "${networkMode || 'none'}")` };
  }
  if (label !== null) {
    const chosen = networks.find((n) => n.name === label);
    if (!chosen)
      return { ok: false, reason: `the container is not on network "${label}"; it is on ${names(networks)}` };
    return addressOn(chosen, 'label');
  }
  if (defaultNetwork !== null) {
    const chosen = networks.find((n) => n.name === defaultNetwork);
    if (chosen) return addressOn(chosen, 'default');
  }
  if (ownNetworks !== null) {
    const shared = networks.filter((n) => ownNetworks.includes(n.name));
    if (shared.length === 1) return addressOn(shared[0] as ContainerNetwork, 'shared');
    if (shared.length > 1) {
      return {
        ok: false,
        reason: `the container shares several networks with proxyd (${names(shared)}): set proxy.network to one of them`,
      };
    }
  }
  if (networks.length === 1) return addressOn(networks[0] as ContainerNetwork, 'only');
  return {
    ok: false,
    reason: `the container is on several networks (${names(networks)}) and none is chosen: set proxy.network (or the default network option)`,
  };
}
