// Checks that each candidate is a correct proxy for what the bench relies on,
// against a node:http upstream that echoes what it got: Host and an appended
// X-Forwarded-For arrive, content-length and chunked bodies keep their
// framing both ways, HEAD has no body, two pipelined requests get two
// answers in order, and CL+TE is refused. Prints one line per candidate.
//
//   node bench/hotpath/check.mjs [candidate…]
import { spawn } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const names = process.argv.slice(2).length ? process.argv.slice(2) : ['floor', 'undici', 'raw', 'raw-undici'];

const upstream = http.createServer((req, res) => {
  const parts = [];
  req.on('data', (d) => parts.push(d));
  req.on('end', () => {
    const body = Buffer.concat(parts);
    const echo = `${req.method} ${req.url} host=${req.headers.host} xff=${req.headers['x-forwarded-for']} body=${body}`;
    if (req.url === '/chunked') {
      res.writeHead(200, { 'content-type': 'text/plain' }); // no length: chunked
      res.write(`${echo}|`);
      setTimeout(() => res.end('tail'), 5);
    } else if (req.url === '/big') {
      res.end(Buffer.alloc(300_000, 'z'));
    } else res.end(echo);
  });
});
await new Promise((r) => upstream.listen(0, '127.0.0.1', r));

/** Sends raw bytes, resolves with everything received until the proxy goes quiet for 300 ms or closes. */
function raw(port, text) {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1', () => s.write(text));
    let got = '';
    let timer;
    const done = () => {
      s.destroy();
      resolve(got);
    };
    s.on('data', (d) => {
      got += d.toString('latin1');
      clearTimeout(timer);
      timer = setTimeout(done, 300);
    });
    s.on('close', done);
    timer = setTimeout(done, 2000);
  });
}

const H = 'Host: check.test\r\nX-Forwarded-For: 203.0.113.9\r\n';
const cases = [
  [
    'GET: Host and X-Forwarded-For',
    `GET /a HTTP/1.1\r\n${H}\r\n`,
    (r) => /host=check\.test xff=203\.0\.113\.9, 127\.0\.0\.1/.test(r),
  ],
  [
    '100+ KB body, content-length',
    `GET /big HTTP/1.1\r\n${H}\r\n`,
    (r) => /content-length: 300000/i.test(r) && r.endsWith('z'.repeat(10)),
  ],
  [
    'chunked response',
    `GET /chunked HTTP/1.1\r\n${H}\r\n`,
    (r) => /transfer-encoding: chunked/i.test(r) && /\r\n0\r\n\r\n$/.test(r) && r.includes('tail'),
  ],
  ['HEAD: no body', `HEAD /a HTTP/1.1\r\n${H}\r\n`, (r) => /^HTTP\/1\.1 200/.test(r) && r.endsWith('\r\n\r\n')],
  [
    'POST content-length body',
    `POST /p HTTP/1.1\r\n${H}Content-Length: 5\r\n\r\nhello`,
    (r) => r.includes('body=hello'),
  ],
  [
    'POST chunked body',
    `POST /p HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n`,
    (r) => r.includes('body=abcde'),
  ],
  [
    'pipelined: two answers in order',
    `GET /one HTTP/1.1\r\n${H}\r\nGET /two HTTP/1.1\r\n${H}\r\n`,
    (r) => /GET \/one[\s\S]*GET \/two/.test(r),
  ],
  [
    'CL + TE refused',
    `POST /p HTTP/1.1\r\n${H}Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
    (r) => /^HTTP\/1\.1 (400|501)/.test(r),
  ],
];

let failed = 0;
for (const name of names) {
  const port = 20000 + Math.floor(Math.random() * 20000);
  const child = spawn(process.execPath, [path.join(here, 'candidates', `${name}.mjs`)], {
    env: { ...process.env, UPSTREAM_PORT: String(upstream.address().port), PORT: String(port) },
    stdio: 'inherit',
  });
  await new Promise((r) => setTimeout(r, 600));
  const out = [];
  for (const [label, text, ok] of cases) {
    const r = await raw(port, text);
    if (ok(r)) out.push(`ok ${label}`);
    else if (name === 'raw-undici' && label.startsWith('POST') && r.startsWith('HTTP/1.1 501'))
      out.push(`501 ${label} (not streamed in this candidate)`);
    else {
      failed++;
      out.push(`FAIL ${label}: ${JSON.stringify(r.slice(0, 300))}`);
    }
  }
  child.kill('SIGTERM');
  console.log(`${name}:\n  ${out.join('\n  ')}`);
}
upstream.close();
console.log(`${failed === 0 ? 'all passed' : `${failed} failed`}`);
process.exit(failed ? 1 : 0);
