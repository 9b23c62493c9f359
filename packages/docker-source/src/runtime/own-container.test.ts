import { describe, expect, it } from 'vitest';
import { fakeContainer } from './fake-runtime.test-helpers.js';
import { detectOwnNetworks, ownContainerCandidates } from './own-container.js';

const ID = 'a5b1b49bd3b05c80b394c67fba9731f40166016ca6c207ad7edb1a8211f9e594';
const none = { cgroup: '', mountinfo: '', hostname: 'laptop', marker: false };

describe('ownContainerCandidates', () => {
  it.each([
    ['outside a container: nothing', none, []],
    ['Docker, cgroup v1', { ...none, cgroup: `12:memory:/docker/${ID}\n0::/docker/${ID}\n` }, [ID]],
    ['Podman, cgroup v1', { ...none, cgroup: `1:name=systemd:/libpod_parent/libpod-${ID}\n` }, [ID]],
    ['Podman, systemd scope', { ...none, cgroup: `0::/machine.slice/libpod-${ID}.scope/container\n` }, [ID]],
    [
      'cgroup v2 namespace (0::/): the hostname bind mount',
      {
        cgroup: '0::/\n',
        mountinfo: `612 600 0:50 /var/lib/docker/containers/${ID}/hostname /etc/hostname rw - ext4 /dev/vda rw\n612 600 0:50 /x /etc/hosts rw - ext4 /dev/vda rw\n`,
        hostname: ID.slice(0, 12),
        marker: true,
      },
      [ID, ID.slice(0, 12)],
    ],
    ['a marker and a host name only', { ...none, hostname: 'proxyd', marker: true }, ['proxyd']],
    ['a short-id host name outside a container is not enough', { ...none, hostname: ID.slice(0, 12) }, []],
  ])('%s', (_name, clues, expected) => {
    expect(ownContainerCandidates(clues)).toEqual(expected);
  });
});

describe('detectOwnNetworks', () => {
  it('inspects the candidates in order; null when none is known to the runtime', async () => {
    const asked: string[] = [];
    const own = fakeContainer(
      'proxyd',
      {},
      {
        id: ID,
        networks: [
          { name: 'backend', ipv4: '172.18.0.2', ipv6: '' },
          { name: 'frontend', ipv4: '172.19.0.2', ipv6: '' },
        ],
      },
    );
    const runtime = {
      inspect: async (id: string) => {
        asked.push(id);
        return id === ID ? own : null;
      },
    };
    expect(await detectOwnNetworks(runtime, { ...none, cgroup: `0::/docker/${ID}` })).toEqual(['backend', 'frontend']);
    expect(await detectOwnNetworks(runtime, none)).toBeNull();
    expect(asked).toEqual([ID]);
    const failing = { inspect: async () => Promise.reject(new Error('down')) };
    expect(await detectOwnNetworks(failing, { ...none, marker: true, hostname: 'x' })).toBeNull();
  });
});
