import { describe, expect, it } from 'vitest';
import {
  MAX_STATS_POINTS,
  parseStatsDimension,
  parseStatsDomain,
  parseStatsInterval,
  parseStatsLimit,
  parseStatsRange,
  parseStatsTime,
  STATS_DIMENSIONS,
  statsBucketCount,
} from './stats-query.js';

const NOW = Date.UTC(2026, 10, 20, 12, 0, 0);
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

// One rule for the admin API's GET /stats… and the dashboard's /api/stats…: where the two
// disagreed, the admin API's documented rule (its OpenAPI document and README) is this one.
describe('parseStatsTime', () => {
  it.each([
    ['0', 0],
    ['1763640000000', 1763640000000],
    // 16 digits, up to the last time a date holds (the dashboard took 15 digits at most).
    ['8640000000000000', 8.64e15],
    ['2026-11-20T10:00:00Z', Date.UTC(2026, 10, 20, 10)],
    ['2026-11-20T10:00:00.5+01:00', Date.UTC(2026, 10, 20, 9, 0, 0, 500)],
    // Lowercase t and z are RFC 3339 too.
    ['2026-11-20t10:00:00z', Date.UTC(2026, 10, 20, 10)],
    ['2026-11-20T10:00:00.123456789Z', Date.UTC(2026, 10, 20, 10, 0, 0, 123)],
  ])('takes %j', (text, ms) => expect(parseStatsTime('from', text)).toEqual({ ok: true, value: ms }));

  it.each([
    '8640000000000001',
    '12345678901234567',
    '-1',
    '1.5',
    '2026-11-20',
    '2026-11-20T10:00:00',
    // A space for the T: RFC 3339 §5.6 writes T (the dashboard took a space).
    '2026-11-20 10:00:00Z',
    // At most 9 fraction digits (the dashboard took any number).
    '2026-11-20T10:00:00.1234567890Z',
    'yesterday',
  ])('refuses %j', (text) =>
    expect(parseStatsTime('to', text)).toEqual({
      ok: false,
      problem: `to ${JSON.stringify(text)} is neither RFC 3339 nor epoch ms`,
    }),
  );

  it('reads absent and empty as none', () => {
    expect(parseStatsTime('from', undefined)).toEqual({ ok: true, value: null });
    expect(parseStatsTime('from', '')).toEqual({ ok: true, value: null });
  });
});

describe('parseStatsRange', () => {
  it('defaults to the 24 hours before to, to now', () => {
    expect(parseStatsRange(undefined, undefined, NOW)).toEqual({ ok: true, value: { from: NOW - DAY, to: NOW } });
    expect(parseStatsRange(undefined, String(NOW - HOUR), NOW)).toEqual({
      ok: true,
      value: { from: NOW - HOUR - DAY, to: NOW - HOUR },
    });
  });

  it('never defaults from to before the epoch (the dashboard went negative)', () => {
    expect(parseStatsRange(undefined, '1000', NOW)).toEqual({ ok: true, value: { from: 0, to: 1000 } });
  });

  it('wants from before to', () => {
    expect(parseStatsRange('2000', '1000', NOW)).toEqual({
      ok: false,
      problem: 'from (2000) must be before to (1000)',
    });
    expect(parseStatsRange('1000', '1000', NOW)).toEqual({
      ok: false,
      problem: 'from (1000) must be before to (1000)',
    });
  });

  it('takes at most 3,660 days (the dashboard had no bound)', () => {
    expect(parseStatsRange('0', String(3660 * DAY), NOW)).toEqual({ ok: true, value: { from: 0, to: 3660 * DAY } });
    expect(parseStatsRange('0', String(3660 * DAY + 1), NOW)).toEqual({ ok: false, problem: 'longer than 3,660 days' });
  });

  it('refuses a parameter given twice (the dashboard refused it only by accident of its pattern)', () => {
    expect(parseStatsRange(['1', '2'], undefined, NOW)).toEqual({ ok: false, problem: 'from is given 2 times' });
    expect(parseStatsRange(undefined, ['1', '2', '3'], NOW)).toEqual({ ok: false, problem: 'to is given 3 times' });
  });

  it('checks to before from', () => {
    expect(parseStatsRange('x', 'y', NOW)).toEqual({ ok: false, problem: 'to "y" is neither RFC 3339 nor epoch ms' });
  });
});

