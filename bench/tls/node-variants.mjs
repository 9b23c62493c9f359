// bench/tls/node-variants.mjs: where a Node server's full-handshake cost
// goes. Minimal servers that each add one layer or change one TLS option,
// measured in alternation with the same client as run.mjs (tls-load, a new
// TLS connection per request), CPU µs per handshake of the server (pinned to
// core 1) as the figure. Used by notes/2026-11-24-handshake-cost.md.
//
//   node bench/tls/node-variants.mjs
//   ROUNDS=3 DURATION=4 ONLY="https respond,caddy respond" node bench/tls/node-variants.mjs
//
// Needs what run.mjs needs (openssl, cc + libgnutls28-dev, caddy, taskset, wrk).
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchSession, cpuSeconds } from '../lib/session.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const DURATION = Number(process.env.DURATION ?? 4);
const PROXY_CORE = process.env.PROXY_CORE ?? '1';
const LOAD_CORE = process.env.LOAD_CORE ?? '0';
const HOST = 'bench.localhost';
const ONLY = process.env.ONLY?.split(',');

// The temp dir, the children and their cleanup however the run ends, free ports: bench/lib/session.mjs.
const session = benchSession('tlsvar');
const { dir, children, shutdown, freePort } = session;

const tlsLoad = path.join(dir, 'tls-load');
execFileSync('cc', ['-O2', '-o', tlsLoad, path.join(here, 'tls-load.c'), '-lgnutls']);
const o = (...args) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
o(
  'req',
  '-x509',
  '-newkey',
  'ec',
  '-pkeyopt',
  'ec_paramgen_curve:P-256',
  '-nodes',
  '-keyout',
  'ca.key',
  '-out',
  'ca.pem',
  '-subj',
  '/CN=bench ECC CA',
  '-days',
  '2',
);
o(
  'req',
  '-newkey',
  'ec',
  '-pkeyopt',
  'ec_paramgen_curve:P-256',
  '-nodes',
  '-keyout',
  'leaf.key',
  '-out',
  'leaf.csr',
  '-subj',
  `/CN=${HOST}`,
);
writeFileSync(path.join(dir, 'leaf.ext'), `subjectAltName=DNS:${HOST}\n`);
o(
  'x509',
  '-req',
  '-in',
  'leaf.csr',
  '-CA',
  'ca.pem',
  '-CAkey',
  'ca.key',
  '-CAcreateserial',
  '-out',
  'leaf.pem',
  '-days',
  '2',
  '-extfile',
  'leaf.ext',
);
writeFileSync(
  path.join(dir, 'chain.pem'),
  readFileSync(path.join(dir, 'leaf.pem'), 'utf8') + readFileSync(path.join(dir, 'ca.pem'), 'utf8'),
);

// The upstream of the proxy variants: one nginx worker on the load core serving a 30-byte file.
writeFileSync(path.join(dir, 'small'), `${'x'.repeat(29)}\n`);
const upPort = await freePort();
writeFileSync(
  path.join(dir, 'upstream.conf'),
  `daemon off;\nworker_processes 1;\npid ${dir}/upstream.pid;\nerror_log ${dir}/upstream.err warn;\nevents { worker_connections 4096; }\nhttp {\n  access_log off;\n  client_body_temp_path ${dir}/b;\n  proxy_temp_path ${dir}/p;\n  fastcgi_temp_path ${dir}/f;\n  uwsgi_temp_path ${dir}/u;\n  scgi_temp_path ${dir}/s;\n  keepalive_requests 1000000;\n  server { listen 127.0.0.1:${upPort}; root ${dir}; location / { default_type text/plain; } }\n}\n`,
);
children.push(
  spawn('taskset', ['-c', LOAD_CORE, 'nginx', '-c', path.join(dir, 'upstream.conf'), '-p', dir], { stdio: 'ignore' }),
);

