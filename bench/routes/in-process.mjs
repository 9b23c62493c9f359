// bench/routes, in process: the longest the event loop is held by one admin
// write at N routes — the data plane's worst stall, without the noise of a
// client and a daemon sharing a busy machine.
//
//   pnpm build && node bench/routes/in-process.mjs
//   SIZES=1000,100000 WRITES=50 node bench/routes/in-process.mjs
//
// A RouteStore with an fsynced state file of N API routes (a temp dir) feeds
// a DataPlane on a loopback port, as the daemon wires them. For each write
// (half add a domain, half replace a route): the time until the write
// resolves, the synchronous publish (the store's listener: the data plane's
// update), and the longest gap between two turns of a setImmediate ticker
// while the write runs (the longest the loop was held by anything: the
// store, the state file's chunks, the data plane, GC).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { defaultGlobalOptions } from '@proxyd/model';
import { DataPlane } from '@proxyd/proxy-core';
import { RouteStore } from '@proxyd/route-store';

const SIZES = (process.env.SIZES ?? '1000,10000,100000').split(',').map(Number);
const WRITES = Number(process.env.WRITES ?? 40);

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const fmt = (ms) => (ms < 10 ? ms.toFixed(2) : ms.toFixed(1));

/** Runs `fn` while a setImmediate ticker measures the longest gap between two of its turns. */
async function held(fn) {
  let worst = 0;
  let last = performance.now();
  let running = true;
  const tick = () => {
    const now = performance.now();
    worst = Math.max(worst, now - last);
    last = now;
    if (running) setImmediate(tick);
  };
  setImmediate(tick);
  const value = await fn();
  // One more turn: the gap that ends now (the write's last step) is counted too.
  await new Promise((resolve) => setImmediate(resolve));
  running = false;
  return { value, worst };
}

async function measure(n) {
  const dir = await mkdtemp(path.join(tmpdir(), 'proxyd-bench-routes-'));
  try {
    const routes = [];
    for (let i = 0; i < n - Math.ceil(WRITES / 2); i++) {
      routes.push({ domain: `r${i}.bench.test`, upstream: '127.0.0.1:9', tls: false, source: 'bench' });
    }
    routes.sort((a, b) => (a.domain < b.domain ? -1 : a.domain > b.domain ? 1 : 0));
    const stateFile = path.join(dir, 'routes.json');
    await writeFile(stateFile, JSON.stringify({ format: 'proxyd-routes/1', routes }));
    const { store } = await RouteStore.open({ stateFile });
    const global = defaultGlobalOptions();
    global.http_port = 0;
    global.auto_https = 'off';
    const plane = await DataPlane.start({ global, sites: [] }, store.routes, {}, { bindHost: '127.0.0.1' });
    const publishes = [];
    const unsubscribe = store.subscribe((snapshot) => {
      const t0 = performance.now();
      plane.setRoutes(snapshot);
      publishes.push(performance.now() - t0);
    });
    publishes.length = 0;
    const latencies = [];
    const gaps = [];
    for (let i = 0; i < WRITES; i++) {
      const domain = i % 2 === 0 ? `new${i}.bench.test` : `r${Math.floor((i * (n / 2)) / WRITES)}.bench.test`;
      const t0 = performance.now();
      const { worst } = await held(() =>
        store.upsert({ domain, upstream: '127.0.0.1:10', tls: false, source: 'bench' }),
      );
      latencies.push(performance.now() - t0);
      gaps.push(worst);
    }
    unsubscribe();
    await store.close();
    await plane.close();
    return {
      n,
      p50: pct(latencies, 50),
      max: Math.max(...latencies),
      publishP50: pct(publishes, 50),
      publishMax: Math.max(...publishes),
      gapP50: pct(gaps, 50),
      gapMax: Math.max(...gaps),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const rows = [];
for (const n of SIZES) rows.push(await measure(n));
console.log(
  `in process: RouteStore (fsynced state file) → DataPlane; ${WRITES} sequential writes, half new, half replacing`,
);
console.log('publish: the data plane update (synchronous); loop held: longest gap between two setImmediate turns\n');
console.log(
  '| routes  | write p50 (ms) | write max (ms) | publish p50 (ms) | publish max (ms) | loop held p50 (ms) | loop held max (ms) |',
);
console.log(
  '| ------: | -------------: | -------------: | ---------------: | ---------------: | -----------------: | -----------------: |',
);
for (const r of rows) {
  console.log(
    `| ${String(r.n).padStart(7)} | ${fmt(r.p50).padStart(14)} | ${fmt(r.max).padStart(14)} | ${fmt(r.publishP50).padStart(16)} | ${fmt(r.publishMax).padStart(16)} | ${fmt(r.gapP50).padStart(18)} | ${fmt(r.gapMax).padStart(18)} |`,
  );
}
