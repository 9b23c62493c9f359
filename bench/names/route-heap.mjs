// bench/names, in process: what 100,000 API routes cost at each step of a
// start (issue 30): the route store's table, the compact snapshot a worker
// starts from (its bytes, the time to encode and decode it) and a data plane
// serving the decoded table (its heap and how many sites it compiled).
//
//   pnpm build && node --expose-gc bench/names/route-heap.mjs
//   N=10000 node --expose-gc bench/names/route-heap.mjs
//
// Heap = process.memoryUsage().heapUsed after global.gc(), before and after
// each step; one upstream shared by every route, as bench/names runs it.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { decodeRouteUpdate, encodeRouteUpdate, NodeRoutes, RoutePublisher } from '@proxyd/cluster';
import { defaultGlobalOptions } from '@proxyd/model';
import { DataPlane } from '@proxyd/proxy-core';
import { RouteStore } from '@proxyd/route-store';

const N = Number(process.env.N ?? 100_000);
if (typeof global.gc !== 'function') throw new Error('run with node --expose-gc');
const heap = () => {
  global.gc();
  global.gc();
  return process.memoryUsage().heapUsed;
};
const mb = (bytes) => `${(bytes / 1e6).toFixed(1)} MB`;
const perRoute = (bytes) => `${Math.round(bytes / N)} B/route`;
const row = (step, bytes, extra = '') =>
  console.log(`${step.padEnd(34)} ${mb(bytes).padStart(10)}  ${perRoute(bytes).padStart(14)}  ${extra}`);

const dir = await mkdtemp(path.join(tmpdir(), 'proxyd-route-heap-'));
try {
  const routes = [];
  for (let i = 0; i < N; i++)
    routes.push({ domain: `s${i}.names.test`, upstream: '127.0.0.1:9', tls: false, source: null });
  routes.sort((a, b) => (a.domain < b.domain ? -1 : a.domain > b.domain ? 1 : 0));
  const stateFile = path.join(dir, 'routes.json');
  await writeFile(stateFile, JSON.stringify({ format: 'proxyd-routes/1', routes }));
  routes.length = 0;
  console.log(`${N} API routes, Node ${process.version}`);
  let before = heap();
  let t0 = performance.now();
  const { store } = await RouteStore.open({ stateFile });
  let ms = performance.now() - t0;
  let after = heap();
  row('route store (open)', after - before, `${ms.toFixed(0)} ms`);

  before = after;
  const publisher = new RoutePublisher();
  t0 = performance.now();
  const full = publisher.full(store.snapshot);
  const bytes = encodeRouteUpdate(full);
  ms = performance.now() - t0;
  after = heap();
  row('start snapshot (encoded)', bytes.byteLength, `${ms.toFixed(0)} ms to build and encode`);

  before = heap();
  t0 = performance.now();
  const decoded = decodeRouteUpdate(bytes);
  const node = new NodeRoutes();
  const first = node.apply(decoded);
  ms = performance.now() - t0;
  after = heap();
  row("worker's table (decoded)", after - before, `${ms.toFixed(0)} ms to decode and apply`);

  before = after;
  const global = defaultGlobalOptions();
  global.http_port = 0;
  global.auto_https = 'off';
  t0 = performance.now();
  const plane = await DataPlane.start({ global, sites: [] }, first.routes, {}, { bindHost: '127.0.0.1' });
  ms = performance.now() - t0;
  after = heap();
  row('data plane (compiled)', after - before, `${ms.toFixed(0)} ms to start`);
  await plane.close();
  await store.close();
} finally {
  await rm(dir, { recursive: true, force: true });
}