// One server file; VARIANT picks the layer, TLS_OPTIONS (JSON) adds TLS options.
const server = path.join(dir, 'server.mjs');
writeFileSync(
  server,
  `import http from 'node:http';
import https from 'node:https';
import tls from 'node:tls';
import { readFileSync } from 'node:fs';
const port = Number(process.env.PORT);
const pair = { cert: readFileSync('${dir}/chain.pem'), key: readFileSync('${dir}/leaf.key') };
const extra = JSON.parse(process.env.TLS_OPTIONS || '{}');
const options = { ...pair, ALPNProtocols: ['http/1.1'], ...extra };
if (process.env.SNI === '1') {
  const ctx = tls.createSecureContext({ ...pair, ...extra });
  delete options.cert;
  delete options.key;
  options.SNICallback = (name, cb) => cb(null, ctx);
}
const body = Buffer.from('${'x'.repeat(29)}\\n');
const raw = Buffer.from('HTTP/1.1 200 OK\\r\\ncontent-type: text/plain\\r\\ncontent-length: 30\\r\\nconnection: close\\r\\n\\r\\n' + body);
const agent = new http.Agent({ keepAlive: true, maxFreeSockets: 256 });
const HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'te', 'trailer', 'proxy-connection']);
// The Node floor of run.mjs: the smallest correct keep-alive proxy.
const proxy = (req, res) => {
  const headers = {};
  for (const k in req.headers) if (!HOP.has(k)) headers[k] = req.headers[k];
  headers['x-forwarded-for'] = req.socket.remoteAddress;
  const up = http.request({ host: '127.0.0.1', port: ${upPort}, method: req.method, path: req.url, headers, agent }, (ur) => {
    const out = {};
    for (const k in ur.headers) if (!HOP.has(k)) out[k] = ur.headers[k];
    if (process.env.ONE_WRITE === '1') {
      // The whole (small) response in one res.end(): one write into the TLS socket.
      const chunks = [];
      ur.on('data', (c) => chunks.push(c));
      ur.on('end', () => {
        res.writeHead(ur.statusCode, out);
        res.end(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks));
      });
      return;
    }
    res.writeHead(ur.statusCode, out);
    ur.pipe(res);
  });
  up.on('error', () => { if (!res.headersSent) res.writeHead(502); res.end(); });
  res.on('close', () => { if (!res.writableFinished) up.destroy(); });
  req.pipe(up);
};
const respond = (req, res) => {
  res.writeHead(200, { 'content-type': 'text/plain', 'content-length': body.length });
  res.end(body);
};
const rawHandler = (socket) => {
  socket.on('data', (d) => {
    if (d.includes('\\r\\n\\r\\n')) socket.end(raw);
  });
  socket.on('error', () => {});
};
switch (process.env.VARIANT) {
  case 'tls-raw': tls.createServer(options, rawHandler).listen(port, '127.0.0.1'); break;
  case 'https': https.createServer(options, respond).listen(port, '127.0.0.1'); break;
  case 'https-proxy': https.createServer(options, proxy).listen(port, '127.0.0.1'); break;
  case 'http-proxy': http.createServer(proxy).listen(port, '127.0.0.1'); break;
  case 'net-raw': net.createServer(rawHandler).listen(port, '127.0.0.1'); break;
  case 'http': http.createServer(respond).listen(port, '127.0.0.1'); break;
}
process.on('SIGTERM', () => process.exit(0));
`,
);

const variants = [
  // Plain TCP: what a connection costs Node without TLS (client: wrk, Connection: close).
  { name: 'net raw (no TLS)', env: { VARIANT: 'net-raw' }, plain: true },
  { name: 'http (no TLS)', env: { VARIANT: 'http' }, plain: true },
  { name: 'tls raw', env: { VARIANT: 'tls-raw' } },
  { name: 'https respond', env: { VARIANT: 'https' } },
  { name: 'https + SNICallback', env: { VARIANT: 'https', SNI: '1' } },
  {
    name: 'https AES-128 first',
    env: {
      VARIANT: 'https',
      TLS_OPTIONS: JSON.stringify({
        ciphers: 'TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256',
      }),
    },
  },
  // SSL_OP_NO_TICKET (0x4000): no TLS 1.2 tickets; TLS 1.3 tickets become stateful (still sent).
  { name: 'https SSL_OP_NO_TICKET', env: { VARIANT: 'https', TLS_OPTIONS: JSON.stringify({ secureOptions: 0x4000 }) } },
  {
    name: 'https AES-128 + NO_TICKET',
    env: {
      VARIANT: 'https',
      TLS_OPTIONS: JSON.stringify({
        ciphers: 'TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256',
        secureOptions: 0x4000,
      }),
    },
  },
  { name: 'caddy respond', caddy: true },
  { name: 'http proxy (no TLS)', env: { VARIANT: 'http-proxy' }, plain: true },
  { name: 'https proxy', env: { VARIANT: 'https-proxy' } },
  {
    name: 'https proxy AES-128 + NO_TICKET',
    env: {
      VARIANT: 'https-proxy',
      TLS_OPTIONS: JSON.stringify({
        ciphers: 'TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256',
        secureOptions: 0x4000,
      }),
    },
  },
  { name: 'https proxy one write', env: { VARIANT: 'https-proxy', ONE_WRITE: '1' } },
  { name: 'caddy proxy', caddy: true, proxy: true },
];

