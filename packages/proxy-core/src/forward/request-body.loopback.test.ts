import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';
import type { ReverseProxyHandler } from '@proxyd/model';
import { describe, expect, it } from 'vitest';
import { onCleanup, proxy, selfSigned, site, siteProxy, until, upstream, wait } from '../loopback.test-helpers.js';
import { MemoryCertificateStore } from '../tls/certificate-store.js';
import { REQUEST_BUFFER_BYTES, requestBytesBuffered } from './exchange.js';

// Issue 20, item 3: a client that has not sent its body holds no upstream
// connection. Bodies up to REQUEST_BUFFER_BYTES are read whole before the
// upstream request opens; bigger ones stream from their first 64 KiB on.

/** An upstream that answers with the size and SHA-256 of the body it read. */
function digestUpstream() {
  return upstream((req, res) => {
    const hash = createHash('sha256');
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      hash.update(c);
    });
    req.on('end', () => res.end(`${size} ${hash.digest('hex')}`));
  });
}

function digest(body: Buffer): string {
  return `${body.length} ${createHash('sha256').update(body).digest('hex')}`;
}

/** A POST whose body the test writes: the request, and its answer's body. */
function post(port: number, headers: http.OutgoingHttpHeaders) {
  const req = http.request({
    host: '127.0.0.1',
    port,
    method: 'POST',
    path: '/',
    headers: { host: 'a.test', ...headers },
  });
  const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        body += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
  });
  onCleanup(() => {
    req.destroy();
  });
  return { req, answer };
}

describe('issue 20: request bodies are read before the upstream request opens', () => {
  it('opens no upstream connection while a small body arrives, then sends it whole', async () => {
    const up = await digestUpstream();
    const { server, port } = await proxy([site('a.test', [up.port])]);
    const body = Buffer.alloc(3000, 'b');
    const { req, answer } = post(port, { 'content-length': body.length });
    for (let i = 0; i < 2; i++) {
      req.write(body.subarray(i * 1000, (i + 1) * 1000));
      await wait(50);
      expect(up.seen).toHaveLength(0);
      expect(up.connections.size).toBe(0);
      expect(server.forwarder.upstreamSocketCount()).toBe(0);
    }
    req.end(body.subarray(2000));
    expect(await answer).toEqual({ status: 200, body: digest(body) });
    expect(up.seen[0]?.headers['content-length']).toBe('3000');
    await until(() => requestBytesBuffered() === 0);
  });

  it('sends a small chunked body as chunked, whole', async () => {
    const up = await digestUpstream();
    const { port } = await proxy([site('a.test', [up.port])]);
    const { req, answer } = post(port, { 'transfer-encoding': 'chunked' });
    req.write('abc');
    await wait(50);
    expect(up.seen).toHaveLength(0);
    req.end('def');
    expect(await answer).toEqual({ status: 200, body: digest(Buffer.from('abcdef')) });
    expect(up.seen[0]?.headers['transfer-encoding']).toBe('chunked');
  });

  it('streams a body over 64 KiB from its first 64 KiB on, whole', async () => {
    const up = await digestUpstream();
    const { port } = await proxy([site('a.test', [up.port])]);
    const body = Buffer.alloc(REQUEST_BUFFER_BYTES * 3, 0);
    for (let i = 0; i < body.length; i++) body[i] = (i * 7) & 255;
    const { req, answer } = post(port, { 'content-length': body.length });
    req.write(body.subarray(0, REQUEST_BUFFER_BYTES / 2));
    await wait(50);
    expect(up.seen).toHaveLength(0);
    req.write(body.subarray(REQUEST_BUFFER_BYTES / 2, REQUEST_BUFFER_BYTES + 1000));
    // Over the limit: the upstream request opens before the body ends.
    await until(() => up.seen.length === 1);
    req.end(body.subarray(REQUEST_BUFFER_BYTES + 1000));
    expect(await answer).toEqual({ status: 200, body: digest(body) });
    await until(() => requestBytesBuffered() === 0);
  });

  it('a client that leaves mid-body never reaches the upstream and frees its member and buffer', async () => {
    const up = await digestUpstream();
    const route = site('a.test', [up.port]);
    const { server, port } = await proxy([route]);
    const socket = net.connect(port, '127.0.0.1');
    socket.on('error', () => {});
    socket.write('POST / HTTP/1.1\r\nhost: a.test\r\ncontent-length: 10000\r\n\r\n');
    socket.write(Buffer.alloc(5000, 'x'));
    const pool = server.forwarder.poolOf(route.site.handler as ReverseProxyHandler);
    await until(() => requestBytesBuffered() >= 5000);
    expect(pool.members[0]?.active).toBe(1);
    socket.destroy();
    await until(() => pool.members[0]?.active === 0 && requestBytesBuffered() === 0);
    await wait(50);
    expect(up.seen).toHaveLength(0);
    expect(up.connections.size).toBe(0);
  });

  it('reads an HTTP/2 request body before the upstream request opens', async () => {
    const up = await digestUpstream();
    const store = new MemoryCertificateStore();
    const files = selfSigned(['a.test']);
    store.set('a.test', { cert: readFileSync(files.cert), key: readFileSync(files.key) });
    const { server } = await siteProxy([site('a.test', [up.port])], { certificates: store });
    const { port } = await server.listenHttps(0);
    const session = http2.connect(`https://127.0.0.1:${port}`, { servername: 'a.test', rejectUnauthorized: false });
    onCleanup(() => {
      session.destroy();
    });
    const stream = session.request({ ':method': 'POST', ':path': '/', ':authority': 'a.test' });
    let answer = '';
    stream.setEncoding('utf8');
    stream.on('data', (c: string) => {
      answer += c;
    });
    const ended = new Promise((r) => stream.on('end', r));
    stream.write('hello ');
    await wait(100);
    expect(up.seen).toHaveLength(0);
    stream.end('world');
    await ended;
    expect(answer).toBe(digest(Buffer.from('hello world')));
  });
});
