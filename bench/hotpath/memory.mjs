// What an idle Node 24 process costs in PSS, by what it loads and by Node/V8
// flags: a bare process, one with the data plane's modules (net, tls, http,
// https) and a listening server, one that also loads what proxyd's workers
// load today (fastify, acme-client, node:sqlite), and each candidate idle.
// Every process is started with each flag set; PSS (smaps_rollup), RSS and
// thread count are read after IDLE_MS (2000) idle. Prints a markdown table.
// USS (private pages) is what one more such process costs; PSS also
// charges it a share of the pages it shares (here: with this script only).
//
//   node bench/hotpath/memory.mjs
//   FLAGS="--max-semi-space-size=1|--lite-mode" node bench/hotpath/memory.mjs
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const IDLE_MS = Number(process.env.IDLE_MS ?? 2000);
const FLAGS = (
  process.env.FLAGS ??
  '|--max-semi-space-size=1|--max-old-space-size=32|--single-threaded-gc|--v8-pool-size=0|--lite-mode|--jitless|--optimize-for-size'
).split('|');

const keep = 'setInterval(() => {}, 1 << 30);';
const dataPlane = `require('node:net'); require('node:tls'); const http = require('node:http'); require('node:https');
http.createServer((q, s) => s.end()).listen(0, '127.0.0.1'); ${keep}`;
// Resolved from the packages that depend on them, as the workers do.
const load = (pkg, name) =>
  `require(require('node:module').createRequire(${JSON.stringify(path.join(root, 'packages', pkg, 'package.json'))}).resolve(${JSON.stringify(name)}));`;
const workerLike = `${dataPlane} ${load('admin-api', 'fastify')} ${load('certificates', 'acme-client')}
const { DatabaseSync } = require('node:sqlite'); new DatabaseSync(':memory:').exec('create table t (a)');`;

const SUBJECTS = [
  ['bare node', ['-e', keep]],
  ['net+tls+http, listening', ['-e', dataPlane]],
  ['+ fastify, acme-client, node:sqlite', ['-e', workerLike]],
  ...['floor', 'undici', 'raw', 'raw-undici'].map((c) => [
    `candidate ${c}`,
    [path.join(here, 'candidates', `${c}.mjs`)],
  ]),
];

function read(pid) {
  const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  const kb = (field) => Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? 0);
  const pss = kb('Pss') / 1024;
  const uss = (kb('Private_Clean') + kb('Private_Dirty')) / 1024;
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const rss = Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1]) / 1024;
  const threads = Number(/^Threads:\s+(\d+)/m.exec(status)?.[1]);
  return { pss, uss, rss, threads };
}

async function measure(args, flags) {
  const child = spawn(process.execPath, [...flags.split(' ').filter(Boolean), ...args], {
    env: { ...process.env, UPSTREAM_PORT: '9', PORT: '0' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  child.stderr.on('data', (d) => {
    err += d;
  });
  await new Promise((r) => setTimeout(r, IDLE_MS));
  let r;
  try {
    r = read(child.pid);
  } catch {
    r = { error: /\w*Error: .*/.exec(err)?.[0] ?? 'exited' };
  }
  if (child.exitCode === null && child.signalCode === null) {
    const gone = new Promise((res) => child.once('exit', res));
    child.kill('SIGKILL');
    await gone;
  }
  return r;
}

console.log(`Node ${process.version}, after ${IDLE_MS} ms idle: USS / PSS MB (threads)\n`);
console.log(`| process | ${FLAGS.map((f) => f || 'defaults').join(' | ')} |`);
console.log(`| --- | ${FLAGS.map(() => '---').join(' | ')} |`);
for (const [label, args] of SUBJECTS) {
  const cells = [];
  for (const f of FLAGS) {
    const r = await measure(args, f);
    cells.push(r.error ? `– (${r.error.slice(0, 60)})` : `${r.uss.toFixed(1)} / ${r.pss.toFixed(1)} (${r.threads})`);
  }
  console.log(`| ${label} | ${cells.join(' | ')} |`);
}
