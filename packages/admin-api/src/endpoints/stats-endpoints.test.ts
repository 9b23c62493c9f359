import { Value } from 'typebox/value';
import { describe, expect, it } from 'vitest';
import { AUTH, expectAuthAndRateLimit, expectPortFailuresHidden, testApp } from '../memory-ports.test-helpers.js';
import { lcpOnly, memoryStats } from './stats-memory.test-helpers.js';
import { csvCell } from './stats-query.js';
import { StatsBreakdown, StatsDomains, StatsTimeseries, StatsTotals, StatsVitals } from './stats-schemas.js';

// testApp's clock starts here: 2027-01-15T08:00:00Z.
const NOW = 1_800_000_000_000;
const H = 3_600_000;
const M = 60_000;

function app(overrides = {}) {
  const stats = memoryStats({
    minutes: {
      'a.test': [
        { t: NOW - 3 * H, page_views: 5, visitors: 2 },
        { t: NOW - 3 * H + M, page_views: 7, visitors: 3 },
        { t: NOW - 30 * M, page_views: 1, visitors: 1 },
      ],
      'b.test': [],
    },
    breakdown: [
      { key: '/', page_views: 9 },
      { key: '/docs, "intro"', page_views: 3 },
      { key: '=HYPERLINK("x")', page_views: 1 },
    ],
    vitals: [lcpOnly('/', 8, 2), lcpOnly('/docs', 1)],
  });
  return { ...testApp({ stats, ...overrides }), stats };
}

const get = (url: string, headers: Record<string, string> = {}) => ({
  method: 'GET' as const,
  url,
  headers: { ...AUTH, ...headers },
});

describe('GET /stats', () => {
  it('200 with the domains; CSV with a header row', async () => {
    const { app: a } = app();
    const res = await a.inject(get('/stats'));
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ domains: ['a.test', 'b.test'] });
    expect(Value.Check(StatsDomains, res.json())).toBe(true);
    const csv = await a.inject(get('/stats?format=csv'));
    expect(csv.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(csv.headers['access-control-allow-origin']).toBe('null');
    expect(csv.body).toBe('domain\r\na.test\r\nb.test\r\n');
    expect((await a.inject(get('/stats', { accept: 'text/csv' }))).body).toBe(csv.body);
    expect((await a.inject(get('/stats?format=json', { accept: 'text/csv' }))).json()).toEqual(res.json());
    const bad = await a.inject(get('/stats?format=xml'));
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toEqual({ error: 'invalid format: "xml": json or csv' });
  });

  it('501 history not enabled without a stats port, on every stats path', async () => {
    const { app: a } = testApp();
    for (const url of [
      '/stats',
      '/stats/a.test/timeseries',
      '/stats/a.test/totals',
      '/stats/a.test/breakdown/pages',
      '/stats/a.test/vitals',
    ]) {
      const res = await a.inject(get(url));
      expect(res.statusCode, url).toBe(501);
      expect(res.json()).toEqual({ error: 'history not enabled' });
    }
  });

  it('needs the token and counts in the global rate limit', async () => {
    for (const url of ['/stats', '/stats/a.test/totals']) {
      await expectAuthAndRateLimit(url, (rateLimit) => {
        const built = app({ rateLimit });
        return {
          app: built.app,
          port: {
            get calls() {
              return built.stats.calls.filter((c) => c.method !== 'hasDomain').length;
            },
          },
        };
      });
    }
  });

  it('500 internal error when the store fails, its message never sent', async () => {
    for (const [method, url] of [
      ['domains', '/stats'],
      ['timeseries', '/stats/a.test/timeseries'],
      ['totals', '/stats/a.test/totals'],
      ['breakdown', '/stats/a.test/breakdown/pages'],
      ['vitals', '/stats/a.test/vitals'],
    ] as const) {
      await expectPortFailuresHidden(
        'db at /var/lib/proxyd/history.db is locked',
        500,
        (fail, logger) => {
          const { stats } = app();
          return testApp({ stats: { ...stats, [method]: fail }, logger });
        },
        get(url),
      );
    }
  });
});

