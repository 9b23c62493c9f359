import { readFileSync } from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';
import { describe, expect, it } from 'vitest';
import { type ConnectionCounter, ConnectionCounts, LISTENER_DEFAULTS, listenerLimitsOf } from './connection-limits.js';
import { proxy, selfSigned, site, siteProxy, until, upstream, wait } from './loopback.test-helpers.js';
import { MemoryCertificateStore } from './tls/certificate-store.js';

// Issue 28: `max_connections_per_ip` is the node's cap when several
// processes serve the listeners (the multi-core daemon's workers share a
// ConnectionCounter, the primary's ConnectionCounts). Here two ProxyServers
// in one process stand for two workers, and the counter calls the shared
// counts directly, a turn later, where the daemon sends an IPC request
// (`apps/proxyd/src/cluster/connection-counts.ts`; the e2e test
// `listener-limits.test.ts` runs the real one).

/** A worker's counter on shared counts, answering a turn later as the IPC round trip would. */
function sharedCounter(counts: ConnectionCounts, process: number): ConnectionCounter {
  return {
    acquire: (key) => new Promise((resolve) => setImmediate(() => resolve(counts.acquire(process, key)))),
    release: (key) => setImmediate(() => counts.release(process, key)),
  };
}

interface Raw {
  socket: net.Socket;
  data(): string;
  closed(): boolean;
}

function rawOn(socket: net.Socket, ready: string): Promise<Raw> {
  let data = '';
  let closed = false;
  socket.setEncoding('latin1');
  socket.on('data', (d: string) => {
    data += d;
  });
  socket.on('close', () => {
    closed = true;
  });
  socket.on('error', () => {});
  return new Promise((resolve) =>
    socket.once(ready, () => resolve({ socket, data: () => data, closed: () => closed })),
  );
}

const raw = (port: number) => rawOn(net.connect({ port, host: '127.0.0.1' }), 'connect');
const GET = 'GET / HTTP/1.1\r\nhost: a.test\r\n\r\n';

describe('ConnectionCounts', () => {
  it('holds a key to its cap over every process, and gives back what a process held when it goes', () => {
    const counts = new ConnectionCounts(3);
    expect([counts.acquire(0, 'k'), counts.acquire(1, 'k'), counts.acquire(1, 'k')]).toEqual([true, true, true]);
    expect(counts.acquire(0, 'k')).toBe(false);
    expect(counts.acquire(0, 'other')).toBe(true);
    counts.release(0, 'k');
    expect(counts.held('k')).toBe(2);
    // A release a process does not hold changes nothing.
    counts.release(0, 'k');
    expect(counts.held('k')).toBe(2);
    counts.forget(1);
    expect(counts.held('k')).toBe(0);
    expect(counts.held('other')).toBe(1);
  });
});

describe('listenerLimitsOf', () => {
  it('maps the servers block to the listener and HTTP/2 limits, and nothing without one', () => {
    expect(listenerLimitsOf(undefined)).toEqual({ limits: {}, http2: {} });
    expect(
      listenerLimitsOf({
        read_header_ms: 5000,
        read_body_ms: 0,
        write_ms: 30_000,
        idle_ms: 10_000,
        max_header_size_bytes: 32_768,
        max_connections_per_ip: 10,
      }),
    ).toEqual({
      limits: {
        headersTimeoutMs: 5000,
        bodyTimeoutMs: 0,
        writeTimeoutMs: 30_000,
        keepAliveTimeoutMs: 10_000,
        maxHeaderSize: 32_768,
        maxConnectionsPerIp: 10,
      },
      http2: { sessionIdleMs: 10_000, maxHeaderListSize: 32_768 },
    });
    // Node refuses a head timeout longer than the request's: the request's follows.
    expect(listenerLimitsOf({ read_header_ms: 600_000 }).limits).toEqual({
      headersTimeoutMs: 600_000,
      requestTimeoutMs: 600_000,
    });
    expect(LISTENER_DEFAULTS.requestTimeoutMs).toBe(300_000);
  });
});

