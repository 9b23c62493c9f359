import { type DestinationStream, type Level, type Logger, pino } from 'pino';

/** The log target of audit events (spec §6). */
export const AUDIT_TARGET = 'proxy::admin::audit';

const LEVELS: readonly Level[] = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'];
type Threshold = Level | 'silent';

/** A parsed `PROXY_LOG` value: a default level and per-target overrides. */
export interface LogFilter {
  /** Level of targets no directive names (default `info`). */
  level: Threshold;
  /** `target=level` directives; a directive applies to its target and every `target::…` below it. */
  targets: ReadonlyArray<{ target: string; level: Threshold }>;
}

/**
 * Parses `PROXY_LOG`, a comma-separated list in the style of Rust's
 * env_logger: a bare level sets the default, `target=level` sets a target
 * (and the targets below it, `::`-separated); the longest matching target
 * wins. Levels: trace, debug, info, warn, error, fatal, off. Unset or empty
 * means `info`. Throws on an unknown level.
 */
export function parseLogFilter(spec: string | undefined): LogFilter {
  let level: Threshold = 'info';
  const targets: Array<{ target: string; level: Threshold }> = [];
  for (const part of (spec ?? '').split(',')) {
    const item = part.trim();
    if (item === '') continue;
    const eq = item.indexOf('=');
    if (eq < 0) level = toThreshold(item);
    else targets.push({ target: item.slice(0, eq).trim(), level: toThreshold(item.slice(eq + 1).trim()) });
  }
  targets.sort((a, b) => b.target.length - a.target.length);
  return { level, targets };
}

function toThreshold(text: string): Threshold {
  const value = text.toLowerCase();
  if (value === 'off' || value === 'silent') return 'silent';
  if (value === 'warning') return 'warn';
  if ((LEVELS as readonly string[]).includes(value)) return value as Level;
  throw new Error(`PROXY_LOG: unknown level "${text}" (expected trace, debug, info, warn, error, fatal or off)`);
}

/** The level that applies to `target` under `filter`. */
export function levelFor(filter: LogFilter, target: string): Threshold {
  for (const d of filter.targets) {
    if (target === d.target || target.startsWith(`${d.target}::`)) return d.level;
  }
  return filter.level;
}

const rank = (level: Threshold) => (level === 'silent' ? Number.POSITIVE_INFINITY : (pino.levels.values[level] ?? 0));

/** The daemon's loggers. */
export interface Logging {
  /**
   * The root logger (its pino level is the lowest any target enables). A
   * line logged through it with a `target` field is filtered by that
   * target's level; without one, by the default level.
   */
  root: Logger;
  /** A logger whose every line carries `target` and whose level is that target's. */
  forTarget(target: string): Logger;
  filter: LogFilter;
}

/**
 * JSON-lines logging (pino) with per-target levels from `PROXY_LOG`. Every
 * line has `level` (pino number), `time` (ISO 8601), `target` and `msg`
 * (and a worker's lines `worker`, its index).
 * Levels below a target's threshold are not formatted at all.
 */
export function createLogging(
  spec: string | undefined,
  destination?: DestinationStream,
  /** Fields on every line (a worker's `worker` index); default none. */
  base: Record<string, unknown> | null = null,
): Logging {
  const filter = parseLogFilter(spec);
  const all = [filter.level, ...filter.targets.map((t) => t.level)];
  const floor = all.reduce((a, b) => (rank(b) < rank(a) ? b : a));
  const options = {
    base,
    level: floor,
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label: string) => ({ level: label }) },
    hooks: {
      logMethod(this: Logger, args: Parameters<Logger['info']>, method: (...a: unknown[]) => void, level: number) {
        const first = args[0] as unknown;
        const target = typeof first === 'object' && first !== null ? (first as { target?: unknown }).target : undefined;
        const threshold =
          typeof target === 'string' ? levelFor(filter, target) : this === root ? filter.level : this.level;
        if (level >= rank(threshold as Threshold)) method.apply(this, args);
      },
    },
  };
  const root: Logger = destination ? pino(options, destination) : pino(options);
  const cache = new Map<string, Logger>();
  return {
    root,
    filter,
    forTarget(target) {
      let logger = cache.get(target);
      if (!logger) {
        logger = root.child({ target }, { level: levelFor(filter, target) });
        cache.set(target, logger);
      }
      return logger;
    },
  };
}
