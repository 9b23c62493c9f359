import { existsSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import type { ContainerRuntime } from './runtime.js';

/** What {@link ownContainerCandidates} reads; all text, empty when unreadable. */
export interface OwnContainerClues {
  /** `/proc/self/cgroup`: `…/docker/<id>` (Docker, cgroup v1), `…/libpod-<id>.scope` (Podman). */
  cgroup: string;
  /** `/proc/self/mountinfo`: `/etc/hostname` is bind-mounted from `…/containers/<id>/…` (Docker and Podman). */
  mountinfo: string;
  /** The host name: Docker and Podman default it to the short id. */
  hostname: string;
  /** Whether `/.dockerenv` or `/run/.containerenv` exists. */
  marker: boolean;
}

const ID = /\b[0-9a-f]{64}\b/g;

/**
 * The ids (and last, the host name) to inspect to find proxyd's own
 * container, most reliable first; empty when nothing says proxyd runs in a
 * container (no id in the cgroup and no marker file).
 */
export function ownContainerCandidates(clues: OwnContainerClues): string[] {
  const out: string[] = [];
  const add = (id: string) => {
    if (!out.includes(id)) out.push(id);
  };
  for (const m of clues.cgroup.matchAll(ID)) add(m[0]);
  for (const line of clues.mountinfo.split('\n')) {
    if (!/\/containers\//.test(line) || !/\s\/etc\/hostname\s/.test(line)) continue;
    for (const m of line.matchAll(ID)) add(m[0]);
  }
  if (out.length === 0 && !clues.marker) return [];
  const host = clues.hostname.trim();
  if (/^[0-9a-f]{12}$/.test(host) || (clues.marker && /^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(host))) add(host);
  return out;
}

function readOr(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

/** The clues of this process (Linux `/proc`; empty elsewhere). */
export function readOwnContainerClues(): OwnContainerClues {
  return {
    cgroup: readOr('/proc/self/cgroup'),
    mountinfo: readOr('/proc/self/mountinfo'),
    hostname: hostname(),
    marker: existsSync('/.dockerenv') || existsSync('/run/.containerenv'),
  };
}

/**
 * The network names of proxyd's own container, found by inspecting the
 * candidates of {@link ownContainerCandidates}; null when proxyd does not
 * run in a container the runtime knows (the usual case outside one). A
 * host-network proxyd gets `[]`: it shares no container network, and it
 * reaches bridge addresses from the host anyway.
 */
export async function detectOwnNetworks(
  runtime: Pick<ContainerRuntime, 'inspect'>,
  clues: OwnContainerClues = readOwnContainerClues(),
): Promise<string[] | null> {
  for (const candidate of ownContainerCandidates(clues)) {
    const info = await runtime.inspect(candidate).catch(() => null);
    if (info) return info.networks.map((n) => n.name);
  }
  return null;
}
