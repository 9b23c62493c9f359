// bench/labels: container labels as a live route source, against real
// Podman and Docker Engine API services, with the built daemon.
//
//   node bench/labels/run.mjs                  (or: pnpm bench labels)
//   RUNTIME=podman node bench/labels/run.mjs   (one runtime; default: podman,docker)
//   STARTS=10 EVENTS=8 SCALES=20,200 WINDOW_MS=1000 node bench/labels/run.mjs
//   PROXYD_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" RUNTIME=podman node bench/labels/run.mjs
//
// Per runtime: the runtime (test-peers: its own store, the busybox httpd
// image), a socket spy between proxyd and the runtime's API socket (counts
// proxyd's API calls and stamps when each event reaches proxyd), and the
// built daemon (`--docker-host unix://<spy>`, no sites, `auto_https
// disable_redirects`, free loopback ports). Containers run in host network
// mode, each httpd on its own loopback port, labelled `proxy.domain:
// c<i>.test` and `proxy.port`.
//
// 1. Start → first answer: STARTS containers, one after another: create,
//    start, and poll proxyd with `Host: c<i>.test` every POLL_MS until 200.
//    First 200 minus: the runtime's start event time (`timeNano`), the time
//    this script's own /events subscription received it, the time the event
//    reached proxyd (the spy), and the time the start call was sent.
// 2. CPU per event: with SCALES containers running (20, then 200), EVENTS
//    rounds of [idle window, stop one container, start it again], each a
//    fixed WINDOW_MS window in which the script sends proxyd nothing; the
//    route's absence (404) or presence (200) is checked after the window.
//    proxyd's CPU in a window is the sum over its threads of
//    /proc/<pid>/task/*/schedstat (ns); per event = window − the median idle
//    window of that scale. A window in which proxyd listed the containers
//    (the 60 s resync) is left out and reported. "Not a full rebuild" shows
//    as inspects per event (the spy) and as CPU per event flat from 20 to
//    200 containers.
//
// Needs: root, the built daemon (pnpm build) and the runtimes
// (scripts/ensure-test-deps.sh: podman, runc, catatonit, docker.io, busybox-static).
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os, { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { startDockerd, startPodman } from '@proxyd/test-peers';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const PROXYD = path.join(path.resolve(process.env.PROXYD_CHECKOUT ?? root), 'apps/proxyd/dist/main.js');
const RUNTIMES = (process.env.RUNTIME ?? 'podman,docker').split(',').map((s) => s.trim());
const STARTS = Number(process.env.STARTS ?? 10);
const EVENTS = Number(process.env.EVENTS ?? 8);
const SCALES = (process.env.SCALES ?? '20,200').split(',').map(Number);
const WINDOW_MS = Number(process.env.WINDOW_MS ?? 1000);
const POLL_MS = Number(process.env.POLL_MS ?? 5);
const DEADLINE_S = Number(process.env.DEADLINE_S ?? 480);
const TOKEN = 'bench';
const GOAL_MS = 50;
const START = { podman: startPodman, docker: startDockerd };

for (const r of RUNTIMES) {
  if (!START[r]) {
    console.error(`RUNTIME: unknown "${r}"; have: podman, docker`);
    process.exit(2);
  }
}
if (!existsSync(PROXYD)) {
  console.error('build first: pnpm build');
  process.exit(2);
}
if (process.getuid?.() !== 0) {
  console.error('bench/labels runs the container runtimes: root only');
  process.exit(2);
}

/** Wall-clock ms with sub-ms precision (the same clock as the runtimes' timeNano). */
const now = () => performance.timeOrigin + performance.now();

const dir = mkdtempSync(path.join(tmpdir(), 'proxyd-bench-labels-'));
/** What is up now, for the cleanup: proxyd, the runtime, the spy, the event subscription. */
const live = { proxyd: null, runtime: null, spy: null, watch: null };
/** Container creations and starts in flight: the runtime is stopped only after they settle. */
const pending = new Set();
/** `op()`, tracked in `pending`; refused once stopping. */
function tracked(op) {
  if (stopping) return Promise.reject(new Error('stopping'));
  const p = op();
  pending.add(p);
  p.then(
    () => pending.delete(p),
    () => pending.delete(p),
  );
  return p;
}
let stopping = false;

async function teardown() {
  const { proxyd, runtime, spy, watch } = live;
  live.proxyd = live.runtime = live.spy = live.watch = null;
  watch?.close();
  if (proxyd && proxyd.exitCode === null && proxyd.signalCode === null) {
    const gone = new Promise((resolve) => proxyd.once('exit', resolve));
    proxyd.kill('SIGTERM'); // proxyd writes a --cpu-prof profile on the way out
    const timer = setTimeout(() => proxyd.kill('SIGKILL'), 5000);
    await gone;
    clearTimeout(timer);
  }
  spy?.close();
  // A container stopped by the runtime's cleanup while podman still starts it can leave a
  // mount in the runtime's temp dir (its conmon's cleanup runs after the unmount): let starts finish.
  await Promise.race([Promise.allSettled([...pending]), sleep(10_000)]);
  // runtime.stop() removes its containers and store; its reaper does it too if this process dies first.
  if (runtime) {
    await Promise.race([runtime.stop(), sleep(60_000)]);
    // Seen after an interrupt during bring-up: a podman `container cleanup` (run by the conmon of a
    // container the cleanup killed) re-creates the store's skeleton after the dir was removed. Sweep once more.
    const store = path.dirname(runtime.socketPath);
    await sleep(1000);
    if (existsSync(store)) {
      const q = `'${store.replaceAll("'", `'\\''`)}'`;
      execFileSync('sh', [
        '-c',
        `awk -v d=${q}/ 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo | sort -r | while read -r m; do umount -l "$m"; done; rm -rf --one-file-system ${q}`,
      ]);
    }
  }
}

/** Stops proxyd, the runtime and the spy, removes the temp dir, exits. */
async function shutdown(code) {
  if (stopping) return;
  stopping = true;
  try {
    await teardown();
  } catch (err) {
    console.error(`cleanup: ${err?.message ?? err}`);
  }
  rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
  process.exit(code);
}
// Last resort (an exit this script did not plan): kill proxyd, remove the dir; test-peers' reaper removes the runtime.
process.on('exit', () => {
  if (live.proxyd?.exitCode === null) live.proxyd.kill('SIGKILL');
  try {
    rmSync(dir, { recursive: true, force: true });
  } catch {}
});
process.on('SIGINT', () => shutdown(130));
process.on('SIGTERM', () => shutdown(143));
// While stopping, the measurement still running fails (proxyd gone, sockets closed): not worth a line.
process.on('uncaughtException', (err) => {
  if (!stopping) console.error(err);
  shutdown(1);
});
process.on('unhandledRejection', (err) => {
  if (!stopping) console.error(err);
  shutdown(1);
});
setTimeout(() => {
  console.error(`bench/labels: over ${DEADLINE_S} s, stopping`);
  shutdown(1);
}, DEADLINE_S * 1000).unref();

// --- helpers -------------------------------------------------------------------------------------

// Ports handed out stay reserved: a container not listening yet must not get its port handed out again.
const taken = new Set();
async function freePort() {
  for (;;) {
    const port = await new Promise((resolve, reject) => {
      const probe = net.createServer();
      probe.once('error', reject);
      probe.listen(0, '127.0.0.1', () => {
        const { port } = probe.address();
        probe.close(() => resolve(port));
      });
    });
    if (!taken.has(port)) {
      taken.add(port);
      return port;
    }
  }
}

async function until(what, check, timeoutMs, everyMs = 20) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms: ${what}`);
    await sleep(everyMs);
  }
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
/** GET 127.0.0.1:port with `headers`; resolves status and body. */
function get(port, pathname, headers = {}, timeoutMs = 2000) {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: pathname, headers, agent, timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => {
        body += c;
      });
      res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${pathname}: timed out`)));
    req.on('error', reject);
  });
}

/** proxyd's CPU so far: the sum over its threads of schedstat's run time, ns. */
function cpuNs(pid) {
  let sum = 0;
  for (const t of readdirSync(`/proc/${pid}/task`)) {
    try {
      sum += Number(readFileSync(`/proc/${pid}/task/${t}/schedstat`, 'utf8').split(' ')[0]);
    } catch {} // a thread that just ended
  }
  return sum;
}
/** utime+stime from /proc/<pid>/stat, ms (10 ms ticks; a cross-check of cpuNs). */
function cpuTicksMs(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};
const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)] ?? Number.NaN;
};
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
const f1 = (x) => (Number.isFinite(x) ? x.toFixed(1) : '–');
const f0 = (x) => (Number.isFinite(x) ? x.toFixed(0) : '–');

/**
 * A unix-socket spy in front of the runtime's API socket: forwards bytes both
 * ways, records every request line proxyd sends, and stamps each event line
 * of an /events response as it passes to proxyd.
 */
function startSpy(target, listenPath) {
  const requests = []; // { t, method, path }
  const events = []; // { t, id, action }
  const sockets = new Set();
  const server = net.createServer((client) => {
    const up = net.connect(target);
    sockets.add(client);
    sockets.add(up);
    let isEvents = false;
    let buffer = '';
    client.pipe(up);
    up.pipe(client);
    client.on('data', (d) => {
      const t = now();
      for (const m of d.toString('latin1').matchAll(/^(GET|POST|PUT|DELETE|HEAD) (\S+) HTTP\/1\.[01]\r$/gm)) {
        requests.push({ t, method: m[1], path: m[2] });
        if (/\/events(\?|$)/.test(m[2])) isEvents = true;
      }
    });
    up.on('data', (d) => {
      if (!isEvents) return;
      const t = now();
      buffer += d.toString('utf8');
      let end = buffer.indexOf('\n');
      for (; end >= 0; end = buffer.indexOf('\n')) {
        const line = buffer.slice(0, end).trim();
        buffer = buffer.slice(end + 1);
        if (!line.startsWith('{')) continue; // chunk sizes, headers
        try {
          const e = JSON.parse(line);
          events.push({ t, id: e.Actor?.ID ?? e.id, action: e.Action ?? e.status });
        } catch {}
      }
    });
    const close = () => {
      client.destroy();
      up.destroy();
      sockets.delete(client);
      sockets.delete(up);
    };
    for (const s of [client, up]) {
      s.on('error', close);
      s.on('close', close);
    }
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(listenPath, () =>
      resolve({
        dockerHost: `unix://${listenPath}`,
        requests,
        events,
        close() {
          server.close();
          for (const s of sockets) s.destroy();
        },
      }),
    );
  });
}