const childCpu = () => cpuSeconds(process.pid, true);

const chosen = ONLY ? variants.filter((v) => ONLY.includes(v.name)) : variants;
for (const v of chosen) {
  v.port = await freePort();
  if (v.caddy) {
    const caddyDir = mkdtempSync(path.join(dir, 'caddy-'));
    writeFileSync(
      path.join(caddyDir, 'Caddyfile'),
      `{\n\tadmin off\n\tskip_install_trust\n\thttp_port ${await freePort()}\n\thttps_port ${v.port}\n\tauto_https disable_redirects\n\tstorage file_system ${caddyDir}/data\n}\n\n${HOST} {\n\tbind 127.0.0.1\n\ttls internal\n${v.proxy ? `\treverse_proxy 127.0.0.1:${upPort}` : `\trespond "${'x'.repeat(29)}"`}\n}\n`,
    );
    v.child = spawn(
      'taskset',
      ['-c', PROXY_CORE, 'caddy', 'run', '--config', path.join(caddyDir, 'Caddyfile'), '--adapter', 'caddyfile'],
      {
        env: { ...process.env, GOMAXPROCS: '1', HOME: caddyDir, XDG_DATA_HOME: caddyDir, XDG_CONFIG_HOME: caddyDir },
        stdio: 'ignore',
      },
    );
  } else {
    v.child = spawn('taskset', ['-c', PROXY_CORE, process.execPath, server], {
      env: { ...process.env, ...v.env, PORT: String(v.port) },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
  }
  children.push(v.child);
  v.results = [];
}

/** One client run against a variant, async (a signal stops the run at once); null when it failed. */
async function load(v, seconds) {
  const before = childCpu();
  const args = v.plain
    ? ['wrk', '-t1', '-c32', `-d${seconds}s`, '-H', 'Connection: close', `http://127.0.0.1:${v.port}/small`]
    : [tlsLoad, '127.0.0.1', String(v.port), HOST, '/small', '32', String(seconds)];
  const r = await new Promise((resolve) => {
    const child = spawn('taskset', ['-c', LOAD_CORE, ...args], { stdio: ['ignore', 'pipe', 'ignore'] });
    children.push(child);
    let stdout = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), (seconds + 30) * 1000);
    child.on('close', (status) => {
      clearTimeout(timer);
      children.splice(children.indexOf(child), 1);
      resolve({ status, stdout });
    });
  });
  if (r.status !== 0) return null;
  const client = childCpu() - before;
  if (v.plain) return { rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(r.stdout)?.[1]), client };
  const j = JSON.parse(r.stdout);
  if (j.resumed > 0) throw new Error('resumed sessions');
  return { rps: j.requests / j.seconds, client };
}

// Wait until each answers (Caddy's local CA needs a moment).
for (const v of chosen) {
  const end = Date.now() + 30_000;
  while (Date.now() < end && !((await load(v, 1))?.rps > 0)) await new Promise((r) => setTimeout(r, 300));
}
for (let round = 1; round <= ROUNDS; round++) {
  for (const v of chosen) {
    await load(v, 1);
    const cpu0 = cpuSeconds(v.child.pid);
    const r = await load(v, DURATION);
    const cpu = cpuSeconds(v.child.pid) - cpu0;
    r.cpuUs = (cpu * 1e6) / (r.rps * DURATION);
    r.core = cpu / DURATION;
    v.results.push(r);
    console.log(
      `  round ${round} ${v.name.padEnd(31)} ${r.rps.toFixed(0).padStart(6)}/s  ${r.cpuUs.toFixed(0).padStart(4)} µs/conn  server ${(r.core * 100).toFixed(0)}% client ${((r.client / DURATION) * 100).toFixed(0)}%`,
    );
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
console.log('\nvariant                          conn/s   CPU µs/conn (median)');
for (const v of chosen) {
  console.log(
    `${v.name.padEnd(31)} ${median(v.results.map((r) => r.rps))
      .toFixed(0)
      .padStart(7)}   ${median(v.results.map((r) => r.cpuUs))
      .toFixed(0)
      .padStart(6)}`,
  );
}
await shutdown(0);
