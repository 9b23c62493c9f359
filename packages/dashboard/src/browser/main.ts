import type { SitesResponse } from '../shared/api.js';
import { customWindow, PRESET_LABELS, PRESETS, type Preset, presetWindow, type Window } from '../shared/range.js';
import type { Dimension } from '../source.js';
import { ApiError, api } from './api.js';
import { SeriesChart } from './chart.js';
import { byId, h } from './dom.js';
import { bytes, clock, count, isoDate, localMidnight, share } from './format.js';
import { type KeyKind, kpiCards, liveVitalsTable, panel, rankedList, tabbedPanel, vitalsTable } from './views.js';

/** How often the real-time view refreshes, ms. */
const REALTIME_REFRESH_MS = 10_000;

/** What the page shows, mirrored in the URL's fragment (`#site=…&range=7d`), so a reload or a link keeps it. */
interface State {
  site: string | null;
  preset: Preset;
  /** Custom range, `YYYY-MM-DD` local dates, both included. */
  from: string;
  to: string;
}

const els = {
  site: byId<HTMLSelectElement>('site'),
  range: byId<HTMLSelectElement>('range'),
  custom: byId<HTMLFormElement>('custom'),
  from: byId<HTMLInputElement>('from'),
  to: byId<HTMLInputElement>('to'),
  status: byId<HTMLElement>('status'),
  notice: byId<HTMLElement>('notice'),
  kpis: byId<HTMLElement>('kpis'),
  chartTitle: byId<HTMLElement>('chart-title'),
  chartNote: byId<HTMLElement>('chart-note'),
  panels: byId<HTMLElement>('panels'),
  vitals: byId<HTMLTableElement>('vitals'),
  vitalsNote: byId<HTMLElement>('vitals-note'),
  vitalsCard: byId<HTMLElement>('vitals-card'),
};
const chart = new SeriesChart(byId('chart'));
let sites: SitesResponse = { domains: [], history: true };
let state = readState();
/** Increments on every load: an answer to an older load is dropped. */
let generation = 0;
let timer: ReturnType<typeof setInterval> | undefined;

function readState(): State {
  const params = new URLSearchParams(location.hash.slice(1));
  const preset = PRESETS.find((p) => p === params.get('range')) ?? '24h';
  const today = Date.now();
  return {
    site: params.get('site'),
    preset,
    from: params.get('from') ?? isoDate(today - 6 * 86_400_000),
    to: params.get('to') ?? isoDate(today),
  };
}

function writeState(): void {
  const params = new URLSearchParams();
  if (state.site !== null) params.set('site', state.site);
  params.set('range', state.preset);
  if (state.preset === 'custom') {
    params.set('from', state.from);
    params.set('to', state.to);
  }
  history.replaceState(null, '', `#${params}`);
}

function notice(text: string | null): void {
  els.notice.hidden = text === null;
  els.notice.textContent = text ?? '';
}

function status(live: boolean, text: string): void {
  els.status.replaceChildren(live ? h('span', { class: 'live-dot', attrs: { 'aria-hidden': 'true' } }) : '', text);
}

function failed(err: unknown): void {
  if (err instanceof ApiError && err.status === 401)
    notice('Your credentials were refused: reload the page to sign in again.');
  else if (err instanceof ApiError && err.status === 501)
    notice('History is off on this server: only the real-time view has data.');
  else notice(`Could not load the numbers: ${(err as Error).message}`);
}

/** The window of the current range (not for `realtime`). */
function currentWindow(now: number): Window {
  if (state.preset === 'custom') {
    const from = localMidnight(state.from);
    const to = localMidnight(state.to) + 86_400_000;
    return customWindow({ from, to: Math.min(to, now + 1) }, now);
  }
  const midnight = new Date(now);
  midnight.setHours(0, 0, 0, 0);
  return presetWindow(state.preset as Exclude<Preset, 'custom' | 'realtime'>, now, midnight.getTime());
}

