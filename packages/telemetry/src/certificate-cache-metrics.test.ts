import v8 from 'node:v8';
import { describe, expect, it } from 'vitest';
import { createMetrics, type MetricsSnapshot } from './index.js';

// The certificate caches' series (issue 30): the control plane's and the workers' (summed by the primary).

/** The value of the one sample line `series` (name and labels as printed), undefined when absent. */
function sampleValue(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('proxyd_certificate_cache_*', () => {
  it('reads each cache at a scrape; the primary shows its own and the sum of its workers', async () => {
    const single = createMetrics({ processMetrics: false });
    expect(await single.render()).not.toContain('proxyd_certificate_cache_requests_total{');
    single.setCertificateCacheSource('control', () => ({ hits: 5, misses: 2, evictions: 1, size: 10 }));
    const text = await single.render();
    expect(sampleValue(text, 'proxyd_certificate_cache_requests_total{cache="control",result="hit"}')).toBe(5);
    expect(sampleValue(text, 'proxyd_certificate_cache_requests_total{cache="control",result="miss"}')).toBe(2);
    expect(sampleValue(text, 'proxyd_certificate_cache_evictions_total{cache="control"}')).toBe(1);
    expect(sampleValue(text, 'proxyd_certificate_cache_entries{cache="control"}')).toBe(10);

    const workers = [
      createMetrics({ role: 'worker', processMetrics: false }),
      createMetrics({ role: 'worker', processMetrics: false }),
    ];
    workers[0]?.setCertificateCacheSource('worker', () => ({ hits: 3, misses: 4, evictions: 0, size: 4 }));
    workers[1]?.setCertificateCacheSource('worker', () => ({ hits: 1, misses: 6, evictions: 2, size: 5 }));
    const primary = createMetrics({ role: 'primary', processMetrics: false });
    primary.setCertificateCacheSource('control', () => ({ hits: 7, misses: 10, evictions: 0, size: 10 }));
    primary.setWorkerSource(async () =>
      Promise.all(workers.map(async (w) => v8.deserialize(v8.serialize(await w.snapshot())) as MetricsSnapshot)),
    );
    const merged = await primary.render();
    expect(sampleValue(merged, 'proxyd_certificate_cache_requests_total{cache="worker",result="hit"}')).toBe(4);
    expect(sampleValue(merged, 'proxyd_certificate_cache_requests_total{cache="worker",result="miss"}')).toBe(10);
    expect(sampleValue(merged, 'proxyd_certificate_cache_evictions_total{cache="worker"}')).toBe(2);
    expect(sampleValue(merged, 'proxyd_certificate_cache_entries{cache="worker"}')).toBe(9);
    expect(sampleValue(merged, 'proxyd_certificate_cache_requests_total{cache="control",result="miss"}')).toBe(10);
    expect(merged.match(/^# TYPE proxyd_certificate_cache_entries /gm)).toHaveLength(1);
  });
});
