import { execFileSync } from 'node:child_process';

/** One node's network namespace: its own interface and address on the fleet's bridge. */
export interface NodeNamespace {
  /** The namespace's name (`ip netns exec <name> …`). */
  readonly name: string;
  /** The node's address on the bridge, e.g. `10.213.7.2`. */
  readonly address: string;
  /** The command prefix that runs a program inside the namespace: `['ip', 'netns', 'exec', name]`. */
  readonly exec: readonly string[];
}

/** A bridge on the host and one namespace per node attached to it. */
export interface FleetNetwork {
  /** The host's address on the bridge: peers the nodes reach (Redis, the ACME CA) listen here. */
  readonly hostAddress: string;
  readonly nodes: readonly NodeNamespace[];
  /** Deletes the namespaces, their veth pairs and the bridge; twice is fine. */
  dispose(): void;
}

const ip = (...args: string[]) => execFileSync('ip', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Removes what an earlier test process left when it died before `dispose()` (names carry its pid). */
function removeStale(): void {
  for (const line of ip('netns', 'list').split('\n')) {
    const match = /^(proxyd-(\d+)-\d+)\b/.exec(line);
    if (match !== null && !alive(Number(match[2]))) ip('netns', 'delete', match[1] as string);
  }
  for (const line of ip('-o', 'link', 'show', 'type', 'bridge').split('\n')) {
    const match = /^\d+: (pxb(\d+)(?:x\d+)?):/.exec(line);
    if (match !== null && !alive(Number(match[2]))) ip('link', 'delete', match[1] as string);
  }
}

/** A /24 in 10.213.0.0/16 that no interface on the host uses. */
function freeSubnet(): string {
  const used = ip('-o', '-4', 'addr', 'show');
  for (let k = 1; k < 255; k++) {
    const prefix = `10.213.${k}.`;
    if (!used.includes(` ${prefix}`)) return prefix;
  }
  throw new Error('no free /24 in 10.213.0.0/16 for the test network');
}

let created = 0;

/**
 * Makes `count` network namespaces, each with a veth pair whose other end
 * is on a new bridge in the host's namespace, so each node has its own
 * address and its own loopback, as machines on one LAN would. Traffic stays
 * on this machine: the bridge has no uplink and no route leaves it.
 * Needs root (CI and this machine run as root) and iproute2.
 */
export function createFleetNetwork(count: number): FleetNetwork {
  if (process.getuid?.() !== 0) {
    throw new Error('createFleetNetwork: network namespaces need root (run the e2e tests as root, as CI does)');
  }
  removeStale();
  const tag = `${process.pid}`;
  const index = created++;
  const bridge = `pxb${tag}${index > 0 ? `x${index}` : ''}`.slice(0, 15);
  const prefix = freeSubnet();
  const hostAddress = `${prefix}1`;
  const nodes: NodeNamespace[] = [];
  let disposed = false;
  const dispose = () => {
    if (disposed) return;
    disposed = true;
    for (const node of nodes) {
      try {
        ip('netns', 'delete', node.name);
      } catch {
        // already gone
      }
    }
    try {
      ip('link', 'delete', bridge);
    } catch {
      // already gone
    }
  };
  try {
    ip('link', 'add', bridge, 'type', 'bridge');
    ip('addr', 'add', `${hostAddress}/24`, 'dev', bridge);
    ip('link', 'set', bridge, 'up');
    for (let i = 0; i < count; i++) {
      const name = `proxyd-${tag}-${index * 100 + i}`;
      const hostEnd = `pxv${tag}${String.fromCharCode(97 + index)}${i}`.slice(0, 15);
      const address = `${prefix}${i + 2}`;
      ip('netns', 'add', name);
      nodes.push({ name, address, exec: ['ip', 'netns', 'exec', name] });
      ip('link', 'add', hostEnd, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', name);
      ip('link', 'set', hostEnd, 'master', bridge);
      ip('link', 'set', hostEnd, 'up');
      ip('netns', 'exec', name, 'ip', 'addr', 'add', `${address}/24`, 'dev', 'eth0');
      ip('netns', 'exec', name, 'ip', 'link', 'set', 'eth0', 'up');
      ip('netns', 'exec', name, 'ip', 'link', 'set', 'lo', 'up');
    }
  } catch (err) {
    dispose();
    throw new Error(`createFleetNetwork: ${(err as { stderr?: string }).stderr ?? (err as Error).message}`);
  }
  return { hostAddress, nodes, dispose };
}
