// bench/h2/node-floor.mjs: what Node's own HTTP/1.1 and HTTP/2 stacks cost
// per request, with no proxying, to tell how much of proxyd's h2-vs-h1 gap
// (run.mjs) is Node's. Minimal servers answering every request with a
// 30-byte body (content-type + content-length), each a child process pinned
// to core 1, measured in alternation by h2load pinned to core 0. The figure
// is the server's CPU µs per request (utime+stime from /proc/<pid>/stat over
// the measured seconds). Used by README.md, "Where HTTP/2's cost goes".
//
//   node bench/h2/node-floor.mjs                 (about 2 minutes)
//   ROUNDS=5 DURATION=6 node bench/h2/node-floor.mjs
//   ONLY="https h1,compat h2,stream h2" node bench/h2/node-floor.mjs
//
// Variants (each its own server process):
// - `https h1`: https.createServer, request handler; h2load --h1 -c50 -m1.
// - `compat h1`: http2.createSecureServer({ allowHTTP1: true }) with a
//   request handler (proxyd's listener), HTTP/1.1 clients; --h1 -c50 -m1.
// - `compat h2`: the same server, h2 clients, so the compat API
//   (Http2ServerRequest/Response); h2load -c50 -m10.
// - `stream h2`: the same server with a 'stream' handler instead
//   (stream.respond() + stream.end(), no compat layer); -c50 -m10.
// - `compat h2-m1`: compat h2 at h1's concurrency; -c50 -m1.
// Each h2load run: 1 s warm-up (--warm-up-time, not counted), then DURATION
// seconds measured. Reports medians over ROUNDS. A failed, errored,
// timed-out or non-2xx request, or a protocol other than the one asked for,
// marks the row and makes the run exit 1 (after the table).
//
// Needs openssl, h2load, taskset (apt-get install openssl nghttp2-client util-linux).
import { execFileSync, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import http2 from 'node:http2';
import https from 'node:https';
import path from 'node:path';
import { benchSession, cpuSeconds, median } from '../lib/session.mjs';

const ROUNDS = Number(process.env.ROUNDS ?? 3);
const DURATION = Number(process.env.DURATION ?? 4);
const WARMUP = 1; // seconds of h2load's --warm-up-time before each measure
const CONNECTIONS = Number(process.env.CONNECTIONS ?? 50);
const STREAMS = Number(process.env.STREAMS ?? 10);
const SERVER_CORE = process.env.SERVER_CORE ?? '1';
const LOAD_CORE = process.env.LOAD_CORE ?? '0';
const HOST = 'bench.localhost';
const ONLY = process.env.ONLY?.split(',');
const BODY = `${'x'.repeat(29)}\n`;

/** server: the server file's VARIANT; h1: h2load --h1; streams: -m; alpn: the protocol h2load must report. */
const variants = [
  { name: 'https h1', server: 'https', h1: true, streams: 1, alpn: 'http/1.1' },
  { name: 'compat h1', server: 'compat', h1: true, streams: 1, alpn: 'http/1.1' },
  { name: 'compat h2', server: 'compat', h1: false, streams: STREAMS, alpn: 'h2' },
  { name: 'stream h2', server: 'stream', h1: false, streams: STREAMS, alpn: 'h2' },
  { name: 'compat h2-m1', server: 'compat', h1: false, streams: 1, alpn: 'h2' },
];
const chosen = ONLY ? variants.filter((v) => ONLY.includes(v.name)) : variants;
if (chosen.length === 0) {
  console.error(`ONLY matches no variant; have: ${variants.map((v) => v.name).join(', ')}`);
  process.exit(2);
}

for (const [bin, pkg] of [
  ['openssl', 'openssl'],
  ['h2load', 'nghttp2-client'],
  ['taskset', 'util-linux'],
]) {
  try {
    execFileSync('sh', ['-c', `command -v ${bin}`], { stdio: 'ignore' });
  } catch {
    console.error(`bench/h2/node-floor.mjs needs ${bin} (apt-get install ${pkg})`);
    process.exit(2);
  }
}

const session = benchSession('h2floor');
const { dir, children, shutdown, freePort } = session;

// A self-signed ECDSA P-256 certificate for HOST (h2load does not verify it).
execFileSync(
  'openssl',
  [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    'key.pem',
    '-out',
    'cert.pem',
    '-subj',
    `/CN=${HOST}`,
    '-addext',
    `subjectAltName=DNS:${HOST}`,
    '-days',
    '2',
  ],
  { cwd: dir, stdio: 'pipe' },
);

// One server file; VARIANT picks the server. Each answers every request
// with 200, content-type and content-length, and the 30-byte body.
const server = path.join(dir, 'server.mjs');
writeFileSync(
  server,
  `import { readFileSync } from 'node:fs';
import http2 from 'node:http2';
import https from 'node:https';
const port = Number(process.env.PORT);
const options = { cert: readFileSync('${dir}/cert.pem'), key: readFileSync('${dir}/key.pem') };
const body = Buffer.from(${JSON.stringify(BODY)});
const respond = (req, res) => {
  res.writeHead(200, { 'content-type': 'text/plain', 'content-length': body.length });
  res.end(body);
};
let server;
switch (process.env.VARIANT) {
  case 'https':
    server = https.createServer({ ...options, ALPNProtocols: ['http/1.1'] }, respond);
    break;
  case 'compat':
    // As proxyd's listener: h2 and http/1.1 by ALPN, one request handler for both.
    server = http2.createSecureServer({ ...options, allowHTTP1: true }, respond);
    break;
  case 'stream':
    // No request handler: h2 streams skip the compat layer (http/1.1 clients would get no answer).
    server = http2.createSecureServer({ ...options, allowHTTP1: true });
    server.on('stream', (stream) => {
      stream.on('error', () => {});
      stream.respond({ ':status': 200, 'content-type': 'text/plain', 'content-length': body.length });
      stream.end(body);
    });
    break;
}
server.on('sessionError', () => {});
server.listen(port, '127.0.0.1');
process.on('SIGTERM', () => process.exit(0));
`,
);

/**
 * One GET over the variant's protocol (SNI and authority HOST, to
 * 127.0.0.1); resolves with { alpn, status, type, length, bytes }, or null
 * on error or after 2 s.
 */
function get(v) {
  return new Promise((resolve) => {
    const timer = setTimeout(() => done(null), 2000);
    let client;
    const done = (r) => {
      clearTimeout(timer);
      client?.destroy();
      resolve(r);
    };
    const tlsOptions = { host: '127.0.0.1', port: v.port, servername: HOST, rejectUnauthorized: false };
    const collect = (alpn, status, headers, stream) => {
      let bytes = 0;
      stream.on('data', (d) => {
        bytes += d.length;
      });
      stream.on('end', () =>
        done({ alpn, status, type: headers['content-type'], length: headers['content-length'], bytes }),
      );
      stream.on('error', () => done(null));
    };
    if (v.h1) {
      const req = https.get({
        ...tlsOptions,
        path: '/',
        headers: { host: HOST },
        agent: false,
        ALPNProtocols: ['http/1.1'],
      });
      req.on('response', (res) => collect(res.socket.alpnProtocol, res.statusCode, res.headers, res));
      req.on('error', () => done(null));
      client = req;
    } else {
      client = http2.connect(`https://127.0.0.1:${v.port}`, { ...tlsOptions, ALPNProtocols: ['h2'] });
      client.on('error', () => done(null));
      const req = client.request({ ':path': '/', ':authority': HOST });
      req.on('response', (headers) => collect(client.alpnProtocol, headers[':status'], headers, req));
      req.on('error', () => done(null));
      req.end();
    }
  });
}

/**
 * One h2load run against a variant, pinned to LOAD_CORE: WARMUP s not
 * counted, then DURATION s measured. The server's CPU is read at the end of
 * the warm-up and at the end of the measure (timers from the spawn, as in
 * run.mjs). Async, so a signal stops the run at once; an h2load past its
 * time is killed.
 */
function h2load(v) {
  const args = [
    '-c',
    LOAD_CORE,
    'h2load',
    ...(v.h1 ? ['--h1'] : []),
    '-c',
    String(CONNECTIONS),
    '-m',
    String(v.streams),
    '-D',
    String(DURATION),
    `--warm-up-time=${WARMUP}`,
    `--connect-to=127.0.0.1:${v.port}`,
    `https://${HOST}:${v.port}/`,
  ];
  return new Promise((resolve, reject) => {
    const clientBefore = cpuSeconds(process.pid, true);
    const child = spawn('taskset', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    child.stderr.on('data', (d) => {
      out += d;
    });
    let cpu0 = Number.NaN;
    let cpu1 = Number.NaN;
    const t0 = setTimeout(() => {
      cpu0 = cpuSeconds(v.child.pid);
    }, WARMUP * 1000);
    const t1 = setTimeout(
      () => {
        cpu1 = cpuSeconds(v.child.pid);
      },
      (WARMUP + DURATION) * 1000,
    );
    const kill = setTimeout(() => child.kill('SIGKILL'), (WARMUP + DURATION + 30) * 1000);
    child.on('close', (code, signal) => {
      for (const t of [t0, t1, kill]) clearTimeout(t);
      if (Number.isNaN(cpu1)) cpu1 = cpuSeconds(v.child.pid);
      children.splice(children.indexOf(child), 1);
      if (session.stopping) return; // shutting down: the run is over
      if (code !== 0) {
        reject(new Error(`h2load against ${v.name} failed (${code ?? signal}): ${out}`));
        return;
      }
      try {
        resolve(parse(out, v, cpu1 - cpu0, cpuSeconds(process.pid, true) - clientBefore));
      } catch (e) {
        reject(new Error(`${v.name}: ${e.message}\n${out}`));
      }
    });
  });
}

/** h2load's summary → one measure; `problems` lists what makes the row invalid (see run.mjs's parse). */
function parse(out, v, serverCpu, clientCpu) {
  const num = (re) => {
    const m = re.exec(out);
    if (!m) throw new Error(`no ${re} in h2load's output`);
    return Number(m[1]);
  };
  const rps = num(/finished in [\d.]+\w*, ([\d.]+) req\/s/);
  const done = num(/requests: \d+ total, \d+ started, (\d+) done/);
  const succeeded = num(/(\d+) succeeded/);
  const failed = num(/(\d+) failed/);
  const errored = num(/(\d+) errored/);
  const timeout = num(/(\d+) timeout/);
  const non2xx = num(/status codes: \d+ 2xx, (\d+) 3xx/) + num(/(\d+) 4xx/) + num(/(\d+) 5xx/);
  const alpn = /Application protocol: (\S+)/.exec(out)?.[1] ?? '?';
  const problems = [];
  if (failed + errored + timeout > 0) problems.push(`${failed} failed, ${errored} errored, ${timeout} timed out`);
  if (succeeded !== done) problems.push(`${done - succeeded} of ${done} done did not succeed`);
  if (non2xx > 0) problems.push(`${non2xx} non-2xx responses`);
  if (alpn !== v.alpn) problems.push(`protocol ${alpn}, not ${v.alpn}`);
  if (done === 0) problems.push('no request done');
  return {
    rps,
    cpuUs: (serverCpu * 1e6) / (rps * DURATION),
    serverCore: serverCpu / DURATION,
    clientCore: clientCpu / (WARMUP + DURATION),
    problems,
  };
}

// --- the servers, each pinned to SERVER_CORE ------------------------------------
for (const v of chosen) {
  v.port = await freePort();
  v.child = spawn('taskset', ['-c', SERVER_CORE, process.execPath, server], {
    env: { ...process.env, VARIANT: v.server, PORT: String(v.port) },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  children.push(v.child);
  v.results = [];
}
// Wait until each answers, and check the answer: 200, the headers, 30 bytes, the protocol.
for (const v of chosen) {
  const end = Date.now() + 30_000;
  let r = await get(v);
  while (!r && Date.now() < end && v.child.exitCode === null) {
    await new Promise((res) => setTimeout(res, 200));
    r = await get(v);
  }
  if (!r) throw new Error(`${v.name}: no answer within 30 s`);
  if (
    r.status !== 200 ||
    r.type !== 'text/plain' ||
    Number(r.length) !== BODY.length ||
    r.bytes !== BODY.length ||
    r.alpn !== v.alpn
  )
    throw new Error(`${v.name}: unexpected answer ${JSON.stringify(r)}`);
}

// --- measure, in alternation ------------------------------------------------------
const bad = new Set();
console.log(
  `node ${process.version}; servers on core ${SERVER_CORE}, h2load on core ${LOAD_CORE}; ${CONNECTIONS} connections; ${WARMUP} s warm-up + ${DURATION} s per measure, ${ROUNDS} rounds, ${BODY.length}-byte body`,
);
for (let round = 1; round <= ROUNDS; round++) {
  for (const v of chosen) {
    if (v.child.exitCode !== null) throw new Error(`${v.name}'s server is gone`);
    const r = await h2load(v);
    v.results.push(r);
    if (r.problems.length > 0) {
      bad.add(v.name);
      console.error(`  !!! ${v.name}, round ${round}: ${r.problems.join('; ')} !!!`);
    }
    console.log(
      `  round ${round} ${v.name.padEnd(13)} ${`${v.h1 ? '--h1 ' : ''}-m${v.streams}`.padEnd(9)} ${r.rps.toFixed(0).padStart(6)}/s  ${r.cpuUs.toFixed(1).padStart(5)} µs/req  server ${(r.serverCore * 100).toFixed(0)}% client ${(r.clientCore * 100).toFixed(0)}% of a core`,
    );
  }
}

// Medians over the rounds: one disturbed round does not move them.
for (const v of chosen) {
  v.rps = median(v.results.map((r) => r.rps));
  v.cpuUs = median(v.results.map((r) => r.cpuUs));
  v.serverCore = median(v.results.map((r) => r.serverCore));
}
const base = chosen.find((v) => v.name === 'https h1');
console.log(`\nmedians of ${ROUNDS} rounds`);
console.log('variant        h2load            req/s   CPU µs/req   ×https h1 CPU   ×https h1 req/s   server core');
for (const v of chosen) {
  const h2loadArgs = `${v.h1 ? '--h1 ' : ''}-c${CONNECTIONS} -m${v.streams}`;
  console.log(
    `${v.name.padEnd(13)}  ${h2loadArgs.padEnd(13)}  ${v.rps.toFixed(0).padStart(7)}   ${v.cpuUs.toFixed(1).padStart(10)}   ${(base ? (v.cpuUs / base.cpuUs).toFixed(2) : '-').padStart(13)}   ${(base ? (v.rps / base.rps).toFixed(2) : '-').padStart(15)}   ${`${(v.serverCore * 100).toFixed(0)}%`.padStart(11)}${bad.has(v.name) ? ' !!! FAILED REQUESTS' : ''}`,
  );
}
if (bad.size > 0) {
  console.error(`\n!!! failed requests or wrong protocol in: ${[...bad].join(', ')}: these rows do not count !!!`);
  await shutdown(1);
}
await shutdown(0);
