import { readdirSync, readFileSync } from 'node:fs';
import { constants, monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { getHeapSpaceStatistics } from 'node:v8';
import type { Aggregator, MetricJson, MetricSample } from './metrics-merge.js';

/**
 * The Node.js process metrics of a data-plane worker (`process_*`,
 * `nodejs_*`) as plain data, without prom-client: a worker only hands its
 * metrics to the primary as a {@link MetricJson} snapshot, and prom-client
 * with the `@opentelemetry/api` it imports is ~85 modules a worker need not
 * load (issue 32). The families, their order, help, type, labels and
 * values are those of prom-client 15's `collectDefaultMetrics` as
 * `createMetrics` keeps them: less the three `nodejs_active_*_total`
 * gauges, and with the event-loop delay statistics 0 in a snapshot with no
 * delay sampled since the previous one (`src/event-loop-metrics.ts`). `process-metrics.test.ts` holds it to
 * prom-client's.
 */

/** Sampling interval of the event-loop delay histogram, ms (prom-client's default). */
const RESOLUTION_MS = 10;
/** `nodejs_gc_duration_seconds` buckets, s (prom-client's). */
const GC_BUCKETS = [0.001, 0.01, 0.1, 1, 2, 5] as const;
/** A GC entry's `detail.kind` → the `kind` label (prom-client's names). */
const GC_KINDS: Readonly<Record<number, string>> = {
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
};
const LAG_STATISTICS = ['min', 'max', 'mean', 'stddev', 'p50', 'p90', 'p99'] as const;
const HEAP_SPACE_VALUES = ['total', 'used', 'available'] as const;

/** When the process started, Unix seconds (prom-client rounds it the same way). */
const START_SECONDS = Math.round(Date.now() / 1000 - process.uptime());
const VERSION = process.version;
const VERSION_SEGMENTS = VERSION.slice(1).split('.').map(Number);

/** `Max open files` of /proc/self/limits; undefined where there is no procfs (then no series, as prom-client). */
function maxFds(): number | undefined {
  try {
    for (const line of readFileSync('/proc/self/limits', 'utf8').split('\n')) {
      if (line.startsWith('Max open files')) return Number(line.split(/ {2,}/)[1]);
    }
  } catch {}
  return undefined;
}

/** VmRSS, VmSize and VmData of /proc/self/status, bytes. */
function procStatus(): { VmRSS?: number; VmSize?: number; VmData?: number } | null {
  try {
    const out: Record<string, number> = {};
    for (const line of readFileSync('/proc/self/status', 'utf8').split('\n')) {
      const m = /^(VmRSS|VmSize|VmData):\s*(\d+) kB/.exec(line);
      if (m) out[m[1] as string] = Number(m[2]) * 1024;
    }
    return out;
  } catch {
    return null;
  }
}

/** Counts of a list's members by constructor name, in order of first appearance (as prom-client's helper). */
function byConstructorName(list: readonly unknown[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const item of list) {
    const name = (item as { constructor?: { name: string } } | null)?.constructor?.name;
    if (name === undefined) continue;
    counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  return counts;
}

/** One `gc` histogram series: per-bucket counts (not cumulative), sum and count. */
interface GcSeries {
  labels: Record<string, string>;
  buckets: number[];
  sum: number;
  count: number;
}

/** The process metrics of one process, read at each {@link snapshot}. */
export class ProcessMetrics {
  #lastCpu = process.cpuUsage();
  readonly #cpu = { user: 0, system: 0, total: 0 };
  readonly #maxFds = maxFds();
  /** The delay the previous snapshot measured (prom-client's lag gauge reports the one before). */
  #lagSeconds = 0;
  readonly #delay = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  readonly #gc = new Map<string, GcSeries>();

  constructor() {
    this.#delay.enable();
    new PerformanceObserver((list) => {
      const entry = list.getEntries()[0];
      if (entry === undefined) return;
      const kind = GC_KINDS[(entry as { detail?: { kind?: number } }).detail?.kind ?? -1];
      const key = kind ?? '';
      let series = this.#gc.get(key);
      if (series === undefined) {
        series = { labels: kind === undefined ? {} : { kind }, buckets: GC_BUCKETS.map(() => 0), sum: 0, count: 0 };
        this.#gc.set(key, series);
      }
      const seconds = entry.duration / 1000;
      const i = GC_BUCKETS.findIndex((bound) => seconds <= bound);
      if (i >= 0) series.buckets[i] = (series.buckets[i] ?? 0) + 1;
      series.sum += seconds;
      series.count++;
    }).observe({ entryTypes: ['gc'] });
  }

  /** The families now, in prom-client's registration order. */
  snapshot(): MetricJson[] {
    const out: MetricJson[] = [];
    const family = (
      name: string,
      type: MetricJson['type'],
      help: string,
      values: MetricSample[],
      aggregator: Aggregator = 'sum',
    ) => {
      out.push({ name, help, type, aggregator, values });
    };
    const one = (value: number): MetricSample[] => [{ value, labels: {} }];

    const cpu = process.cpuUsage();
    const user = cpu.user - this.#lastCpu.user;
    const system = cpu.system - this.#lastCpu.system;
    this.#lastCpu = cpu;
    this.#cpu.user += user / 1e6;
    this.#cpu.system += system / 1e6;
    this.#cpu.total += (user + system) / 1e6;
    family('process_cpu_user_seconds_total', 'counter', 'Total user CPU time spent in seconds.', one(this.#cpu.user));
    family(
      'process_cpu_system_seconds_total',
      'counter',
      'Total system CPU time spent in seconds.',
      one(this.#cpu.system),
    );
    family(
      'process_cpu_seconds_total',
      'counter',
      'Total user and system CPU time spent in seconds.',
      one(this.#cpu.total),
    );
    family(
      'process_start_time_seconds',
      'gauge',
      'Start time of the process since unix epoch in seconds.',
      one(START_SECONDS),
      'omit',
    );

    if (process.platform === 'linux') {
      const status = procStatus();
      family('process_resident_memory_bytes', 'gauge', 'Resident memory size in bytes.', one(status?.VmRSS ?? 0));
      family('process_virtual_memory_bytes', 'gauge', 'Virtual memory size in bytes.', one(status?.VmSize ?? 0));
      family('process_heap_bytes', 'gauge', 'Process heap size in bytes.', one(status?.VmData ?? 0));
      let fds = 0;
      try {
        // Less the descriptor readdirSync itself used.
        fds = readdirSync('/proc/self/fd').length - 1;
      } catch {}
      family('process_open_fds', 'gauge', 'Number of open file descriptors.', one(fds));
    } else {
      family(
        'process_resident_memory_bytes',
        'gauge',
        'Resident memory size in bytes.',
        one(process.memoryUsage.rss()),
      );
    }
    if (this.#maxFds !== undefined) {
      family('process_max_fds', 'gauge', 'Maximum number of open file descriptors.', one(this.#maxFds));
    }

    family('nodejs_eventloop_lag_seconds', 'gauge', 'Lag of event loop in seconds.', one(this.#lagSeconds), 'average');
    const start = process.hrtime.bigint();
    setImmediate(() => {
      this.#lagSeconds = Number(process.hrtime.bigint() - start) / 1e9;
    });

    const resources = new Map<string, number>();
    for (const type of process.getActiveResourcesInfo()) resources.set(type, (resources.get(type) ?? 0) + 1);
    const typed = (counts: Map<string, number>) => [...counts].map(([type, value]) => ({ value, labels: { type } }));
    family(
      'nodejs_active_resources',
      'gauge',
      'Number of active resources that are currently keeping the event loop alive, grouped by async resource type.',
      typed(resources),
    );
    // Node's undocumented lists, as prom-client reads them.
    const internals = process as unknown as { _getActiveHandles?(): unknown[]; _getActiveRequests?(): unknown[] };
    if (typeof internals._getActiveHandles === 'function') {
      family(
        'nodejs_active_handles',
        'gauge',
        'Number of active libuv handles grouped by handle type. Every handle type is C++ class name.',
        typed(byConstructorName(internals._getActiveHandles())),
      );
    }
    if (typeof internals._getActiveRequests === 'function') {
      family(
        'nodejs_active_requests',
        'gauge',
        'Number of active libuv requests grouped by request type. Every request type is C++ class name.',
        typed(byConstructorName(internals._getActiveRequests())),
      );
    }

    const memory = process.memoryUsage();
    family('nodejs_heap_size_total_bytes', 'gauge', 'Process heap size from Node.js in bytes.', one(memory.heapTotal));
    family(
      'nodejs_heap_size_used_bytes',
      'gauge',
      'Process heap size used from Node.js in bytes.',
      one(memory.heapUsed),
    );
    family('nodejs_external_memory_bytes', 'gauge', 'Node.js external memory size in bytes.', one(memory.external));

    const spaces = getHeapSpaceStatistics();
    const spaceValues: Record<(typeof HEAP_SPACE_VALUES)[number], MetricSample[]> = {
      total: [],
      used: [],
      available: [],
    };
    for (const space of spaces) {
      const labels = { space: space.space_name.slice(0, space.space_name.indexOf('_space')) };
      spaceValues.total.push({ value: space.space_size, labels });
      spaceValues.used.push({ value: space.space_used_size, labels: { ...labels } });
      spaceValues.available.push({ value: space.space_available_size, labels: { ...labels } });
    }
    for (const kind of HEAP_SPACE_VALUES) {
      family(
        `nodejs_heap_space_size_${kind}_bytes`,
        'gauge',
        `Process heap space size ${kind} from Node.js in bytes.`,
        spaceValues[kind],
      );
    }

    family(
      'nodejs_version_info',
      'gauge',
      'Node.js version info.',
      [
        {
          value: 1,
          labels: {
            version: VERSION,
            major: VERSION_SEGMENTS[0] ?? 0,
            minor: VERSION_SEGMENTS[1] ?? 0,
            patch: VERSION_SEGMENTS[2] ?? 0,
          },
        },
      ],
      'first',
    );

    const gc: MetricSample[] = [];
    for (const series of this.#gc.values()) {
      let cumulative = 0;
      GC_BUCKETS.forEach((le, i) => {
        cumulative += series.buckets[i] ?? 0;
        gc.push({
          value: cumulative,
          labels: { le, ...series.labels },
          metricName: 'nodejs_gc_duration_seconds_bucket',
        });
      });
      gc.push({
        value: series.count,
        labels: { le: '+Inf', ...series.labels },
        metricName: 'nodejs_gc_duration_seconds_bucket',
      });
      gc.push({ value: series.sum, labels: { ...series.labels }, metricName: 'nodejs_gc_duration_seconds_sum' });
      gc.push({ value: series.count, labels: { ...series.labels }, metricName: 'nodejs_gc_duration_seconds_count' });
    }
    family(
      'nodejs_gc_duration_seconds',
      'histogram',
      'Garbage collection duration by kind, one of major, minor, incremental or weakcb.',
      gc,
    );

    // The delay statistics since the previous snapshot; 0 when nothing was sampled (never NaN).
    const delay = this.#delay;
    const sampled = delay.count > 0;
    const statistics = sampled
      ? [
          delay.min,
          delay.max,
          delay.mean,
          delay.stddev,
          delay.percentile(50),
          delay.percentile(90),
          delay.percentile(99),
        ]
      : [];
    LAG_STATISTICS.forEach((stat, i) => {
      const ns = statistics[i];
      family(
        `nodejs_eventloop_lag_${stat}_seconds`,
        'gauge',
        `The ${stat} of the recorded event loop delays.`,
        one(ns !== undefined && Number.isFinite(ns) ? ns / 1e9 : 0),
      );
    });
    if (sampled) delay.reset();
    return out;
  }
}
