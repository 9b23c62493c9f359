/**
 * Web Vitals ratings by the spec's thresholds (§2.4): LCP good ≤ 2500 ms,
 * poor > 4000 ms; CLS good ≤ 0.1, poor > 0.25; INP good ≤ 200 ms, poor >
 * 500 ms. Shared by the server and the browser UI.
 */

/** The three metrics, in the order the dashboard shows them. */
export const VITAL_METRICS = ['lcp', 'cls', 'inp'] as const;

/** One metric of {@link VITAL_METRICS}. */
export type VitalMetric = (typeof VITAL_METRICS)[number];

/** A rating, as web-vitals names them. */
export type Rating = 'good' | 'needs-improvement' | 'poor';

/** Each metric's name, unit and thresholds (good at or under `good`, poor over `poor`). */
export const VITAL_THRESHOLDS: Readonly<
  Record<VitalMetric, { readonly name: string; readonly unit: 'ms' | ''; readonly good: number; readonly poor: number }>
> = {
  lcp: { name: 'Largest Contentful Paint', unit: 'ms', good: 2500, poor: 4000 },
  cls: { name: 'Cumulative Layout Shift', unit: '', good: 0.1, poor: 0.25 },
  inp: { name: 'Interaction to Next Paint', unit: 'ms', good: 200, poor: 500 },
};

/** The rating of one value of a metric. */
export function rateValue(metric: VitalMetric, value: number): Rating {
  const { good, poor } = VITAL_THRESHOLDS[metric];
  if (value <= good) return 'good';
  return value > poor ? 'poor' : 'needs-improvement';
}

/** Good / needs-improvement / poor counts. */
export interface RatingCounts {
  good: number;
  needs_improvement: number;
  poor: number;
}

/** Each rating's share of the samples, 0–1 (all 0 without samples). */
export function ratingShares(counts: RatingCounts): RatingCounts {
  const total = counts.good + counts.needs_improvement + counts.poor;
  if (total === 0) return { good: 0, needs_improvement: 0, poor: 0 };
  return { good: counts.good / total, needs_improvement: counts.needs_improvement / total, poor: counts.poor / total };
}

/**
 * The rating of a page's metric from its counts, by the rule Core Web Vitals
 * assessments use, the 75th percentile: good when at least 75 % of samples
 * are good (the p75 is within "good"), poor when more than 25 % are poor
 * (the p75 is over "poor"), needs improvement otherwise; null without samples.
 */
export function rateCounts(counts: RatingCounts): Rating | null {
  const total = counts.good + counts.needs_improvement + counts.poor;
  if (total === 0) return null;
  if (counts.good >= 0.75 * total) return 'good';
  if (counts.poor > 0.25 * total) return 'poor';
  return 'needs-improvement';
}