const RANGE_PANELS: { title: string; name: string; tabs: { label: string; dimension: Dimension; kind: KeyKind }[] }[] =
  [
    { title: 'Top pages', name: 'pages', tabs: [{ label: 'Pages', dimension: 'pages', kind: 'path' }] },
    { title: 'Entry pages', name: 'entry_pages', tabs: [{ label: 'Entry', dimension: 'entry_pages', kind: 'path' }] },
    { title: 'Referrers', name: 'referrers', tabs: [{ label: 'Referrers', dimension: 'referrers', kind: 'plain' }] },
    { title: 'Countries', name: 'countries', tabs: [{ label: 'Countries', dimension: 'countries', kind: 'country' }] },
    {
      title: 'Devices',
      name: 'devices',
      tabs: [
        { label: 'Browser', dimension: 'browsers', kind: 'plain' },
        { label: 'OS', dimension: 'os', kind: 'plain' },
        { label: 'Device', dimension: 'devices', kind: 'plain' },
      ],
    },
    {
      title: 'Campaigns',
      name: 'utm',
      tabs: [
        { label: 'Source', dimension: 'utm_source', kind: 'plain' },
        { label: 'Medium', dimension: 'utm_medium', kind: 'plain' },
        { label: 'Campaign', dimension: 'utm_campaign', kind: 'plain' },
      ],
    },
  ];

async function loadRange(site: string, mine: number): Promise<void> {
  const now = Date.now();
  const win = currentWindow(now);
  const dimensions = RANGE_PANELS.flatMap((p) => p.tabs.map((t) => t.dimension));
  const [totals, series, vitals, ...breakdowns] = await Promise.all([
    api.totals(site, win),
    api.timeseries(site, win, win.interval),
    api.vitals(site, win),
    ...dimensions.map((d) => api.breakdown(site, d, win)),
  ]);
  if (mine !== generation) return;
  const byDimension = new Map(breakdowns.map((b) => [b.dimension, b.items]));
  const errors = totals.status.s5xx + totals.status.s4xx;
  els.kpis.replaceChildren(
    ...kpiCards([
      { name: 'visitors', label: 'Visitors', value: count(totals.visitors) },
      { name: 'page_views', label: 'Page views', value: count(totals.page_views) },
      {
        name: 'views_per_visitor',
        label: 'Views per visitor',
        value: totals.visitors > 0 ? (totals.page_views / totals.visitors).toFixed(1) : '–',
      },
      {
        name: 'requests',
        label: 'Requests',
        value: count(totals.requests),
        sub: `${count(totals.bot_requests)} by bots`,
      },
      { name: 'bytes_sent', label: 'Bandwidth', value: bytes(totals.bytes_sent) },
      {
        name: 'errors',
        label: 'Errors',
        value: totals.requests > 0 ? share(errors / totals.requests) : '–',
        sub: `${count(totals.status.s4xx)} 4xx · ${count(totals.status.s5xx)} 5xx`,
      },
    ]),
  );
  els.chartTitle.textContent = 'Page views and visitors';
  els.chartNote.textContent = `per ${win.interval}`;
  chart.show(series.points, win.interval);
  els.panels.replaceChildren(
    ...RANGE_PANELS.map((p) => {
      const tabs = p.tabs.map((t) => ({
        label: t.label,
        name: t.dimension,
        body: rankedList(
          (byDimension.get(t.dimension) ?? []).map((i) => ({ key: i.key, value: i.page_views })),
          t.kind,
          'Views',
          'No data in this range',
        ),
      }));
      const first = tabs[0];
      return tabs.length === 1 && first !== undefined
        ? panel(p.title, p.name, first.body)
        : tabbedPanel(p.title, p.name, tabs);
    }),
  );
  els.vitalsNote.textContent = 'per page, by the share of good, needs-improvement and poor samples';
  els.vitalsCard.querySelector('.legend')?.remove();
  els.vitalsCard.append(vitalsTable(els.vitals, vitals.pages));
  status(false, `Updated ${clock(now)}`);
}

