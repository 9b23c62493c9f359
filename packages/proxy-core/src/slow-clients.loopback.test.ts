import { readFileSync } from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';
import type { RouteSpec } from '@proxyd/model';
import bcrypt from 'bcryptjs';
import { describe, expect, it } from 'vitest';
import type { ListenerLimits } from './connection-limits.js';
import type { ProxyServerOptions } from './data-plane/proxy-server.js';
import { onCleanup, proxy, selfSigned, site, siteProxy, until, upstream, wait } from './loopback.test-helpers.js';
import { MemoryCertificateStore } from './tls/certificate-store.js';

// Issue 20, item 3: slow clients are cut at the listener's limits (small
// ones here), hold no upstream connection while their body is missing, and
// an answer that leaves a body unread closes the connection.

/** Small limits: every timeout a fraction of a second, checked every 25 ms. */
const FAST: Partial<ListenerLimits> = {
  headersTimeoutMs: 300,
  handshakeTimeoutMs: 300,
  bodyTimeoutMs: 300,
  bodyMinRate: 0,
  requestTimeoutMs: 10_000,
  lingerMs: 300,
  checkIntervalMs: 25,
};

/** A raw client connection: what it received, and when the server half closed and closed it. */
interface Raw {
  socket: net.Socket;
  data(): string;
  /** ms from connect to the server's FIN, or -1. */
  endedAt(): number;
  /** ms from connect to the close, or -1. */
  closedAt(): number;
}

function raw(port: number, connect: typeof net.connect = net.connect): Promise<Raw> {
  return rawOn(connect({ port, host: '127.0.0.1' }), 'connect');
}

function rawOn(socket: net.Socket, ready: string): Promise<Raw> {
  // performance.now, not Date.now: unit test files share a worker, and one that fakes Date would freeze these times.
  const start = performance.now();
  let data = '';
  let ended = -1;
  let closed = -1;
  socket.setEncoding('latin1');
  socket.on('data', (d: string) => {
    data += d;
  });
  socket.on('end', () => {
    ended = performance.now() - start;
  });
  socket.on('close', () => {
    closed = performance.now() - start;
  });
  socket.on('error', () => {});
  onCleanup(() => {
    socket.destroy();
  });
  return new Promise((resolve) =>
    socket.once(ready, () => resolve({ socket, data: () => data, endedAt: () => ended, closedAt: () => closed })),
  );
}

function basic(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
}

describe('issue 20: header and idle timeouts', () => {
  it('cuts a silent connection and a header slowloris at headersTimeoutMs (not Node 60 s + 30 s)', async () => {
    const up = await upstream();
    const { port } = await proxy([site('a.test', [up.port])], { limits: FAST });
    const silent = await raw(port);
    const slow = await raw(port);
    slow.socket.write('GET / HTTP/1.1\r\nhost: a.test\r\n');
    // One header line every 50 ms: the head never ends.
    for (let i = 0; i < 60 && slow.closedAt() < 0; i++) {
      slow.socket.write(`x-${i}: y\r\n`);
      await wait(50);
    }
    await until(() => silent.closedAt() >= 0 && slow.closedAt() >= 0, 5000);
    expect(silent.data()).toMatch(/^HTTP\/1\.1 408 /);
    expect(slow.data()).toMatch(/^HTTP\/1\.1 408 /);
    expect(slow.closedAt()).toBeLessThan(2500);
    expect(up.seen).toHaveLength(0);
  });

  it('announces and applies keepAliveTimeoutMs (default 75 s, as nginx)', async () => {
    const up = await upstream();
    const { port } = await proxy([site('a.test', [up.port])]);
    const client = await raw(port);
    client.socket.write('GET / HTTP/1.1\r\nhost: a.test\r\n\r\n');
    await until(() => client.data().includes('hello'));
    expect(client.data()).toMatch(/\r\nkeep-alive: timeout=75\r\n/i);
  });
});