describe('parseStatsInterval', () => {
  const day = { from: NOW - DAY, to: NOW };

  it('defaults to hour and takes minute, hour, day', () => {
    expect(parseStatsInterval(undefined, day)).toEqual({ ok: true, value: 'hour' });
    expect(parseStatsInterval('', day)).toEqual({ ok: true, value: 'hour' });
    for (const i of ['minute', 'hour', 'day']) expect(parseStatsInterval(i, day)).toEqual({ ok: true, value: i });
  });

  it('refuses another interval, or one given twice', () => {
    expect(parseStatsInterval('week', day)).toEqual({ ok: false, problem: '"week": minute, hour or day' });
    expect(parseStatsInterval('Hour', day)).toEqual({ ok: false, problem: '"Hour": minute, hour or day' });
    expect(parseStatsInterval(['hour', 'day'], day)).toEqual({ ok: false, problem: 'interval is given 2 times' });
  });

  it('takes at most 1,500 buckets, partial ones at either end counted', () => {
    const minutes = (n: number) => ({ from: NOW, to: NOW + n * 60_000 });
    expect(parseStatsInterval('minute', minutes(MAX_STATS_POINTS))).toEqual({ ok: true, value: 'minute' });
    expect(parseStatsInterval('minute', { from: NOW + 1, to: NOW + MAX_STATS_POINTS * 60_000 })).toEqual({
      ok: true,
      value: 'minute',
    });
    expect(parseStatsInterval('minute', { from: NOW - 1, to: NOW + MAX_STATS_POINTS * 60_000 })).toEqual({
      ok: false,
      problem: '1501 minute buckets in the range, at most 1500: ask for a coarser interval or a shorter range',
    });
  });
});

describe('statsBucketCount', () => {
  it('counts UTC-aligned buckets the range touches', () => {
    expect(statsBucketCount({ from: 0, to: HOUR }, 'hour')).toBe(1);
    expect(statsBucketCount({ from: 1, to: HOUR + 1 }, 'hour')).toBe(2);
    expect(statsBucketCount({ from: 0, to: DAY }, 'minute')).toBe(1440);
    expect(statsBucketCount({ from: 5, to: 5 }, 'day')).toBe(0);
  });
});

describe('parseStatsLimit', () => {
  it('takes 1-100, default the fallback', () => {
    expect(parseStatsLimit(undefined, 10)).toEqual({ ok: true, value: 10 });
    expect(parseStatsLimit('', 20)).toEqual({ ok: true, value: 20 });
    expect(parseStatsLimit('1', 10)).toEqual({ ok: true, value: 1 });
    expect(parseStatsLimit('100', 10)).toEqual({ ok: true, value: 100 });
    expect(parseStatsLimit('007', 10)).toEqual({ ok: true, value: 7 });
  });

  it.each(['0', '101', '1000', '-1', '1.5', 'ten', ' 5'])('refuses %j', (text) =>
    expect(parseStatsLimit(text, 10)).toEqual({
      ok: false,
      problem: `${JSON.stringify(text)}: a whole number 1 to 100`,
    }),
  );

  it('refuses a limit given twice', () => {
    expect(parseStatsLimit(['1', '2'], 10)).toEqual({ ok: false, problem: 'limit is given 2 times' });
  });
});

describe('parseStatsDimension', () => {
  it('takes the ten dimensions', () => {
    for (const d of STATS_DIMENSIONS) expect(parseStatsDimension(d)).toEqual({ ok: true, value: d });
    expect(STATS_DIMENSIONS).toHaveLength(10);
  });

  it('refuses another', () => {
    expect(parseStatsDimension('cities')).toEqual({
      ok: false,
      problem: `"cities": ${STATS_DIMENSIONS.join(', ')}`,
    });
  });
});

describe('parseStatsDomain', () => {
  it('lowercases a host, an IP address or host:port', () => {
    expect(parseStatsDomain('Example.COM')).toEqual({ ok: true, value: 'example.com' });
    expect(parseStatsDomain('[::1]:8080')).toEqual({ ok: true, value: '[::1]:8080' });
    expect(parseStatsDomain('a_b.test')).toEqual({ ok: true, value: 'a_b.test' });
  });

  it('refuses an empty segment, over 253 bytes, or other characters (checked before lowercasing)', () => {
    expect(parseStatsDomain('')).toEqual({ ok: false, problem: 'domain segment is empty' });
    expect(parseStatsDomain('a'.repeat(253)).ok).toBe(true);
    expect(parseStatsDomain('a'.repeat(254))).toEqual({ ok: false, problem: 'longer than 253 bytes' });
    // 127 two-byte characters: 254 bytes, though only 127 characters.
    expect(parseStatsDomain('é'.repeat(127))).toEqual({ ok: false, problem: 'longer than 253 bytes' });
    expect(parseStatsDomain('\u212Aelvin.test')).toEqual({
      ok: false,
      problem: '"\u212Aelvin.test" contains invalid characters',
    });
    expect(parseStatsDomain('a b')).toEqual({ ok: false, problem: '"a b" contains invalid characters' });
  });
});
