// What it would cost to see every HTTP/2 frame in JS before nghttp2 does
// (issue 28: the h2spec cases nghttp2 ignores are only answerable so).
// Two Node HTTP/2 servers on one core answer 30 bytes: one hands Node the
// TLS socket (nghttp2 reads it natively), the other puts a Duplex between
// them that walks every frame header. CPU µs per request, h2load as client.
//
//   node bench/h2/frame-guard.mjs          # ROUNDS=3 REQUESTS=20000
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http2 from 'node:http2';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Duplex } from 'node:stream';
import tls from 'node:tls';

const ROUNDS = Number(process.env.ROUNDS ?? 3);
const REQUESTS = Number(process.env.REQUESTS ?? 20000);

/** Walks frame headers (9 bytes, then the payload skipped) as a guard would, and passes the bytes on. */
class FrameWalker extends Duplex {
  #socket;
  #preface = 24;
  #skip = 0;
  #head = Buffer.alloc(0);
  frames = 0;
  constructor(socket) {
    super();
    this.#socket = socket;
    socket.on('data', (chunk) => {
      this.#walk(chunk);
      if (!this.push(chunk)) socket.pause();
    });
    socket.on('end', () => this.push(null));
    socket.on('close', () => this.destroy());
    socket.on('error', (err) => this.destroy(err));
  }
  #walk(chunk) {
    let i = Math.min(this.#preface, chunk.length);
    this.#preface -= i;
    while (i < chunk.length) {
      if (this.#skip > 0) {
        const n = Math.min(this.#skip, chunk.length - i);
        this.#skip -= n;
        i += n;
        continue;
      }
      const n = Math.min(9 - this.#head.length, chunk.length - i);
      this.#head = Buffer.concat([this.#head, chunk.subarray(i, i + n)]);
      i += n;
      if (this.#head.length === 9) {
        this.frames++;
        this.#skip = this.#head.readUIntBE(0, 3);
        this.#head = Buffer.alloc(0);
      }
    }
  }
  _read() {
    this.#socket.resume();
  }
  _write(chunk, encoding, callback) {
    this.#socket.write(chunk, encoding, callback);
  }
  _final(callback) {
    this.#socket.end();
    callback();
  }
}

if (process.argv[2] === 'serve') {
  const [, , , port, mode, dir] = process.argv;
  const h2 = http2.createServer();
  h2.on('stream', (stream) => {
    stream.respond({ ':status': 200, 'content-type': 'text/plain' });
    stream.end('x'.repeat(30));
  });
  const options = {
    key: readFileSync(path.join(dir, 'k.pem')),
    cert: readFileSync(path.join(dir, 'c.pem')),
    ALPNProtocols: ['h2'],
  };
  tls
    .createServer(options, (socket) => h2.emit('connection', mode === 'walk' ? new FrameWalker(socket) : socket))
    .listen(Number(port), '127.0.0.1', () => process.send?.('ready'));
} else {
  const dir = mkdtempSync(path.join(tmpdir(), 'frame-guard-'));
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
      path.join(dir, 'k.pem'),
      '-out',
      path.join(dir, 'c.pem'),
      '-days',
      '1',
      '-subj',
      '/CN=localhost',
    ],
    { stdio: 'ignore' },
  );
  const start = (port, mode) =>
    new Promise((resolve) => {
      const child = spawn(
        'taskset',
        ['-c', '0', process.execPath, import.meta.filename, 'serve', String(port), mode, dir],
        { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] },
      );
      child.once('message', () => resolve(child));
    });
  const cpuMs = (pid) => {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(f[11]) + Number(f[12])) * 10;
  };
  const targets = [
    { name: 'nghttp2 reads the TLS socket', port: 19461, child: await start(19461, 'native'), us: [] },
    { name: 'every frame header walked in JS', port: 19462, child: await start(19462, 'walk'), us: [] },
  ];
  for (let round = 0; round < ROUNDS; round++) {
    for (const t of targets) {
      const before = cpuMs(t.child.pid);
      execFileSync(
        'taskset',
        ['-c', '1', 'h2load', '-n', String(REQUESTS), '-c', '10', '-m', '10', `https://127.0.0.1:${t.port}/`],
        { stdio: 'ignore' },
      );
      t.us.push(((cpuMs(t.child.pid) - before) * 1000) / REQUESTS);
    }
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  for (const t of targets)
    console.log(
      `${t.name.padEnd(34)} ${median(t.us).toFixed(1)} µs/req (rounds ${t.us.map((u) => u.toFixed(1)).join(' ')})`,
    );
  console.log(`ratio ${(median(targets[1].us) / median(targets[0].us)).toFixed(2)}×`);
  for (const t of targets) t.child.kill();
  rmSync(dir, { recursive: true, force: true });
}
