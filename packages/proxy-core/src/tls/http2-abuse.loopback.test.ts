import { readFileSync } from 'node:fs';
import http2 from 'node:http2';
import tls from 'node:tls';
import v8 from 'node:v8';
import vm from 'node:vm';
import type { RouteSpec } from '@proxyd/model';
import { describe, expect, it } from 'vitest';
import type { RequestRecord } from '../hooks.js';
import { selfSigned, site, siteProxy, upstream, wait } from '../loopback.test-helpers.js';
import { MemoryCertificateStore } from './certificate-store.js';
import { h2Request, h2Session } from './tls-client.test-helpers.js';

// Abuse of the HTTP/2 listener (issue 18 "Limits against abuse"): the
// daemon stays up, its memory stays bounded, and another client is served
// meanwhile. The numbers each test measured are printed for the record.

const MB = 1024 * 1024;

async function httpsProxy(routes: RouteSpec[], onRequest?: (r: RequestRecord) => void) {
  const store = new MemoryCertificateStore();
  for (const route of routes) {
    const files = selfSigned([route.domain]);
    store.set(route.domain, { cert: readFileSync(files.cert), key: readFileSync(files.key) });
  }
  const { server } = await siteProxy(routes, {
    certificates: store,
    ...(onRequest !== undefined ? { hooks: { onRequest } } : {}),
  });
  const { port } = await server.listenHttps(0);
  return port;
}

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

/** Heap in use after a full collection, MB. */
function heapMb(): number {
  gc();
  return process.memoryUsage().heapUsed / MB;
}

/** Resolves once the server's SETTINGS arrived. */
const connected = (session: http2.ClientHttp2Session) =>
  new Promise<void>((resolve, reject) => {
    session.once('remoteSettings', () => resolve());
    session.once('error', reject);
  });

