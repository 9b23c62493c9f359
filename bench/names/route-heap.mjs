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
// Then WRITES (200) route writes through both sides, each side's
// allocation per write measured with V8's sampling heap profiler (objects
// collected since included): what a write brings the next major collection
// of each process's heap closer by.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { decodeRouteUpdate, encodeRouteUpdate, NodeRoutes, RoutePublisher } from '@proxyd/cluster';
import { defaultGlobalOptions } from '@proxyd/model';
import { DataPlane } from '@proxyd/proxy-core';
import { RouteStore } from '@proxyd/route-store';

const N = Number(process.env.N ?? 100_000);
const WRITES = Number(process.env.WRITES ?? 200);
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
  const plane = await DataPlane.start({ global, sites: [] }, first, {}, { bindHost: '127.0.0.1' });
  ms = performance.now() - t0;
  after = heap();
  row('data plane (compiled)', after - before, `${ms.toFixed(0)} ms to start`);

  // Route writes: each replaces one route (the table keeps its size, under the route limit).
  const session = new Session();
  session.connect();
  const sampled = async (fn) => {
    await session.post('HeapProfiler.startSampling', {
      samplingInterval: 1024,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
    await fn();
    const { profile } = await session.post('HeapProfiler.stopSampling');
    let bytes = 0;
    const walk = (node) => {
      bytes += node.selfSize;
      for (const child of node.children) walk(child);
    };
    walk(profile.head);
    return bytes;
  };
  const messages = [];
  const write = async (i) => {
    await store.upsert({
      domain: `s${(i * 7919) % N}.names.test`,
      upstream: `127.0.0.1:${10 + (i % 2)}`,
      tls: false,
      source: null,
    });
    const update = publisher.next(store.snapshot);
    if (update !== null) messages.push(encodeRouteUpdate(update));
  };
  const apply = (bytes) => {
    const next = node.apply(decodeRouteUpdate(bytes));
    if (next !== null) plane.setRoutes(next);
  };
  for (let i = 0; i < 10; i++) await write(i); // warm: the first ones compile
  for (const bytes of messages.splice(0)) apply(bytes);
  const control = await sampled(async () => {
    for (let i = 10; i < 10 + WRITES; i++) await write(i);
  });
  const worker = await sampled(async () => {
    for (const bytes of messages) apply(bytes);
  });
  const kb = (bytes) => `${(bytes / WRITES / 1024).toFixed(1)} KB`;
  console.log(
    `${'a route write, allocated'.padEnd(34)} control plane ${kb(control)}, data plane ${kb(worker)}, over ${WRITES} writes`,
  );
  session.disconnect();
  await plane.close();
  await store.close();
} finally {
  await rm(dir, { recursive: true, force: true });
}