describe('issue 28: the per-address cap of the node, over processes', () => {
  it('caps one address over two servers sharing the counts, and admits again after a close', async () => {
    const up = await upstream();
    const counts = new ConnectionCounts(2);
    const limits = { maxConnectionsPerIp: 2 };
    const a = await proxy([site('a.test', [up.port])], { limits, connectionCounter: sharedCounter(counts, 0) });
    const b = await proxy([site('a.test', [up.port])], { limits, connectionCounter: sharedCounter(counts, 1) });
    const first = await raw(a.port);
    const second = await raw(b.port);
    for (const c of [first, second]) c.socket.write(GET);
    await until(() => first.data().includes('hello') && second.data().includes('hello'));
    // Under the cap on each server alone, over it on the node.
    const third = await raw(a.port);
    third.socket.write(GET);
    await until(() => third.closed());
    expect(third.data()).toBe('');
    expect(up.seen).toHaveLength(2);
    second.socket.destroy();
    await until(() => counts.held('127.0.0.1') === 1);
    const again = await raw(a.port);
    again.socket.write(GET);
    await until(() => again.data().includes('hello'));
  });

  it('reads nothing of a connection until the counter admits it; a counter that cannot answer leaves the local cap', async () => {
    const up = await upstream();
    let answer: ((admitted: boolean) => void) | undefined;
    let fail = false;
    const counter: ConnectionCounter = {
      acquire: () =>
        fail
          ? Promise.reject(new Error('primary gone'))
          : new Promise((resolve) => {
              answer = resolve;
            }),
      release: () => {},
    };
    const { port } = await proxy([site('a.test', [up.port])], {
      limits: { maxConnectionsPerIp: 1 },
      connectionCounter: counter,
    });
    const held = await raw(port);
    held.socket.write(GET);
    await wait(100);
    expect(held.data()).toBe('');
    expect(up.seen).toHaveLength(0);
    answer?.(true);
    await until(() => held.data().includes('hello'));
    held.socket.destroy();
    await wait(50);
    fail = true;
    const unanswered = await raw(port);
    unanswered.socket.write(GET);
    await until(() => unanswered.data().includes('hello'));
    // The local count still caps: a second connection is over 1.
    const over = await raw(port);
    await until(() => over.closed());
  });

  it('holds a TLS connection unread until admitted, then handshakes and serves', async () => {
    const up = await upstream();
    const store = new MemoryCertificateStore();
    const files = selfSigned(['a.test']);
    store.set('a.test', { cert: readFileSync(files.cert), key: readFileSync(files.key) });
    const counts = new ConnectionCounts(1);
    const slow: ConnectionCounter = {
      acquire: (key) => new Promise((resolve) => setTimeout(() => resolve(counts.acquire(0, key)), 100)),
      release: (key) => counts.release(0, key),
    };
    const { server } = await siteProxy([site('a.test', [up.port])], {
      certificates: store,
      limits: { maxConnectionsPerIp: 1 },
      connectionCounter: slow,
    });
    const { port } = await server.listenHttps(0);
    for (const alpn of ['http/1.1', 'h2']) {
      const secure = await rawOn(
        tls.connect({
          port,
          host: '127.0.0.1',
          servername: 'a.test',
          ALPNProtocols: [alpn],
          rejectUnauthorized: false,
        }),
        'secureConnect',
      );
      expect((secure.socket as tls.TLSSocket).alpnProtocol).toBe(alpn);
      if (alpn === 'http/1.1') {
        secure.socket.write(GET);
        await until(() => secure.data().includes('hello'));
      }
      const over = await raw(port);
      await until(() => over.closed());
      secure.socket.destroy();
      await until(() => counts.held('127.0.0.1') === 0);
    }
  });
});

describe('issue 28: the write timeout', () => {
  it('resets a response not written whole within writeTimeoutMs (an endless stream here)', async () => {
    const up = await upstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      const timer = setInterval(() => res.write('tick\n'), 50);
      res.on('close', () => clearInterval(timer));
    });
    const { port } = await proxy([site('a.test', [up.port])], { limits: { writeTimeoutMs: 400 } });
    const started = performance.now();
    const c = await raw(port);
    c.socket.write(GET);
    await until(() => c.closed(), 5000);
    expect(c.data()).toMatch(/^HTTP\/1\.1 200 [\s\S]*tick/);
    expect(performance.now() - started).toBeGreaterThanOrEqual(350);
    expect(performance.now() - started).toBeLessThan(2000);
  });
});