describe('HTTP/2 abuse', () => {
  it('rapid reset (CVE-2023-44487): cancelled streams reach no upstream; nghttp2 ends the session; others are served', async () => {
    const up = await upstream((_req, res) => setTimeout(() => res.end('ok'), 5));
    let records = 0;
    const port = await httpsProxy([site('a.test', [up.port])], () => records++);
    const before = heapMb();
    const attacker = h2Session(port, 'a.test');
    await connected(attacker);
    let sent = 0;
    const BATCHES = 40;
    const PER_BATCH = 250;
    for (let b = 0; b < BATCHES && !attacker.closed && !attacker.destroyed; b++) {
      for (let i = 0; i < PER_BATCH && !attacker.closed && !attacker.destroyed; i++) {
        try {
          const stream = attacker.request({ ':path': `/r${sent}`, ':authority': 'a.test' });
          stream.on('error', () => {});
          stream.close(http2.constants.NGHTTP2_CANCEL);
          sent++;
        } catch {
          break;
        }
      }
      await new Promise((r) => setImmediate(r));
    }
    await wait(300);
    // A stream reset right after its HEADERS is dropped before the data
    // plane (StreamAdmission): no upstream request, no record.
    const reachedUpstream = up.urls.length;
    const reachedDataPlane = records;
    // The attacker's session is over: nghttp2 (1.57+: 1000 resets burst,
    // 33/s) ended it, so a request on it gets no answer.
    const onAttacker = await Promise.race([
      h2Request(port, { servername: 'a.test', session: attacker }).then(
        () => 'served',
        () => 'refused',
      ),
      wait(1000).then(() => 'no answer'),
    ]);
    expect(onAttacker).not.toBe('served');
    // Another client, on its own session, is served meanwhile and after.
    const other = await h2Request(port, { servername: 'a.test', path: '/other' });
    expect(other).toMatchObject({ status: 200, body: 'ok' });
    const grown = heapMb() - before;
    console.info(
      `rapid reset: ${sent} streams opened+reset, ${reachedDataPlane} reached the data plane, ` +
        `${reachedUpstream} the upstream, attacker's next request: ${onAttacker}, heap +${grown.toFixed(1)} MB`,
    );
    expect(sent).toBeGreaterThan(1000);
    // 0 measured; a few may slip through when a HEADERS and its RST_STREAM land in different reads.
    expect(reachedDataPlane).toBeLessThan(20);
    expect(reachedUpstream).toBeLessThan(20);
    expect(grown).toBeLessThan(64);
  });

  it('stream flood: streams never read stay bounded by flow control and max concurrent streams', async () => {
    const big = Buffer.alloc(MB, 'x');
    const up = await upstream((_req, res) => res.end(big));
    const port = await httpsProxy([site('a.test', [up.port])]);
    const before = heapMb();
    const attacker = h2Session(port, 'a.test');
    await connected(attacker);
    const remote = attacker.remoteSettings.maxConcurrentStreams;
    expect(remote).toBe(128);
    const streams: http2.ClientHttp2Stream[] = [];
    for (let i = 0; i < 1000; i++) {
      const stream = attacker.request({ ':path': `/big${i}`, ':authority': 'a.test' });
      stream.on('error', () => {});
      stream.pause();
      streams.push(stream);
    }
    await wait(1500);
    const other = await h2Request(port, { servername: 'a.test', path: '/other' });
    expect(other.status).toBe(200);
    expect(other.body.length).toBe(MB);
    const grown = heapMb() - before;
    const started = up.urls.length;
    console.info(
      `stream flood: 1000 streams asked, never read; ${started} reached the upstream (server limit ${remote}), heap +${grown.toFixed(1)} MB`,
    );
    expect(started).toBeLessThanOrEqual(128 + 1);
    expect(grown).toBeLessThan(200);
    attacker.destroy();
  });

  it('CONTINUATION flood: a header block that never ends closes the connection; others are served', async () => {
    const up = await upstream();
    const port = await httpsProxy([site('a.test', [up.port])]);
    const socket = tls.connect({
      port,
      host: '127.0.0.1',
      servername: 'a.test',
      ALPNProtocols: ['h2'],
      rejectUnauthorized: false,
    });
    socket.on('error', () => {});
    await new Promise<void>((r) => socket.once('secureConnect', () => r()));
    expect(socket.alpnProtocol).toBe('h2');
    let received = 0;
    socket.on('data', (chunk: Buffer) => {
      received += chunk.length;
    });
    const closed = new Promise<void>((r) => socket.once('close', () => r()));
    const frame = (type: number, flags: number, stream: number, payload: Buffer): Buffer => {
      const head = Buffer.alloc(9);
      head.writeUIntBE(payload.length, 0, 3);
      head[3] = type;
      head[4] = flags;
      head.writeUInt32BE(stream, 5);
      return Buffer.concat([head, payload]);
    };
    const literal = (name: string, value: string) =>
      Buffer.concat([
        Buffer.from([0, name.length]),
        Buffer.from(name),
        Buffer.from([value.length]),
        Buffer.from(value),
      ]);
    // :method GET, :path /, :scheme https (static table), :authority a.test; END_STREAM, no END_HEADERS.
    const first = Buffer.concat([Buffer.from([0x82, 0x84, 0x87, 0x01, 6]), Buffer.from('a.test')]);
    socket.write(Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'));
    socket.write(frame(4, 0, 0, Buffer.alloc(0)));
    socket.write(frame(1, 0x1, 1, first));
    const continuation = frame(9, 0, 1, literal('x-flood', 'a'.repeat(100)));
    let frames = 0;
    let isClosed = false;
    void closed.then(() => {
      isClosed = true;
    });
    for (let i = 0; i < 200 && !isClosed; i++) {
      for (let j = 0; j < 50; j++) {
        socket.write(continuation);
        frames++;
      }
      await wait(5);
    }
    await Promise.race([closed, wait(3000)]);
    console.info(`CONTINUATION flood: ${frames} frames written, server wrote ${received} bytes, closed: ${isClosed}`);
    expect(isClosed).toBe(true);
    expect(frames).toBeLessThan(10_000);
    expect(up.urls.length).toBe(0);
    const other = await h2Request(port, { servername: 'a.test' });
    expect(other).toMatchObject({ status: 200, body: 'hello' });
  });
});