/** This script's own /events subscription: every container event with its arrival time. */
function subscribe(socketPath) {
  return new Promise((resolve, reject) => {
    const seen = []; // { t, id, action, timeMs }
    const filters = encodeURIComponent(JSON.stringify({ type: ['container'] }));
    const req = http.get({ socketPath, path: `/v1.41/events?filters=${filters}` }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        reject(new Error(`GET /events: ${res.statusCode}`));
        return;
      }
      let buffer = '';
      res.on('data', (chunk) => {
        const t = now();
        buffer += chunk.toString();
        for (let end = buffer.indexOf('\n'); end >= 0; end = buffer.indexOf('\n')) {
          const line = buffer.slice(0, end).trim();
          buffer = buffer.slice(end + 1);
          if (line === '') continue;
          const e = JSON.parse(line);
          seen.push({
            t,
            id: e.Actor.ID,
            action: e.Action,
            timeMs: e.timeNano === undefined ? e.time * 1000 : e.timeNano / 1e6,
          });
        }
      });
      res.on('error', () => {});
      resolve({ seen, close: () => req.destroy() });
    });
    req.on('error', reject);
  });
}

/** The built daemon on free loopback ports, discovery through `dockerHost`; resolves when /health answers. */
async function startProxyd(name, dockerHost) {
  const [httpPort, httpsPort, adminPort] = [await freePort(), await freePort(), await freePort()];
  const confDir = mkdtempSync(path.join(dir, `proxyd-${name}-`));
  const config = path.join(confDir, 'Proxyfile');
  writeFileSync(
    config,
    `{\n\thttp_port ${httpPort}\n\thttps_port ${httpsPort}\n\tadmin 127.0.0.1:${adminPort}\n\tauto_https disable_redirects\n}\n`,
  );
  const child = spawn(
    process.execPath,
    [
      ...(process.env.PROXYD_NODE_ARGS ? process.env.PROXYD_NODE_ARGS.split(' ') : []),
      PROXYD,
      'run',
      '--config',
      config,
      '--docker-host',
      dockerHost,
      '--state-dir',
      path.join(confDir, 'state'),
      '--cert-dir',
      path.join(confDir, 'certs'),
    ],
    { env: { ...process.env, PROXY_ADMIN_TOKEN: TOKEN }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  live.proxyd = child;
  let output = '';
  const keep = (d) => {
    output = (output + d.toString()).slice(-20_000);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  child.once('exit', (code, signal) => {
    if (!stopping && live.proxyd === child) {
      console.error(`proxyd exited (${code ?? signal}):\n${output}`);
      shutdown(1);
    }
  });
  await until('proxyd /health', async () => (await get(adminPort, '/health')).status === 200, 15_000);
  const admin = async (p) => JSON.parse((await get(adminPort, p, { authorization: `Bearer ${TOKEN}` })).body);
  return { child, pid: child.pid, httpPort, adminPort, admin, output: () => output };
}

// --- one runtime ---------------------------------------------------------------------------------

async function session(kind) {
  const t0 = now();
  const runtime = await START[kind]();
  live.runtime = runtime;
  const version = (await runtime.api.request('GET', '/version')).body;
  const spy = await startSpy(runtime.socketPath, path.join(dir, `${kind}-spy.sock`));
  live.spy = spy;
  const proxyd = await startProxyd(kind, spy.dockerHost);
  await until('discovery connected', async () => (await proxyd.admin('/discovery')).connected, 10_000);
  const watch = await subscribe(runtime.socketPath);
  live.watch = watch;
  console.log(
    `\n${kind} ${version.Version} (API ${version.ApiVersion}) up in ${f0(now() - t0)} ms; proxyd pid ${proxyd.pid}`,
  );
  const via = (i) => get(proxyd.httpPort, '/', { host: `c${i}.test` }, 1000);
  const containers = [];
  const create = async (i, created) => {
    const port = await freePort();
    const c = await tracked(() =>
      runtime.run({
        name: `c${i}`,
        network: 'host',
        port,
        labels: { 'proxy.domain': `c${i}.test`, 'proxy.port': String(port) },
        created,
      }),
    );
    containers[i] = c;
    return c;
  };

  // 1. Start → first answer.
  const starts = [];
  for (let i = 0; i < STARTS; i++) {
    const c = await create(i, true);
    await sleep(300); // let proxyd's inspect of the `create` event pass
    const sentAt = now();
    const started = tracked(() => c.start());
    let firstAt = null;
    const deadline = Date.now() + 5000;
    while (firstAt === null) {
      const res = await via(i).catch(() => null);
      if (res?.status === 200) firstAt = now();
      else if (Date.now() > deadline) throw new Error(`c${i}.test: no 200 from proxyd within 5 s of the start`);
      else await sleep(POLL_MS);
    }
    await started;
    await until(
      `start event of c${i}`,
      async () => watch.seen.some((e) => e.id === c.id && e.action === 'start'),
      5000,
    );
    await until(
      `start event of c${i} at proxyd`,
      async () => spy.events.some((e) => e.id === c.id && e.action === 'start'),
      5000,
    );
    const ev = watch.seen.find((e) => e.id === c.id && e.action === 'start');
    const atProxyd = spy.events.find((e) => e.id === c.id && e.action === 'start');
    const r = {
      fromEvent: firstAt - ev.timeMs,
      fromSeen: firstAt - ev.t,
      fromProxyd: firstAt - atProxyd.t,
      fromCall: firstAt - sentAt,
      eventLate: ev.t - ev.timeMs,
      eventLateProxyd: atProxyd.t - ev.timeMs,
    };
    starts.push(r);
    console.log(
      `  start c${i}: first 200 ${f1(r.fromEvent)} ms after the start event (received here ${f1(r.eventLate)} ms after its timeNano), ${f1(r.fromProxyd)} ms after it reached proxyd, ${f1(r.fromCall)} ms after the start call`,
    );
  }

  // 2. CPU per event at each scale.
  const scales = [];
  for (const scale of SCALES) {
    const tUp = now();
    let next = containers.length;
    const worker = async () => {
      while (next < scale) await create(next++, false);
    };
    await Promise.all([worker(), worker(), worker(), worker()]);
    const upMs = now() - tUp;
    const tRoutes = now();
    await until(
      `${scale} label routes`,
      async () => (await proxyd.admin('/routes')).filter((r) => r.source === 'docker').length === scale,
      60_000,
      200,
    );
    // Settled: certificates of the new routes issued, GC done; two quiet 300 ms slices in a row.
    let quiet = 0;
    for (const settleDeadline = Date.now() + 30_000; quiet < 2 && Date.now() < settleDeadline; ) {
      const c0 = cpuNs(proxyd.pid);
      await sleep(300);
      quiet = (cpuNs(proxyd.pid) - c0) / 1e6 < 15 ? quiet + 1 : 0;
    }
    console.log(
      `  ${scale} containers: up in ${f0(upMs)} ms (4 at a time), all routes in proxyd ${f0(now() - tRoutes)} ms later`,
    );
    scales.push({ scale, ...(await measureEvents(scale)) });
  }

  async function measureEvents(scale) {
    const idle = [];
    const events = { stop: [], start: [], new: [] };
    const excluded = [];
    let late = 0;
    const ticks0 = cpuTicksMs(proxyd.pid);
    let nsTotal = 0;
    /** One WINDOW_MS window around `action`; `idOf()` (after the action) names the container it is about. */
    const window = async (label, idOf, action) => {
      const r0 = spy.requests.length;
      const e0 = spy.events.length;
      const c0 = cpuNs(proxyd.pid);
      const start = now();
      if (action) await action();
      const actionMs = now() - start;
      await sleep(Math.max(0, start + WINDOW_MS - now()));
      const cpuMs = (cpuNs(proxyd.pid) - c0) / 1e6;
      nsTotal += cpuMs;
      const reqs = spy.requests.slice(r0);
      const id = idOf?.();
      const w = {
        label,
        cpuMs,
        actionMs,
        inspects: reqs.filter((q) => /\/containers\/[0-9a-f]{12,}\/json/.test(q.path)).length,
        inspectsOfIt: id ? reqs.filter((q) => q.path.includes(`/containers/${id}/json`)).length : 0,
        lists: reqs.filter((q) => /\/containers\/json/.test(q.path)).length,
        runtimeEvents: spy.events.slice(e0).length,
        lastInspectMs: Math.max(0, ...reqs.map((q) => q.t - start)),
      };
      // The 60 s resync: a list, or inspects of containers this window did not touch (it spans windows).
      w.resync = w.lists > 0 || w.inspects > w.inspectsOfIt;
      if (w.resync) excluded.push(w);
      return w;
    };
    for (let k = 0; k < EVENTS; k++) {
      const i = Math.floor(((k + 0.5) * scale) / EVENTS);
      const c = containers[i];
      const w = await window('idle', null, null);
      if (!w.resync) idle.push(w);
      const fresh = containers.length;
      // stop: the route goes; start: it comes back (its certificate is still held);
      // new: a container never seen, create + start (a new domain, its certificate issued).
      for (const [kind, at, action, want] of [
        ['stop', i, () => tracked(() => c.stop()), 404],
        ['start', i, () => tracked(() => c.start()), 200],
        ['new', fresh, () => create(fresh, false), 200],
      ]) {
        const e = await window(kind, () => containers[at].id, action);
        // Checked after the window, so the check's own CPU is not in it.
        const status = (await via(at)).status;
        if (status !== want) {
          late++;
          await until(`c${at}.test answering ${want}`, async () => (await via(at)).status === want, 10_000);
        } else if (!e.resync) events[kind].push(e);
        await sleep(50);
      }
    }
    const idleMs = median(idle.map((w) => w.cpuMs));
    const per = (list) => list.map((w) => w.cpuMs - idleMs);
    const summary = Object.fromEntries(
      Object.entries(events).map(([kind, list]) => [
        kind,
        {
          n: list.length,
          median: median(per(list)),
          mean: mean(per(list)),
          max: Math.max(...per(list)),
          inspects: mean(list.map((w) => w.inspects)),
          inspectsOfIt: mean(list.map((w) => w.inspectsOfIt)),
          runtimeEvents: mean(list.map((w) => w.runtimeEvents)),
          actionMs: median(list.map((w) => w.actionMs)),
          lastInspectMs: Math.max(...list.map((w) => w.lastInspectMs)),
        },
      ]),
    );
    const ticks = cpuTicksMs(proxyd.pid) - ticks0;
    console.log(
      `  ${scale} containers: idle ${f1(idleMs)} ms per ${WINDOW_MS} ms window; stop ${f1(summary.stop.median)}, start ${f1(summary.start.median)}, new ${f1(summary.new.median)} ms CPU per event (median); ` +
        `${excluded.length} window(s) with resync work left out${excluded.length ? ` (${excluded.map((w) => `${w.label}: ${f1(w.cpuMs)} ms CPU, ${w.lists} list, ${w.inspects} inspects`).join('; ')})` : ''}; ` +
        `${late} late; CPU over all windows ${f0(nsTotal)} ms by schedstat, ${ticks} ms by /proc stat ticks (incl. checks)`,
    );
    // The resync's cost: its windows over the idle median (the event's own share, when one ran there, included).
    const resyncMs = excluded.reduce((a, w) => a + w.cpuMs - idleMs, 0);
    const resyncInspects = excluded.reduce((a, w) => a + w.inspects - w.inspectsOfIt, 0);
    return { idleMs, summary, excluded, late, resyncMs, resyncInspects };
  }

  await teardown();
  return { kind, version: version.Version, starts, scales };
}

// --- run and report ------------------------------------------------------------------------------

const results = [];
for (const kind of RUNTIMES) results.push(await session(kind));

let commit = '?';
try {
  commit = execFileSync('git', ['-C', root, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
} catch {}
console.log(
  `\n${new Date().toISOString().slice(0, 16)}Z, commit ${commit}, Node ${process.version}, ${os.cpus().length} cores; ` +
    `host network, ${STARTS} starts polled every ${POLL_MS} ms, ${EVENTS} × (idle, stop, start, new) windows per scale, ${WINDOW_MS} ms windows`,
);

console.log('\nStart → first proxied 200, ms (min / median / p90 / max)\n');
console.log(
  '| runtime | from the start event (timeNano) | from receipt by this script | from receipt by proxyd | from the start call | event → this script | event → proxyd |',
);
console.log(
  '| ------- | ------------------------------- | --------------------------- | ---------------------- | ------------------- | ------------------- | -------------- |',
);
for (const r of results) {
  const q = (key) => {
    const xs = r.starts.map((s) => s[key]);
    return `${f0(Math.min(...xs))} / ${f0(median(xs))} / ${f0(quantile(xs, 0.9))} / ${f0(Math.max(...xs))}`;
  };
  console.log(
    `| ${r.kind} ${r.version} | ${q('fromEvent')} | ${q('fromSeen')} | ${q('fromProxyd')} | ${q('fromCall')} | ${q('eventLate')} | ${q('eventLateProxyd')} |`,
  );
}

console.log('\nproxyd CPU per event, ms (window − median idle window), by containers running\n');
console.log(
  `| runtime | event | containers | n | CPU ms median | mean | max | ×${SCALES[0]} (median) | inspects / event | of that container | runtime events / event | idle ms / window |`,
);
console.log(
  '| ------- | ----- | ---------- | - | ------------- | ---- | --- | ------------ | ---------------- | ----------------- | ---------------------- | ---------------- |',
);
const LABEL = { stop: 'stop → route gone', start: 'start → route back', new: 'new container → new route' };
let worst = 0;
for (const r of results) {
  for (const kind of ['stop', 'start', 'new']) {
    const base = r.scales[0]?.summary[kind].median;
    for (const s of r.scales) {
      const x = s.summary[kind];
      if (s.scale === Math.max(...SCALES)) worst = Math.max(worst, x.median);
      console.log(
        `| ${r.kind} | ${LABEL[kind]} | ${s.scale} | ${x.n} | ${f1(x.median)} | ${f1(x.mean)} | ${f1(x.max)} | ${s === r.scales[0] ? '–' : `${(x.median / base).toFixed(2)}×`} | ${f1(x.inspects)} | ${f1(x.inspectsOfIt)} | ${f1(x.runtimeEvents)} | ${f1(s.idleMs)} |`,
      );
    }
  }
}
console.log(
  '\nThe 60 s resync, when it fell in the windows (CPU over the idle median; list + inspects of every labelled container)\n',
);
if (results.every((r) => r.scales.every((s) => s.excluded.length === 0))) console.log('  none in the windows');
for (const r of results) {
  for (const s of r.scales) {
    if (s.excluded.length > 0) {
      console.log(
        `  ${r.kind}, ${s.scale} containers: ${f0(s.resyncMs)} ms CPU, ${s.resyncInspects} inspects over ${s.excluded.length} window(s)`,
      );
    }
  }
}
console.log(
  `\ngoal: < ${GOAL_MS} ms CPU per event with ${Math.max(...SCALES)} containers: worst median ${f1(worst)} ms: ${worst < GOAL_MS ? 'met' : 'missed'}`,
);
await shutdown(0);
