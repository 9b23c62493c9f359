import uPlot from 'uplot';
import type { Interval, TimeseriesPoint } from '../source.js';
import { h } from './dom.js';
import { bucketLabel, count } from './format.js';

/** A CSS custom property of the page (the chart draws on a canvas, so it reads the theme once per draw). */
function cssVar(name: string, fallback: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;
}

/**
 * The time-series chart of page views and visitors: uPlot, sized to its
 * container and resized with it (a phone's width, a rotated screen).
 */
export class SeriesChart {
  readonly #container: HTMLElement;
  #plot: uPlot | null = null;
  readonly #observer: ResizeObserver;

  constructor(container: HTMLElement) {
    this.#container = container;
    this.#observer = new ResizeObserver(() => {
      this.#plot?.setSize(this.#size());
    });
    this.#observer.observe(container);
  }

  #size(): { width: number; height: number } {
    const width = Math.max(200, this.#container.clientWidth);
    return { width, height: width < 500 ? 200 : 260 };
  }

  /** Draws the points (one chart per call: the interval decides the axis labels). */
  show(points: readonly TimeseriesPoint[], interval: Interval): void {
    this.#plot?.destroy();
    this.#plot = null;
    this.#container.replaceChildren();
    if (points.length === 0) {
      this.#container.append(h('div', { class: 'chart-empty' }, 'No data in this range'));
      return;
    }
    const accent = cssVar('--accent', '#2563eb');
    const fill = cssVar('--accent-fill', 'rgba(37,99,235,0.12)');
    const second = cssVar('--second', '#f97316');
    const muted = cssVar('--muted', '#667085');
    const grid = cssVar('--border', '#e4e7ec');
    const axis = { stroke: muted, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
    const options: uPlot.Options = {
      ...this.#size(),
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, max > 0 ? Math.ceil(max * 1.15) : 1] } },
      series: [
        { label: 'Time', value: (_u, v) => (v === null ? '–' : bucketLabel(v * 1000, interval)) },
        {
          label: 'Page views',
          stroke: accent,
          fill,
          width: 2,
          points: { show: points.length < 60 },
          value: (_u, v) => (v === null ? '–' : count(v)),
        },
        {
          label: 'Visitors',
          stroke: second,
          width: 2,
          points: { show: points.length < 60 },
          value: (_u, v) => (v === null ? '–' : count(v)),
        },
      ],
      axes: [
        axis,
        { ...axis, size: 48, values: (_u, values) => values.map((v) => (Number.isInteger(v) ? count(v) : '')) },
      ],
      cursor: { drag: { x: false, y: false, setScale: false } },
      legend: { live: true },
      // Day buckets are UTC days: label them as such, not as the evening before west of Greenwich.
      ...(interval === 'day' ? { tzDate: (ts: number) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC') } : {}),
    };
    const data: uPlot.AlignedData = [
      points.map((p) => p.t / 1000),
      points.map((p) => p.page_views),
      points.map((p) => p.visitors),
    ];
    this.#plot = new uPlot(options, data, this.#container);
    this.#container.append(dataTable(points, interval));
  }
}

/** The chart's numbers as a table for screen readers (visually hidden: a table box cannot clip itself): one row per bucket. */
function dataTable(points: readonly TimeseriesPoint[], interval: Interval): HTMLElement {
  const table = h(
    'table',
    { attrs: { 'data-chart-table': '' } },
    h('caption', {}, `Page views and visitors per ${interval}`),
    h('thead', {}, h('tr', {}, h('th', {}, 'Time'), h('th', {}, 'Page views'), h('th', {}, 'Visitors'))),
    h(
      'tbody',
      {},
      ...points.map((p) =>
        h(
          'tr',
          { attrs: { 'data-t': String(p.t) } },
          h('td', {}, bucketLabel(p.t, interval)),
          h('td', { attrs: { 'data-series': 'page_views' } }, String(p.page_views)),
          h('td', { attrs: { 'data-series': 'visitors' } }, String(p.visitors)),
        ),
      ),
    ),
  );
  return h('div', { class: 'sr-only' }, table);
}
