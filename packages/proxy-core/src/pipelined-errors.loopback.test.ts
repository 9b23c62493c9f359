import { readFileSync } from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';
import { describe, expect, it } from 'vitest';
import { onCleanup, proxy, selfSigned, site, upstream, wait } from './loopback.test-helpers.js';
import { MemoryCertificateStore } from './tls/certificate-store.js';

// Issue 28: a malformed request later on a pipelined connection is answered
// 400 after the responses already owed on that connection, in order, and
// the connection then closes (as nginx does); before, the 400 went out at
// once and the connection was cut, so request 1 reached its upstream but its
// client never saw the answer.

const GOOD = 'GET /first HTTP/1.1\r\nhost: a.test\r\n\r\n';
// A space inside a header name: llhttp refuses the request (HPE_INVALID_HEADER_TOKEN).
const MALFORMED = 'GET /second HTTP/1.1\r\nhost: a.test\r\nbad header: x\r\n\r\n';

/** Writes `bytes` in one write on a connection and resolves with everything read until the server closes it. */
function exchange(socket: net.Socket, ready: string, bytes: string): Promise<{ data: string; closed: boolean }> {
  onCleanup(() => {
    socket.destroy();
  });
  return new Promise((resolve) => {
    let data = '';
    socket.setEncoding('latin1');
    socket.on(ready, () => socket.write(bytes));
    socket.on('data', (d: string) => {
      data += d;
    });
    socket.on('error', () => {});
    socket.on('close', () => resolve({ data, closed: true }));
    setTimeout(() => resolve({ data, closed: false }), 8000).unref();
  });
}

/** The response heads and bodies in `data`, in order (Content-Length framed). */
function responses(data: string): { status: number; head: string; body: string }[] {
  const out: { status: number; head: string; body: string }[] = [];
  let rest = data;
  while (rest.length > 0) {
    const end = rest.indexOf('\r\n\r\n');
    if (end < 0) throw new Error(`incomplete head: ${JSON.stringify(rest)}`);
    const head = rest.slice(0, end);
    const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 'NaN');
    if (Number.isNaN(length)) throw new Error(`no content-length: ${JSON.stringify(head)}`);
    out.push({ status: Number(head.slice(9, 12)), head, body: rest.slice(end + 4, end + 4 + length) });
    rest = rest.slice(end + 4 + length);
  }
  return out;
}

/** An upstream that answers `first` after `delayMs`, with a Content-Length. */
function delayed(delayMs: number) {
  return upstream((req, res) => {
    setTimeout(() => {
      const body = `answer to ${req.url}`;
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    }, delayMs);
  });
}

describe('issue 28: a malformed request pipelined after a good one', () => {
  for (const delayMs of [50, 1500]) {
    it(`answers the good request (upstream ${delayMs} ms), then 400, then closes`, async () => {
      const up = await delayed(delayMs);
      const { port } = await proxy([site('a.test', [up.port])]);
      const socket = net.connect(port, '127.0.0.1');
      const { data, closed } = await exchange(socket, 'connect', GOOD + MALFORMED);
      expect(closed).toBe(true);
      const [first, second, ...more] = responses(data);
      expect(first?.status).toBe(200);
      expect(first?.body).toBe('answer to /first');
      expect(second?.status).toBe(400);
      expect(second?.head).toMatch(/\r\nconnection: close/i);
      expect(more).toEqual([]);
      // The malformed request never reached the upstream.
      expect(up.urls).toEqual(['/first']);
    });
  }

  it('answers in order when several good requests precede the malformed one', async () => {
    const up = await upstream((req, res) => {
      // The first request is the slowest: responses must still go out in request order.
      const delay = req.url === '/1' ? 300 : req.url === '/2' ? 100 : 0;
      setTimeout(() => res.end(`answer to ${req.url}`), delay);
    });
    const { port } = await proxy([site('a.test', [up.port])]);
    const socket = net.connect(port, '127.0.0.1');
    const requests = ['/1', '/2', '/3'].map((p) => `GET ${p} HTTP/1.1\r\nhost: a.test\r\n\r\n`).join('');
    const { data, closed } = await exchange(socket, 'connect', requests + MALFORMED);
    expect(closed).toBe(true);
    const answers = responses(data);
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 400]);
    expect(answers.slice(0, 3).map((r) => r.body)).toEqual(['answer to /1', 'answer to /2', 'answer to /3']);
  });

  it('reads no request after the malformed one', async () => {
    const up = await delayed(200);
    const { port } = await proxy([site('a.test', [up.port])]);
    const socket = net.connect(port, '127.0.0.1');
    const after = 'GET /third HTTP/1.1\r\nhost: a.test\r\n\r\n';
    const pending = exchange(socket, 'connect', GOOD + MALFORMED + after);
    // More requests while the first is still owed: none is read.
    await wait(50);
    socket.write(after);
    const { data, closed } = await pending;
    expect(closed).toBe(true);
    expect(responses(data).map((r) => r.status)).toEqual([200, 400]);
    expect(up.urls).toEqual(['/first']);
  });

  it('answers at once a malformed body of the request being handed over (no earlier answer is owed)', async () => {
    const up = await delayed(50);
    const { port } = await proxy([site('a.test', [up.port])]);
    const socket = net.connect(port, '127.0.0.1');
    const bad = 'POST /upload HTTP/1.1\r\nhost: a.test\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\nzz\r\n';
    const { data, closed } = await exchange(socket, 'connect', bad);
    expect(closed).toBe(true);
    expect(responses(data).map((r) => r.status)).toEqual([400]);
    expect(up.urls).toEqual([]);
  });

  it('stops waiting for an owed response after requestTimeoutMs and closes', async () => {
    // An upstream that never answers: the connection is not held past the request timeout.
    const up = await upstream(() => {});
    const { port } = await proxy([site('a.test', [up.port])], {
      limits: { headersTimeoutMs: 300, requestTimeoutMs: 400, checkIntervalMs: 25 },
    });
    const socket = net.connect(port, '127.0.0.1');
    const started = performance.now();
    const { closed } = await exchange(socket, 'connect', GOOD + MALFORMED);
    expect(closed).toBe(true);
    expect(performance.now() - started).toBeLessThan(3000);
  });

  it('does the same over TLS (HTTP/1.1 on the HTTPS listener)', async () => {
    const up = await delayed(300);
    const store = new MemoryCertificateStore();
    const files = selfSigned(['a.test']);
    store.set('a.test', { cert: readFileSync(files.cert), key: readFileSync(files.key) });
    const { server } = await proxy([site('a.test', [up.port])], { certificates: store });
    const { port } = await server.listenHttps(0);
    const socket = tls.connect({
      port,
      host: '127.0.0.1',
      servername: 'a.test',
      ALPNProtocols: ['http/1.1'],
      rejectUnauthorized: false,
    });
    const { data, closed } = await exchange(socket, 'secureConnect', GOOD + MALFORMED);
    expect(closed).toBe(true);
    const [first, second, ...more] = responses(data);
    expect(first?.status).toBe(200);
    expect(first?.body).toBe('answer to /first');
    expect(second?.status).toBe(400);
    expect(more).toEqual([]);
    expect(up.urls).toEqual(['/first']);
  });
});
