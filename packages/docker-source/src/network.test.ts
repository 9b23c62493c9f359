import { describe, expect, it } from 'vitest';
import { chooseAddress, type NetworkChoice, type NetworkChoiceInput } from './network.js';

const net = (name: string, ipv4 = '', ipv6 = '') => ({ name, ipv4, ipv6 });
const front = net('frontend', '172.19.0.5');
const back = net('backend', '172.18.0.5');
const v6 = net('v6only', '', 'fd00::5');
const base: NetworkChoiceInput = {
  networkMode: 'bridge',
  networks: [],
  label: null,
  defaultNetwork: null,
  ownNetworks: null,
};

describe('chooseAddress', () => {
  const cases: Array<[string, Partial<NetworkChoiceInput>, NetworkChoice | string]> = [
    [
      'host network: loopback, whatever else is set',
      { networkMode: 'host', networks: [net('host')], label: 'backend' },
      { ok: true, host: '127.0.0.1', network: null, rule: 'host' },
    ],
    ['the only network', { networks: [back] }, { ok: true, host: '172.18.0.5', network: 'backend', rule: 'only' }],
    [
      'IPv6 when the network has no IPv4',
      { networks: [v6] },
      { ok: true, host: 'fd00::5', network: 'v6only', rule: 'only' },
    ],
    [
      'the label picks among several',
      { networks: [back, front], label: 'frontend' },
      { ok: true, host: '172.19.0.5', network: 'frontend', rule: 'label' },
    ],
    [
      'the label wins over the default network and the shared one',
      { networks: [back, front], label: 'frontend', defaultNetwork: 'backend', ownNetworks: ['backend'] },
      { ok: true, host: '172.19.0.5', network: 'frontend', rule: 'label' },
    ],
    [
      'a label naming a network the container is not on',
      { networks: [back, front], label: 'db' },
      'the container is not on network "db"; it is on "backend", "frontend"',
    ],
    [
      'the default network when the container is on it',
      { networks: [back, front], defaultNetwork: 'frontend', ownNetworks: ['backend'] },
      { ok: true, host: '172.19.0.5', network: 'frontend', rule: 'default' },
    ],
    [
      'a default network the container is not on: the next rules',
      { networks: [back, front], defaultNetwork: 'db', ownNetworks: ['backend', 'proxy'] },
      { ok: true, host: '172.18.0.5', network: 'backend', rule: 'shared' },
    ],
    [
      'the one network shared with proxyd',
      { networks: [back, front], ownNetworks: ['frontend'] },
      { ok: true, host: '172.19.0.5', network: 'frontend', rule: 'shared' },
    ],
    [
      'several shared with proxyd',
      { networks: [back, front], ownNetworks: ['frontend', 'backend'] },
      'the container shares several networks with proxyd ("backend", "frontend"): set proxy.network to one of them',
    ],
    [
      'none shared, one network: the only one',
      { networks: [back], ownNetworks: ['proxy'] },
      { ok: true, host: '172.18.0.5', network: 'backend', rule: 'only' },
    ],
    [
      'two networks and nothing to choose: no route, the networks listed',
      { networks: [back, front] },
      'the container is on several networks ("backend", "frontend") and none is chosen: set proxy.network (or the default network option)',
    ],
    [
      'no address on the chosen network',
      { networks: [net('empty')] },
      'the container has no address on network "empty"',
    ],
    [
      'network mode none',
      { networkMode: 'none', networks: [] },
      'the container is on no network (network mode "none")',
    ],
    [
      "another container's namespace",
      { networkMode: `container:${'ab'.repeat(32)}`, networks: [] },
      'the container shares the network of container abababababab: put the labels on that container',
    ],
  ];
  it.each(cases)('%s', (_name, input, expected) => {
    const choice = chooseAddress({ ...base, ...input });
    expect(choice).toEqual(typeof expected === 'string' ? { ok: false, reason: expected } : expected);
  });
});
