/** The container a warning is about. */
export interface ContainerRef {
  /** Name without Docker's leading `/`. */
  name: string;
  /** Short id: the first 12 hex digits. */
  id: string;
}

/**
 * Why a container gives no route (or why a pool ignores one member's
 * settings). Shown in the log (once each, target `proxy::docker`) and by
 * `DockerSource.warnings()` for the admin API.
 */
export interface LabelWarning {
  container: ContainerRef;
  /** The label at fault, e.g. `proxy.port`, `proxy.header.X-Frame-Options`, `proxy.network`. */
  label: string;
  /** A sentence fragment: what is wrong and what to do. */
  reason: string;
}

/** The {@link ContainerRef} of a container's full id and name. */
export function containerRef(id: string, name: string): ContainerRef {
  return { name, id: id.slice(0, 12) };
}

/** A stable text key of a warning (to log each one once). */
export function warningKey(w: LabelWarning): string {
  return `${w.container.id}\u0000${w.label}\u0000${w.reason}`;
}

/** Orders warnings by container name, id, then label. */
export function compareWarnings(a: LabelWarning, b: LabelWarning): number {
  return (
    cmp(a.container.name, b.container.name) ||
    cmp(a.container.id, b.container.id) ||
    cmp(a.label, b.label) ||
    cmp(a.reason, b.reason)
  );
}

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
