import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Gauge, type Registry } from 'prom-client';

/**
 * The event-loop delay gauges prom-client's default metrics define, by
 * statistic. prom-client sets them from a `monitorEventLoopDelay` histogram
 * even when it holds no sample (right after start, or two scrapes within one
 * sampling interval): the mean and standard deviation are then NaN and the
 * exposition prints `Nan`, which OpenMetrics parsers reject.
 */
const STATISTICS = ['min', 'max', 'mean', 'stddev', 'p50', 'p90', 'p99'] as const;

/** Sampling interval of the delay histogram, ms (prom-client's default). */
const RESOLUTION_MS = 10;

/**
 * Replaces prom-client's `nodejs_eventloop_lag_{min,max,mean,stddev,p50,p90,p99}_seconds`
 * with the same series fed from a histogram of our own, which are 0 in a
 * scrape when no delay was sampled since the previous one (as
 * prom-client does, each scrape reads the samples since the last one).
 * Call after `collectDefaultMetrics({ register: registry })`.
 */
export function replaceEventLoopDelayGauges(registry: Registry): void {
  const histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  histogram.enable();
  // The first gauge's collect reads the histogram once for all seven (the
  // registry collects in registration order), then starts a new interval.
  const collect = () => {
    for (const g of gauges) g.reset();
    if (histogram.count === 0) return;
    const values = [
      histogram.min,
      histogram.max,
      histogram.mean,
      histogram.stddev,
      histogram.percentile(50),
      histogram.percentile(90),
      histogram.percentile(99),
    ];
    gauges.forEach((g, i) => {
      const ns = values[i] ?? Number.NaN;
      if (Number.isFinite(ns)) g.set(ns / 1e9);
    });
    histogram.reset();
  };
  const gauges: Gauge[] = STATISTICS.map((stat, i) => {
    const name = `nodejs_eventloop_lag_${stat}_seconds`;
    registry.removeSingleMetric(name);
    const help = `The ${stat} of the recorded event loop delays.`;
    return new Gauge({ name, help, registers: [registry], ...(i === 0 ? { collect } : {}) });
  });
}
