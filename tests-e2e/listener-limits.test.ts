import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitUntil } from './support/admin.js';
import { type RunningProxyd, startProxyd } from './support/proxyd.js';
import { openWebSocket, startWebSocketUpstream, type WebSocketUpstream } from './support/websocket.js';

// Issue 28: the listener limits are Proxyfile options, Caddy's
// `servers { timeouts { … } max_header_size }` and proxyd's
// `max_connections_per_ip`. The cap is the node's, whatever the number of
// workers (this file runs with the default workers and, in `pnpm test`'s
// second pass, with PROXY_WORKERS=1), and a peer in `trusted_proxies` (a
// CDN, here 127.0.0.2: Linux routes all of 127/8 to lo) is not capped.

/** A raw client connection from `localAddress`: what it received, and whether and when it closed. */
interface Raw {
  socket: net.Socket;
  data(): string;
  closed(): boolean;
  /** ms from connect to close, or -1. */
  closedAfter(): number;
}

function connect(port: number, localAddress = '127.0.0.1'): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: '127.0.0.1', localAddress });
    let data = '';
    let closedAt = -1;
    const start = performance.now();
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      data += chunk;
    });
    socket.on('close', () => {
      closedAt = performance.now() - start;
    });
    socket.on('error', () => {});
    socket.once('connect', () =>
      resolve({
        socket,
        data: () => data,
        closed: () => closedAt >= 0,
        closedAfter: () => closedAt,
      }),
    );
    socket.once('error', reject);
  });
}

const GET = 'GET / HTTP/1.1\r\nhost: app.test\r\n\r\n';

/** Sends one GET on a kept-alive connection and waits for its whole answer (`ok`); false when the connection closed first. */
async function served(raw: Raw): Promise<boolean> {
  const before = raw.data().length;
  raw.socket.write(GET);
  await waitUntil(() => raw.closed() || raw.data().slice(before).endsWith('\r\n\r\nok'), 5000);
  return !raw.closed() && raw.data().slice(before).startsWith('HTTP/1.1 200 ');
}

describe('max_connections_per_ip: the node-wide cap, trusted proxies exempt (issue 28)', () => {
  let proxyd: RunningProxyd;
  const open: Raw[] = [];

  beforeAll(async () => {
    proxyd = await startProxyd({
      global: '\ttrusted_proxies 127.0.0.2/32\n\tservers {\n\t\tmax_connections_per_ip 10\n\t}\n',
      sites: 'http://app.test {\n\trespond "ok"\n}\n',
      autoHttps: 'off',
    });
  });

  afterAll(async () => {
    for (const raw of open) raw.socket.destroy();
    await proxyd?.stop();
  });

  it('serves 10 connections from 127.0.0.1 and closes the 11th unread, whichever worker each reached', async () => {
    for (let i = 0; i < 10; i++) {
      const raw = await connect(proxyd.httpPort);
      open.push(raw);
      expect(await served(raw), `connection ${i + 1}`).toBe(true);
    }
    const eleventh = await connect(proxyd.httpPort);
    eleventh.socket.write(GET);
    await waitUntil(() => eleventh.closed(), 5000);
    expect(eleventh.data()).toBe('');
    // The ten are still served.
    for (const raw of open) expect(await served(raw)).toBe(true);
  });

  it('does not cap a trusted proxy (a CDN carries many clients on one address)', async () => {
    const cdn: Raw[] = [];
    for (let i = 0; i < 25; i++) {
      const raw = await connect(proxyd.httpPort, '127.0.0.2');
      cdn.push(raw);
      open.push(raw);
    }
    for (const raw of cdn) expect(await served(raw)).toBe(true);
  });

  it('admits a new connection from the address once one of its ten closed', async () => {
    open.shift()?.socket.destroy();
    // The close reaches the counting process (with workers: the primary) a moment later.
    let admitted = false;
    for (let attempt = 0; attempt < 50 && !admitted; attempt++) {
      const raw = await connect(proxyd.httpPort);
      open.push(raw);
      admitted = await served(raw);
    }
    expect(admitted).toBe(true);
    const twelfth = await connect(proxyd.httpPort);
    twelfth.socket.write(GET);
    await waitUntil(() => twelfth.closed(), 5000);
    expect(twelfth.data()).toBe('');
  });
});

describe('servers timeouts and max_header_size (issue 28)', () => {
  let proxyd: RunningProxyd;
  let upstream: WebSocketUpstream;

  beforeAll(async () => {
    upstream = await startWebSocketUpstream('a');
    proxyd = await startProxyd({
      global:
        '\tservers {\n\t\ttimeouts {\n\t\t\tread_header 1s\n\t\t\tidle 1s\n\t\t}\n\t\tmax_header_size 4KiB\n\t}\n',
      sites: `http://app.test {\n\trespond "ok"\n}\n\nhttp://127.0.0.1 {\n\treverse_proxy 127.0.0.1:${upstream.port}\n}\n`,
      autoHttps: 'off',
    });
  });

  afterAll(async () => {
    await proxyd?.stop();
    await upstream?.close();
  });

  it('read_header: a slowloris head, trickled a header line at a time, is cut with 408', async () => {
    const raw = await connect(proxyd.httpPort);
    raw.socket.write('GET / HTTP/1.1\r\nhost: app.test\r\n');
    const trickle = setInterval(() => raw.socket.write(`x-slow-${Date.now()}: 1\r\n`), 200);
    try {
      await waitUntil(() => raw.closed(), 8000);
    } finally {
      clearInterval(trickle);
    }
    expect(raw.data()).toMatch(/^HTTP\/1\.1 408 /);
    // 1 s, checked every second (the default 60 s would still be waiting).
    expect(raw.closedAfter()).toBeLessThan(4000);
  });

  it('idle: an idle keep-alive connection is closed, and says so in Keep-Alive', async () => {
    const raw = await connect(proxyd.httpPort);
    expect(await served(raw)).toBe(true);
    expect(raw.data()).toMatch(/\r\nkeep-alive: timeout=1\r\n/i);
    await waitUntil(() => raw.closed(), 8000);
    // 1 s and Node's 1 s of slack (the default would hold it 75 s).
    expect(raw.closedAfter()).toBeLessThan(4000);
  });

  it('idle and read_header leave an upgraded WebSocket alone', async () => {
    const ws = await openWebSocket(`ws://127.0.0.1:${proxyd.httpPort}/chat`);
    expect(await ws.ask('one')).toBe('a:one');
    await new Promise((resolve) => setTimeout(resolve, 3500));
    expect(await ws.ask('two')).toBe('a:two');
    ws.socket.close();
  });

  it('max_header_size: a head over it is 431; one under it is served', async () => {
    const big = await connect(proxyd.httpPort);
    big.socket.write(`GET / HTTP/1.1\r\nhost: app.test\r\nx-big: ${'a'.repeat(5000)}\r\n\r\n`);
    await waitUntil(() => big.closed(), 5000);
    expect(big.data()).toMatch(/^HTTP\/1\.1 431 /);
    const small = await connect(proxyd.httpPort);
    small.socket.write(`GET / HTTP/1.1\r\nhost: app.test\r\nx-small: ${'a'.repeat(3000)}\r\n\r\n`);
    await waitUntil(() => small.data().endsWith('\r\n\r\nok'), 5000);
    expect(small.data()).toMatch(/^HTTP\/1\.1 200 /);
    small.socket.destroy();
  });
});
