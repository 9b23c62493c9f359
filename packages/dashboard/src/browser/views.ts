import {
  type Rating,
  rateCounts,
  rateValue,
  ratingShares,
  VITAL_METRICS,
  VITAL_THRESHOLDS,
  type VitalMetric,
} from '../shared/vitals.js';
import type { LiveSnapshot, VitalSamples, VitalsPage } from '../source.js';
import { type Child, h } from './dom.js';
import { count, countryName, share, vital } from './format.js';

/** One headline number. */
export interface Kpi {
  label: string;
  value: string;
  sub?: string;
  /** A stable name for tests and styles (`data-kpi`). */
  name: string;
}

/** The row of headline numbers. */
export function kpiCards(kpis: readonly Kpi[]): HTMLElement[] {
  return kpis.map((k) =>
    h(
      'div',
      { class: 'kpi', attrs: { 'data-kpi': k.name } },
      h('div', { class: 'label' }, k.label),
      h('div', { class: 'value' }, k.value),
      k.sub === undefined ? null : h('div', { class: 'sub' }, k.sub),
    ),
  );
}

/** One row of a ranked list. */
export interface ListItem {
  key: string;
  value: number;
}

/** How a list shows its keys. */
export type KeyKind = 'path' | 'country' | 'plain';

function keyCell(key: string, kind: KeyKind): Child[] {
  if (kind === 'country') {
    const code = /^[A-Z]{2}$/.test(key) ? key : '??';
    return [h('span', { class: 'cc', attrs: { 'aria-hidden': 'true' } }, code), countryName(key)];
  }
  if (key === '') return [kind === 'path' ? '/' : '(none)'];
  return [key];
}

/** A ranked list with bars proportional to the first (largest) value. */
export function rankedList(items: readonly ListItem[], kind: KeyKind, unit: string, empty: string): HTMLElement {
  if (items.length === 0) return h('div', { class: 'empty' }, empty);
  const max = Math.max(1, ...items.map((i) => i.value));
  const rows = items.map((item) => {
    const fill = h('span', { class: 'fill' });
    fill.style.width = `${(100 * item.value) / max}%`;
    return h(
      'li',
      { class: 'row', title: item.key, attrs: { 'data-key': item.key } },
      fill,
      h('span', { class: 'key' }, ...keyCell(item.key, kind)),
      h('span', { class: 'num' }, count(item.value)),
    );
  });
  return h(
    'div',
    {},
    h('div', { class: 'list-head' }, h('span', {}, kind === 'country' ? 'Country' : 'Name'), h('span', {}, unit)),
    h('ul', { class: 'list' }, ...rows),
  );
}

/** One panel: a title and a body (a ranked list, or tabs of them). */
export function panel(title: string, name: string, body: HTMLElement, aside?: HTMLElement): HTMLElement {
  return h(
    'section',
    { class: 'card panel', attrs: { 'data-panel': name } },
    h('div', { class: 'card-head' }, h('h2', {}, title), aside ?? null),
    body,
  );
}

/** A panel with tabs (UTM source / medium / campaign; browsers / OS / devices). */
export function tabbedPanel(
  title: string,
  name: string,
  tabs: readonly { label: string; name: string; body: HTMLElement }[],
): HTMLElement {
  const holder = h('div', {});
  const buttons = tabs.map((tab, i) => {
    const button = h(
      'button',
      { attrs: { type: 'button', role: 'tab', 'aria-selected': String(i === 0), 'data-tab': tab.name } },
      tab.label,
    );
    button.addEventListener('click', () => {
      for (const b of buttons) b.setAttribute('aria-selected', String(b === button));
      holder.replaceChildren(tab.body);
    });
    return button;
  });
  holder.append(tabs[0]?.body ?? h('div'));
  return panel(title, name, holder, h('div', { class: 'tabs', attrs: { role: 'tablist' } }, ...buttons));
}

const RATING_LABELS: Record<Rating, string> = {
  good: 'Good',
  'needs-improvement': 'Needs improvement',
  poor: 'Poor',
};

function badge(rating: Rating | null): HTMLElement {
  if (rating === null) return h('span', { class: 'badge muted' }, 'No data');
  return h('span', { class: `badge ${rating}`, attrs: { 'data-rating': rating } }, RATING_LABELS[rating]);
}