describe('GET /stats/{domain}/timeseries', () => {
  it('defaults to the last 24 hours by hour: 24 buckets (the clock is on the hour), zeros included', async () => {
    const { app: a, stats } = app();
    const res = await a.inject(get('/stats/A.Test/timeseries'));
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(Value.Check(StatsTimeseries, body)).toBe(true);
    expect(body).toMatchObject({ domain: 'a.test', from: NOW - 24 * H, to: NOW, interval: 'hour' });
    expect(body.points).toHaveLength(24);
    expect(body.points.filter((p: { page_views: number }) => p.page_views > 0)).toEqual([
      { t: NOW - 3 * H, page_views: 12, visitors: 5, requests: 24, bot_requests: 0, bytes_sent: 1200 },
      { t: NOW - H, page_views: 1, visitors: 1, requests: 2, bot_requests: 0, bytes_sent: 100 },
    ]);
    expect(stats.calls.at(-1)).toEqual({
      method: 'timeseries',
      domain: 'a.test',
      range: { from: NOW - 24 * H, to: NOW },
      interval: 'hour',
    });
  });

  it('from and to as RFC 3339 or epoch ms; interval minute; CSV with RFC 3339 times', async () => {
    const { app: a, stats } = app();
    const from = new Date(NOW - 3 * H).toISOString();
    const res = await a.inject(get(`/stats/a.test/timeseries?from=${from}&to=${NOW - 3 * H + 2 * M}&interval=minute`));
    expect(res.json().points.map((p: { page_views: number }) => p.page_views)).toEqual([5, 7]);
    expect(stats.calls.at(-1)?.range).toEqual({ from: NOW - 3 * H, to: NOW - 3 * H + 2 * M });
    const offset = await a.inject(get('/stats/a.test/timeseries?from=2027-01-15T06:00:00%2B01:00&interval=day'));
    expect(offset.json().from).toBe(Date.parse('2027-01-15T05:00:00Z'));
    const csv = await a.inject(
      get(`/stats/a.test/timeseries?from=${from}&to=${NOW - 3 * H + 2 * M}&interval=minute&format=csv`),
    );
    expect(csv.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(csv.body).toBe(
      'time,page_views,visitors,requests,bot_requests,bytes_sent\r\n' +
        '2027-01-15T05:00:00.000Z,5,2,10,0,500\r\n' +
        '2027-01-15T05:01:00.000Z,7,3,14,0,700\r\n',
    );
  });

  it('400 for a bad range, interval or too many buckets; 404 for a domain without history; 400 for a bad segment', async () => {
    const { app: a } = app();
    const cases: Array<[string, number, string]> = [
      [
        '/stats/a.test/timeseries?from=yesterday',
        400,
        'invalid range: from "yesterday" is neither RFC 3339 nor epoch ms',
      ],
      [
        '/stats/a.test/timeseries?from=2027-01-15',
        400,
        'invalid range: from "2027-01-15" is neither RFC 3339 nor epoch ms',
      ],
      [
        `/stats/a.test/timeseries?from=${NOW}&to=${NOW}`,
        400,
        `invalid range: from (${NOW}) must be before to (${NOW})`,
      ],
      ['/stats/a.test/timeseries?from=1&from=2', 400, 'invalid range: from is given 2 times'],
      [`/stats/a.test/timeseries?from=0&to=${400 * 86_400_000 * 10}`, 400, 'invalid range: longer than 3,660 days'],
      ['/stats/a.test/timeseries?interval=week', 400, 'invalid interval: "week": minute, hour or day'],
      [
        `/stats/a.test/timeseries?from=${NOW - 90 * 24 * H}&to=${NOW}&interval=hour`,
        400,
        'invalid interval: 2160 hour buckets in the range, at most 1500: ask for a coarser interval or a shorter range',
      ],
      ['/stats/c.test/timeseries', 404, 'no history for domain: "c.test"'],
      ['/stats/bad_chars!/timeseries', 400, 'invalid domain: "bad_chars!" contains invalid characters'],
    ];
    for (const [url, status, error] of cases) {
      const res = await a.inject(get(url));
      expect({ url, status: res.statusCode, body: res.json() }).toEqual({ url, status, body: { error } });
    }
    expect(
      (await a.inject(get(`/stats/a.test/timeseries?from=${NOW - 62 * 86_400_000}&interval=day`))).statusCode,
    ).toBe(200);
  });
});

describe('GET /stats/{domain}/totals', () => {
  it('200 with the counts over the range; CSV one row', async () => {
    const { app: a } = app();
    const res = await a.inject(get(`/stats/a.test/totals?from=${NOW - 4 * H}&to=${NOW}`));
    expect(res.statusCode).toBe(200);
    expect(Value.Check(StatsTotals, res.json())).toBe(true);
    expect(res.json()).toEqual({
      domain: 'a.test',
      from: NOW - 4 * H,
      to: NOW,
      page_views: 13,
      visitors: 6,
      requests: 26,
      bot_requests: 0,
      bytes_sent: 1300,
      status: { s1xx: 0, s2xx: 26, s3xx: 0, s4xx: 0, s5xx: 0, other: 0 },
    });
    const csv = await a.inject(get(`/stats/a.test/totals?from=${NOW - 4 * H}&to=${NOW}`, { accept: 'text/csv' }));
    expect(csv.body).toBe(
      'domain,from,to,page_views,visitors,requests,bot_requests,bytes_sent,s1xx,s2xx,s3xx,s4xx,s5xx,other\r\n' +
        'a.test,2027-01-15T04:00:00.000Z,2027-01-15T08:00:00.000Z,13,6,26,0,1300,0,26,0,0,0,0\r\n',
    );
  });
});

describe('GET /stats/{domain}/breakdown/{dimension}', () => {
  it('200 with the items, limit passed on; CSV quotes and defuses formulas', async () => {
    const { app: a, stats } = app();
    const res = await a.inject(get('/stats/a.test/breakdown/referrers?limit=2'));
    expect(res.statusCode).toBe(200);
    expect(Value.Check(StatsBreakdown, res.json())).toBe(true);
    expect(res.json()).toEqual({
      domain: 'a.test',
      dimension: 'referrers',
      items: [
        { key: '/', page_views: 9 },
        { key: '/docs, "intro"', page_views: 3 },
      ],
    });
    expect(stats.calls.at(-1)).toMatchObject({ method: 'breakdown', dimension: 'referrers', limit: 2 });
    await a.inject(get('/stats/a.test/breakdown/pages'));
    expect(stats.calls.at(-1)?.limit).toBe(10);
    const csv = await a.inject(get('/stats/a.test/breakdown/pages?format=csv'));
    expect(csv.body).toBe('key,page_views\r\n/,9\r\n"/docs, ""intro""",3\r\n"\'=HYPERLINK(""x"")",1\r\n');
  });

  it('400 for an unknown dimension or a limit out of 1-100; 404 for an unknown domain first', async () => {
    const { app: a } = app();
    const cases: Array<[string, number, string]> = [
      [
        '/stats/a.test/breakdown/pagez',
        400,
        'invalid dimension: "pagez": pages, entry_pages, referrers, countries, browsers, os, devices, utm_source, utm_medium, utm_campaign',
      ],
      ['/stats/a.test/breakdown/pages?limit=0', 400, 'invalid limit: "0": a whole number 1 to 100'],
      ['/stats/a.test/breakdown/pages?limit=101', 400, 'invalid limit: "101": a whole number 1 to 100'],
      ['/stats/a.test/breakdown/pages?limit=5x', 400, 'invalid limit: "5x": a whole number 1 to 100'],
      ['/stats/c.test/breakdown/pagez', 404, 'no history for domain: "c.test"'],
    ];
    for (const [url, status, error] of cases) {
      const res = await a.inject(get(url));
      expect({ url, status: res.statusCode, body: res.json() }).toEqual({ url, status, body: { error } });
    }
  });
});

describe('GET /stats/{domain}/vitals', () => {
  it('200 with the pages (default limit 20); CSV with four columns per metric', async () => {
    const { app: a, stats } = app();
    const res = await a.inject(get('/stats/a.test/vitals'));
    expect(Value.Check(StatsVitals, res.json())).toBe(true);
    expect(res.json().pages.map((p: { path: string; lcp: { samples: number } }) => [p.path, p.lcp.samples])).toEqual([
      ['/', 10],
      ['/docs', 1],
    ]);
    expect(stats.calls.at(-1)?.limit).toBe(20);
    const csv = await a.inject(get('/stats/a.test/vitals?limit=1&format=csv'));
    expect(csv.body).toBe(
      'path,lcp_good,lcp_needs_improvement,lcp_poor,lcp_samples,cls_good,cls_needs_improvement,cls_poor,cls_samples,inp_good,inp_needs_improvement,inp_poor,inp_samples\r\n' +
        '/,8,0,2,10,0,0,0,0,0,0,0,0\r\n',
    );
  });
});

describe('CSV cells', () => {
  it('quotes commas, quotes and line breaks; prefixes what a spreadsheet would run', () => {
    expect(csvCell('plain')).toBe('plain');
    expect(csvCell(12)).toBe('12');
    expect(csvCell('a,b')).toBe('"a,b"');
    expect(csvCell('say "hi"')).toBe('"say ""hi"""');
    expect(csvCell('two\nlines')).toBe('"two\nlines"');
    for (const lead of ['=', '+', '-', '@', '\t']) expect(csvCell(`${lead}1+1`)).toBe(`'${lead}1+1`);
  });
});
