// The proxyd analytics browser script (bundled with web-vitals into
// dist/browser/a.js by scripts/build-script.mjs). It reports LCP, CLS and INP
// to the same-origin beacon endpoint when the page is hidden or closed.
import { onCLS, onINP, onLCP } from 'web-vitals';

(() => {
  const script = document.currentScript;
  const token = script?.getAttribute('data-t');
  if (!token) return;
  // The page the vitals belong to: the document's path when it loaded (the page view the proxy counted).
  const page = location.pathname;
  const latest = new Map();
  const sent = new Map();
  const record = (metric) => {
    latest.set(metric.name, Math.round(metric.value * 10000) / 10000);
  };
  const flush = () => {
    const m = [];
    for (const [n, v] of latest) {
      if (sent.get(n) !== v) {
        m.push({ n, v });
        sent.set(n, v);
      }
    }
    if (m.length === 0) return;
    const body = JSON.stringify({ t: token, m, p: page });
    // location.origin: a relative URL would follow the page's <base href>.
    const url = `${location.origin}/_proxyd/collect`;
    let queued = false;
    try {
      queued = navigator.sendBeacon?.(url, body) === true;
    } catch {
      queued = false;
    }
    if (!queued) fetch(url, { method: 'POST', body, keepalive: true, credentials: 'omit' }).catch(() => {});
  };
  onLCP(record);
  onCLS(record);
  onINP(record);
  addEventListener('visibilitychange', () => {
    if (document.visibilityState === 'hidden') flush();
  });
  addEventListener('pagehide', flush);
})();
