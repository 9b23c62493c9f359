import type { ContainerHealth, RuntimeEvent } from './runtime.js';

/** Container actions after which it may serve. */
const UP = new Set(['start', 'restart', 'unpause']);
/**
 * Container actions after which it no longer serves. Podman emits `stop`
 * in only about half of the runs, and before `die`; Docker emits `kill`,
 * `die`, `stop`, `destroy`; Podman's removal is `remove`, Docker's
 * `destroy`. `kill` is not here: `docker kill -s HUP` leaves the container
 * running, and a fatal signal is followed by `die`.
 */
const GONE = new Set(['die', 'stop', 'destroy', 'remove', 'pause', 'oom']);
const HEALTH: ReadonlySet<string> = new Set<ContainerHealth>(['starting', 'healthy', 'unhealthy']);

/** The JSON of one event line, as Docker and Podman write it (only the fields read here). */
interface RawEvent {
  Type?: unknown;
  Action?: unknown;
  status?: unknown;
  id?: unknown;
  Actor?: { ID?: unknown; Attributes?: unknown } | null;
  timeNano?: unknown;
  time?: unknown;
}

const str = (v: unknown): string => (typeof v === 'string' ? v : '');

function attributes(raw: RawEvent): Record<string, string> {
  const attrs = raw.Actor?.Attributes;
  const out: Record<string, string> = {};
  if (attrs && typeof attrs === 'object') {
    for (const [k, v] of Object.entries(attrs)) if (typeof v === 'string') out[k] = v;
  }
  return out;
}

function timeOf(raw: RawEvent): bigint {
  if (typeof raw.timeNano === 'number' && Number.isFinite(raw.timeNano)) return BigInt(Math.trunc(raw.timeNano));
  if (typeof raw.time === 'number' && Number.isFinite(raw.time)) return BigInt(Math.trunc(raw.time)) * 1_000_000_000n;
  return 0n;
}

/** The labels among an event's attributes (Docker and Podman put every label there, beside `name`, `image`…). */
function labelsOf(attrs: Record<string, string>): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const [k, v] of Object.entries(attrs)) if (k.startsWith('proxy.')) labels[k] = v;
  return labels;
}

/**
 * One event line → a normalised event, or null for an event the watcher
 * does not act on (`create`, `exec_start: …`, image events, `kill`…).
 * A line that is not a JSON object gives `{ kind: 'invalid' }`.
 *
 * Only `proxy.*` labels are kept from the attributes: they are all the
 * watcher reads, and an event of a container without them is dropped by
 * the watcher before any inspect.
 */
export function parseEvent(line: string): RuntimeEvent | null {
  let raw: RawEvent;
  try {
    raw = JSON.parse(line) as RawEvent;
  } catch {
    return { kind: 'invalid', reason: `not JSON: ${JSON.stringify(line.slice(0, 80))}` };
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    return { kind: 'invalid', reason: 'not a JSON object' };
  }
  // Old API versions wrote only `status` and `id`; both runtimes write `Type`, `Action` and `Actor` now.
  const type = str(raw.Type) || 'container';
  const action = str(raw.Action) || str(raw.status);
  const attrs = attributes(raw);
  const timeNano = timeOf(raw);

  if (type === 'network') {
    if (action !== 'connect' && action !== 'disconnect') return null;
    // Docker: Actor.ID is the network, Attributes.container the container, Attributes.name the network's name.
    // Podman 4: Actor.ID is the container, Attributes.name the container's name, and the network is not said.
    const docker = attrs.container !== undefined;
    const id = docker ? (attrs.container as string) : str(raw.Actor?.ID) || str(raw.id);
    if (id === '') return null;
    return { kind: 'network', id, action, network: docker ? (attrs.name ?? str(raw.Actor?.ID)) : '', timeNano };
  }
  if (type !== 'container') return null;
  const id = str(raw.Actor?.ID) || str(raw.id);
  if (id === '') return { kind: 'invalid', reason: `container event ${JSON.stringify(action)} without an id` };
  const labels = labelsOf(attrs);

  // Docker: `health_status: healthy`. Podman: `health_status`, with the state in `Attributes.health_status`
  // from 4.6 on; Podman 4.3 does not say it (null: the watcher inspects).
  if (action === 'health_status' || action.startsWith('health_status:')) {
    const state = action.includes(':') ? action.slice(action.indexOf(':') + 1).trim() : (attrs.health_status ?? '');
    if (state === '') return { kind: 'health', id, health: null, labels, timeNano };
    if (!HEALTH.has(state)) return { kind: 'invalid', reason: `health event with state ${JSON.stringify(state)}` };
    return { kind: 'health', id, health: state as ContainerHealth, labels, timeNano };
  }
  if (UP.has(action)) return { kind: 'up', id, action, labels, timeNano };
  if (GONE.has(action)) return { kind: 'gone', id, action, labels, timeNano };
  return null;
}