describe('issue 20: request bodies', () => {
  it('cuts a body that stops arriving with 408, and no upstream connection was opened', async () => {
    const up = await upstream((req, res) => req.pipe(res));
    const { server, port } = await proxy([site('a.test', [up.port])], { limits: FAST });
    const client = await raw(port);
    client.socket.write('POST / HTTP/1.1\r\nhost: a.test\r\ncontent-length: 100\r\n\r\n0123456789');
    await until(() => client.closedAt() >= 0, 5000);
    expect(client.data()).toMatch(/^HTTP\/1\.1 408 /);
    expect(client.data()).toMatch(/\r\nconnection: close\r\n/i);
    expect(up.seen).toHaveLength(0);
    expect(up.connections.size).toBe(0);
    expect(server.forwarder.upstreamSocketCount()).toBe(0);
  });

  it('cuts a body trickled under bodyMinRate, and no upstream connection was opened', async () => {
    const up = await upstream((req, res) => req.pipe(res));
    const { port } = await proxy([site('a.test', [up.port])], {
      limits: { ...FAST, bodyTimeoutMs: 400, bodyMinRate: 100 },
    });
    const client = await raw(port);
    client.socket.write('POST / HTTP/1.1\r\nhost: a.test\r\ncontent-length: 1000\r\n\r\n');
    // One byte every 50 ms (20 B/s): never idle for 400 ms, but under 100 B/s.
    for (let i = 0; i < 100 && client.closedAt() < 0; i++) {
      client.socket.write('x');
      await wait(50);
    }
    expect(client.closedAt()).toBeGreaterThan(0);
    expect(client.data()).toMatch(/^HTTP\/1\.1 408 /);
    expect(up.seen).toHaveLength(0);
    expect(up.connections.size).toBe(0);
  });

  it('forwards a body sent slowly but steadily, whole, with its keep-alive connection', async () => {
    const up = await upstream((req, res) => req.pipe(res));
    const { port } = await proxy([site('a.test', [up.port])], { limits: { ...FAST, bodyMinRate: 2 } });
    const client = await raw(port);
    client.socket.write('POST / HTTP/1.1\r\nhost: a.test\r\ncontent-length: 10\r\n\r\n');
    for (let i = 0; i < 10; i++) {
      // The upstream sees nothing while the body arrives.
      expect(up.seen).toHaveLength(0);
      client.socket.write(String(i));
      await wait(100);
    }
    await until(() => client.data().includes('0123456789'));
    expect(client.data()).toMatch(/^HTTP\/1\.1 200 /);
    expect(client.data()).not.toMatch(/connection: close/i);
    client.socket.write('GET / HTTP/1.1\r\nhost: a.test\r\n\r\n');
    await until(() => (client.data().match(/HTTP\/1\.1 200 /g) ?? []).length === 2);
    expect(client.closedAt()).toBe(-1);
  });

  it('does not time a client that waits for 100 Continue while a step decides', async () => {
    const hash = bcrypt.hashSync('pw', 4);
    const up = await upstream((req, res) => req.pipe(res));
    const { port } = await siteProxy(
      [site('a.test', [up.port], (s) => (s.basic_auth = { realm: 'r', users: [{ user: 'u', hash }] }))],
      { limits: FAST },
      // The password check takes 3 body timeouts.
      {
        verifyPassword: async (p, h) => {
          await wait(900);
          return bcrypt.compare(p, h);
        },
      },
    );
    const client = await raw(port);
    client.socket.write(
      `POST / HTTP/1.1\r\nhost: a.test\r\nauthorization: ${basic('u', 'pw')}\r\nexpect: 100-continue\r\ncontent-length: 5\r\n\r\n`,
    );
    await until(() => client.data().includes('100 Continue'), 5000);
    client.socket.write('hello');
    await until(() => client.data().includes('hello'));
    expect(client.data()).toMatch(/HTTP\/1\.1 200 /);
  });
});

describe('issue 20: an answer that leaves the body unread closes the connection', () => {
  const hash = bcrypt.hashSync('pw', 4);
  const guarded = (port: number): RouteSpec =>
    site('a.test', [port], (s) => (s.basic_auth = { realm: 'r', users: [{ user: 'u', hash }] }));

  it('401 before the body: Connection: close, half closed, closed after lingerMs however the client trickles', async () => {
    const up = await upstream();
    const { port } = await siteProxy([guarded(up.port)], { limits: { ...FAST, bodyTimeoutMs: 60_000 } });
    const client = await raw(port);
    client.socket.write('POST / HTTP/1.1\r\nhost: a.test\r\ncontent-length: 100000\r\n\r\n0123456789');
    await until(() => client.endedAt() >= 0, 3000);
    expect(client.data()).toMatch(/^HTTP\/1\.1 401 /);
    expect(client.data()).toMatch(/\r\nconnection: close\r\n/i);
    // The client keeps trickling its body: the server reads it no longer than lingerMs.
    for (let i = 0; i < 100 && client.closedAt() < 0; i++) {
      if (client.socket.writable) client.socket.write('x');
      await wait(25);
    }
    expect(client.closedAt()).toBeGreaterThan(0);
    expect(client.closedAt()).toBeLessThan(2000);
    expect(up.seen).toHaveLength(0);
  });

  it('a client that reads the 401 and closes is let go at once', async () => {
    const up = await upstream();
    const { port } = await siteProxy([guarded(up.port)], { limits: { ...FAST, lingerMs: 60_000 } });
    const client = await raw(port);
    client.socket.write('POST / HTTP/1.1\r\nhost: a.test\r\ncontent-length: 100000\r\n\r\n0123');
    await until(() => client.endedAt() >= 0, 3000);
    client.socket.end();
    await until(() => client.closedAt() >= 0, 3000);
    expect(client.data()).toMatch(/^HTTP\/1\.1 401 /);
  });

  it('keeps the connection after a forwarded body and after an authorised one', async () => {
    const up = await upstream((req, res) => req.pipe(res));
    const { port } = await siteProxy([guarded(up.port)], { limits: FAST });
    const client = await raw(port);
    const auth = basic('u', 'pw');
    client.socket.write(`POST / HTTP/1.1\r\nhost: a.test\r\nauthorization: ${auth}\r\ncontent-length: 3\r\n\r\nabc`);
    await until(() => client.data().includes('abc'));
    client.socket.write(`POST / HTTP/1.1\r\nhost: a.test\r\nauthorization: ${auth}\r\ncontent-length: 3\r\n\r\ndef`);
    await until(() => client.data().includes('def'));
    expect(client.data()).not.toMatch(/connection: close/i);
    expect(client.closedAt()).toBe(-1);
  });
});