async function loadRealtime(site: string, mine: number): Promise<void> {
  const live = await api.realtime(site);
  if (mine !== generation) return;
  const s = live.snapshot;
  const minutes = live.minutes ?? [];
  const last30 = minutes.reduce((n, p) => n + p.page_views, 0);
  els.kpis.replaceChildren(
    ...kpiCards([
      { name: 'page_views_1m', label: 'Last minute', value: count(s?.page_views_1m ?? 0), sub: 'requests' },
      { name: 'page_views_60m', label: 'Last 60 minutes', value: count(s?.page_views_60m ?? 0), sub: 'requests' },
      ...(live.minutes === null
        ? []
        : [{ name: 'page_views_30m', label: 'Page views', value: count(last30), sub: 'last 30 minutes' }]),
      { name: 'unique_visitors', label: 'Visitors', value: count(s?.unique_visitors ?? 0), sub: 'since start' },
      { name: 'bytes_sent', label: 'Bandwidth', value: bytes(s?.bytes_sent ?? 0), sub: 'since start' },
    ]),
  );
  els.chartTitle.textContent = 'Last 30 minutes';
  els.chartNote.textContent = live.minutes === null ? 'history is off' : 'per minute, complete minutes';
  chart.show(minutes, 'minute');
  const list = (items: { key: string; value: number }[], kind: KeyKind) =>
    rankedList(items, kind, 'Requests', 'Nothing yet');
  els.panels.replaceChildren(
    panel(
      'Top pages',
      'pages',
      list(
        (s?.top_pages ?? []).map((p) => ({ key: p.path, value: p.views })),
        'path',
      ),
    ),
    panel(
      'Referrers',
      'referrers',
      list(
        (s?.referrers ?? []).map((r) => ({ key: r.domain, value: r.count })),
        'plain',
      ),
    ),
    panel(
      'Countries',
      'countries',
      list(
        (s?.countries ?? []).map((c) => ({ key: c.country, value: c.count })),
        'country',
      ),
    ),
    panel(
      'Status codes',
      'status',
      list(
        s === null
          ? []
          : Object.entries(s.status_codes)
              .map(([k, v]) => ({ key: k === 'other' ? 'other' : `${k.slice(1)}`, value: v }))
              .filter((i) => i.value > 0),
        'plain',
      ),
    ),
  );
  els.vitalsNote.textContent = 'all pages since start';
  els.vitalsCard.querySelector('.legend')?.remove();
  els.vitalsCard.append(liveVitalsTable(els.vitals, s));
  status(true, `Live · updated ${clock(live.now)}`);
}

async function load(): Promise<void> {
  const mine = ++generation;
  clearInterval(timer);
  timer = undefined;
  writeState();
  els.custom.hidden = state.preset !== 'custom';
  const site = state.site;
  if (site === null) {
    notice('No traffic yet: the sites proxyd serves show here once they get requests.');
    return;
  }
  document.title = `${site} · proxyd analytics`;
  status(false, 'Loading…');
  try {
    if (state.preset === 'realtime') {
      await loadRealtime(site, mine);
      timer = setInterval(() => {
        loadRealtime(site, mine).catch(failed);
      }, REALTIME_REFRESH_MS);
    } else {
      await loadRange(site, mine);
    }
    if (mine === generation)
      notice(sites.history ? null : 'History is off on this server: only the real-time view has data.');
  } catch (err) {
    if (mine === generation) failed(err);
  }
}

async function start(): Promise<void> {
  for (const preset of PRESETS) {
    els.range.append(h('option', { attrs: { value: preset } }, PRESET_LABELS[preset]));
  }
  try {
    sites = await api.sites();
  } catch (err) {
    failed(err);
    return;
  }
  if (!sites.history) {
    state.preset = 'realtime';
    for (const option of els.range.options) option.disabled = option.value !== 'realtime';
  }
  els.site.replaceChildren(...sites.domains.map((d) => h('option', { attrs: { value: d } }, d)));
  if (state.site === null || !sites.domains.includes(state.site)) state.site = sites.domains[0] ?? null;
  if (state.site !== null) els.site.value = state.site;
  els.range.value = state.preset;
  els.from.value = state.from;
  els.to.value = state.to;
  els.site.addEventListener('change', () => {
    state.site = els.site.value;
    void load();
  });
  els.range.addEventListener('change', () => {
    state.preset = els.range.value as Preset;
    if (state.preset === 'custom') {
      els.custom.hidden = false;
      return;
    }
    void load();
  });
  els.custom.addEventListener('submit', (event) => {
    event.preventDefault();
    if (Number.isNaN(localMidnight(els.from.value)) || Number.isNaN(localMidnight(els.to.value))) return;
    state.from = els.from.value;
    state.to = els.to.value;
    void load();
  });
  window.addEventListener('hashchange', () => {
    const next = readState();
    if (next.site === state.site && next.preset === state.preset && next.from === state.from && next.to === state.to) {
      return;
    }
    state = next;
    if (state.site !== null) els.site.value = state.site;
    els.range.value = state.preset;
    void load();
  });
  await load();
}

void start();
