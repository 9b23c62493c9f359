import { describe, expect, it } from 'vitest';
import { aligned, bucketCount, customWindow, intervalFor, MAX_BUCKETS, presetWindow } from './range.js';

const HOUR = 3_600_000;
const DAY = 86_400_000;
const NOW = Date.UTC(2026, 10, 25, 12, 30, 20);

describe('range presets', () => {
  it('draws each preset with its interval, its ends on bucket boundaries, the current bucket included', () => {
    const midnight = Date.UTC(2026, 10, 25, 0, 0) - 3 * HOUR; // a time zone at UTC+3
    const cases = [
      ['today', 'hour', 16],
      ['24h', 'hour', 24],
      ['7d', 'hour', 168],
      ['30d', 'day', 30],
      ['90d', 'day', 90],
    ] as const;
    for (const [preset, interval, buckets] of cases) {
      const w = presetWindow(preset, NOW, midnight);
      expect(w.interval, preset).toBe(interval);
      expect(bucketCount(w, w.interval), preset).toBe(buckets);
      expect(w.to, preset).toBeGreaterThan(NOW);
      expect(w.to - w.from, preset).toBe(buckets * { minute: 60_000, hour: HOUR, day: DAY }[interval]);
    }
    expect(presetWindow('today', NOW, midnight).from).toBe(midnight);
    // Real time: the last 30 complete minutes (the current one is not in history yet).
    expect(presetWindow('realtime', NOW)).toEqual({
      from: Date.UTC(2026, 10, 25, 12, 0),
      to: Date.UTC(2026, 10, 25, 12, 30),
      interval: 'minute',
    });
    expect(presetWindow('30d', NOW).from).toBe(Date.UTC(2026, 9, 27));
  });

  it('picks minutes up to 6 hours, hours up to 8 days, days beyond, and only tiers the store still keeps', () => {
    expect(intervalFor({ from: NOW - 6 * HOUR, to: NOW }, NOW)).toBe('minute');
    expect(intervalFor({ from: NOW - 7 * HOUR, to: NOW }, NOW)).toBe('hour');
    expect(intervalFor({ from: NOW - 8 * DAY, to: NOW }, NOW)).toBe('hour');
    expect(intervalFor({ from: NOW - 9 * DAY, to: NOW }, NOW)).toBe('day');
    // Three days ago, one hour long: the minute rows (48 h) are gone, the hour rows are not.
    expect(intervalFor({ from: NOW - 3 * DAY, to: NOW - 3 * DAY + HOUR }, NOW)).toBe('hour');
    expect(intervalFor({ from: NOW - 100 * DAY, to: NOW - 99 * DAY }, NOW)).toBe('day');
  });

  it('keeps at most MAX_BUCKETS buckets, the newest', () => {
    const w = aligned({ from: 0, to: NOW }, 'day');
    expect(bucketCount(w, 'day')).toBe(MAX_BUCKETS);
    expect(w.to).toBe(Date.UTC(2026, 10, 26));
    const custom = customWindow({ from: NOW, to: NOW - 3 * DAY }, NOW);
    expect(custom).toEqual({ from: Date.UTC(2026, 10, 22, 12), to: Date.UTC(2026, 10, 25, 13), interval: 'hour' });
  });
});