describe('issue 20: connection caps', () => {
  it('closes a connection over maxConnectionsPerIp at once, and admits one again after a close', async () => {
    const up = await upstream();
    const { port } = await proxy([site('a.test', [up.port])], { limits: { maxConnectionsPerIp: 3 } });
    const held = [await raw(port), await raw(port), await raw(port)];
    const over = await raw(port);
    await until(() => over.closedAt() >= 0);
    expect(over.data()).toBe('');
    expect(held.every((c) => c.closedAt() < 0)).toBe(true);
    held[0]?.socket.destroy();
    await wait(50);
    const again = await raw(port);
    again.socket.write('GET / HTTP/1.1\r\nhost: a.test\r\n\r\n');
    await until(() => again.data().includes('hello'));
  });

  it('does not cap a trusted proxy per address; maxConnections caps everyone', async () => {
    const up = await upstream();
    const { port } = await proxy([site('a.test', [up.port])], {
      trustedProxies: ['127.0.0.1'],
      limits: { maxConnectionsPerIp: 1, maxConnections: 4 },
    });
    const held = [await raw(port), await raw(port), await raw(port), await raw(port)];
    const over = await raw(port);
    await until(() => over.closedAt() >= 0);
    await wait(50);
    expect(held.every((c) => c.closedAt() < 0)).toBe(true);
  });
});

describe('issue 20: the HTTPS listener', () => {
  async function httpsProxy(options: Omit<ProxyServerOptions, 'routes' | 'certificates' | 'compileSite'>) {
    const up = await upstream((req, res) => req.pipe(res));
    const store = new MemoryCertificateStore();
    const files = selfSigned(['a.test']);
    store.set('a.test', { cert: readFileSync(files.cert), key: readFileSync(files.key) });
    const { server } = await siteProxy([site('a.test', [up.port])], { ...options, certificates: store });
    const { port } = await server.listenHttps(0);
    return { up, server, port };
  }

  it('cuts a silent TLS connection at handshakeTimeoutMs and HTTP/1.1 slow heads and bodies as on plain HTTP', async () => {
    const { up, port } = await httpsProxy({ limits: FAST });
    const silent = await raw(port);
    const secure = () =>
      rawOn(
        tls.connect({
          port,
          host: '127.0.0.1',
          servername: 'a.test',
          ALPNProtocols: ['http/1.1'],
          rejectUnauthorized: false,
        }),
        'secureConnect',
      );
    const head = await secure();
    head.socket.write('GET / HTTP/1.1\r\nhost: a.test\r\n');
    const body = await secure();
    body.socket.write('POST / HTTP/1.1\r\nhost: a.test\r\ncontent-length: 100\r\n\r\n01234');
    await until(() => silent.closedAt() >= 0 && head.closedAt() >= 0 && body.closedAt() >= 0, 5000);
    expect(head.data()).toMatch(/^HTTP\/1\.1 408 /);
    expect(body.data()).toMatch(/^HTTP\/1\.1 408 /);
    expect(up.seen).toHaveLength(0);
  });

  it('caps TLS connections per address before the handshake', async () => {
    const { port } = await httpsProxy({ limits: { maxConnectionsPerIp: 1 } });
    await raw(port);
    const over = await raw(port);
    await until(() => over.closedAt() >= 0);
  });
});