/** Good / needs improvement / poor as one stacked bar. */
function stack(counts: VitalSamples): HTMLElement {
  const s = ratingShares(counts);
  const parts: [keyof typeof s, Rating][] = [
    ['good', 'good'],
    ['needs_improvement', 'needs-improvement'],
    ['poor', 'poor'],
  ];
  const bar = h('div', {
    class: 'stack',
    title: `Good ${share(s.good)} · Needs improvement ${share(s.needs_improvement)} · Poor ${share(s.poor)}`,
    attrs: {
      role: 'img',
      'aria-label': `good ${share(s.good)}, needs improvement ${share(s.needs_improvement)}, poor ${share(s.poor)}`,
    },
  });
  for (const [key, rating] of parts) {
    if (s[key] === 0) continue;
    const span = h('span', { class: rating });
    span.style.width = `${100 * s[key]}%`;
    bar.append(span);
  }
  return bar;
}

function metricCell(metric: VitalMetric, counts: VitalSamples): HTMLElement {
  const rating = rateCounts(counts);
  return h(
    'td',
    { attrs: { 'data-metric': metric } },
    h(
      'div',
      { class: 'metric' },
      h(
        'div',
        { class: 'line' },
        badge(rating),
        h('span', { class: 'muted' }, `${count(counts.samples)} ${counts.samples === 1 ? 'sample' : 'samples'}`),
      ),
      stack(counts),
    ),
  );
}

function legend(): HTMLElement {
  const t = VITAL_THRESHOLDS;
  const ms = (m: VitalMetric, v: number) => vital(m, v);
  return h(
    'div',
    { class: 'legend' },
    h('span', { class: 'badge good' }, 'Good'),
    h('span', { class: 'badge needs-improvement' }, 'Needs improvement'),
    h('span', { class: 'badge poor' }, 'Poor'),
    h(
      'span',
      {},
      `LCP ≤ ${ms('lcp', t.lcp.good)} / > ${ms('lcp', t.lcp.poor)} · CLS ≤ ${t.cls.good} / > ${t.cls.poor} · INP ≤ ${ms('inp', t.inp.good)} / > ${ms('inp', t.inp.poor)}. A page rates good when 75 % of its samples are good.`,
    ),
  );
}

/** The Web Vitals of each page over a range: rating, sample count and the three shares per metric. */
export function vitalsTable(table: HTMLTableElement, pages: readonly VitalsPage[]): HTMLElement {
  table.classList.remove('live');
  table.replaceChildren(
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        h('th', {}, 'Page'),
        ...VITAL_METRICS.map((m) => h('th', { title: VITAL_THRESHOLDS[m].name }, m.toUpperCase())),
      ),
    ),
    h(
      'tbody',
      {},
      ...(pages.length === 0
        ? [h('tr', {}, h('td', { class: 'empty', attrs: { colspan: '4' } }, 'No Web Vitals in this range'))]
        : pages.map((p) =>
            h(
              'tr',
              { attrs: { 'data-path': p.path } },
              h('td', { class: 'path', title: p.path }, p.path),
              ...VITAL_METRICS.map((m) => metricCell(m, p[m])),
            ),
          )),
    ),
  );
  return legend();
}

/** The live snapshot's percentiles (all pages since start), each rated by its p75. */
export function liveVitalsTable(table: HTMLTableElement, snapshot: LiveSnapshot | null): HTMLElement {
  table.classList.add('live');
  const rows = VITAL_METRICS.map((m) => {
    const p = snapshot?.web_vitals[m];
    const seen = p !== undefined && (p.p50 > 0 || p.p75 > 0 || p.p95 > 0);
    return h(
      'tr',
      { attrs: { 'data-metric': m } },
      h(
        'td',
        { title: VITAL_THRESHOLDS[m].name },
        h('strong', {}, m.toUpperCase()),
        ' ',
        h('span', { class: 'muted long' }, VITAL_THRESHOLDS[m].name),
      ),
      h('td', {}, seen ? badge(rateValue(m, p.p75)) : badge(null)),
      h('td', {}, seen ? vital(m, p.p50) : '–'),
      h('td', {}, seen ? vital(m, p.p75) : '–'),
      h('td', {}, seen ? vital(m, p.p95) : '–'),
    );
  });
  table.replaceChildren(
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        h('th', {}, 'Metric'),
        h('th', {}, 'Rating (p75)'),
        h('th', {}, 'p50'),
        h('th', {}, 'p75'),
        h('th', {}, 'p95'),
      ),
    ),
    h('tbody', {}, ...rows),
  );
  return legend();
}
