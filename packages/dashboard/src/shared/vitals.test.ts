import { describe, expect, it } from 'vitest';
import { rateCounts, rateValue, ratingShares } from './vitals.js';

describe('Web Vitals ratings (spec §2.4 thresholds)', () => {
  it('rates values at the thresholds: good at or under, poor over', () => {
    expect(rateValue('lcp', 2500)).toBe('good');
    expect(rateValue('lcp', 2501)).toBe('needs-improvement');
    expect(rateValue('lcp', 4000)).toBe('needs-improvement');
    expect(rateValue('lcp', 4001)).toBe('poor');
    expect(rateValue('cls', 0.1)).toBe('good');
    expect(rateValue('cls', 0.25)).toBe('needs-improvement');
    expect(rateValue('cls', 0.26)).toBe('poor');
    expect(rateValue('inp', 200)).toBe('good');
    expect(rateValue('inp', 500)).toBe('needs-improvement');
    expect(rateValue('inp', 501)).toBe('poor');
  });

  it('rates a page by its 75th percentile: 75 % good is good, over 25 % poor is poor', () => {
    expect(rateCounts({ good: 3, needs_improvement: 1, poor: 0 })).toBe('good');
    expect(rateCounts({ good: 74, needs_improvement: 26, poor: 0 })).toBe('needs-improvement');
    expect(rateCounts({ good: 70, needs_improvement: 5, poor: 25 })).toBe('needs-improvement');
    expect(rateCounts({ good: 70, needs_improvement: 4, poor: 26 })).toBe('poor');
    expect(rateCounts({ good: 0, needs_improvement: 0, poor: 1 })).toBe('poor');
    expect(rateCounts({ good: 0, needs_improvement: 0, poor: 0 })).toBeNull();
  });

  it('gives each rating its share of the samples', () => {
    expect(ratingShares({ good: 2, needs_improvement: 1, poor: 1 })).toEqual({
      good: 0.5,
      needs_improvement: 0.25,
      poor: 0.25,
    });
    expect(ratingShares({ good: 0, needs_improvement: 0, poor: 0 })).toEqual({
      good: 0,
      needs_improvement: 0,
      poor: 0,
    });
  });
});
