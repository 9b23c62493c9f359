import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { connect, type NetConnectOpts } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { AdminApp, AdminAppOptions } from './app.js';
import { TOKEN, testApp } from './memory-ports.test-helpers.js';
import { attachAdminServerHandlers } from './server-events.js';

// Issue 20: slow and early-answered clients on real listeners. Every wait
// is bounded by BOUND_MS, far above the small timeouts the apps get here.

const BOUND_MS = 5_000;

let cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

/** The app on 127.0.0.1 (a free port); `overrides` over `testApp`'s. */
async function tcpApp(overrides: Partial<AdminAppOptions> = {}): Promise<{ app: AdminApp; target: NetConnectOpts }> {
  const { app } = testApp({ transport: 'auto', ...overrides });
  await app.listen({ host: '127.0.0.1', port: 0 });
  cleanup.push(() => app.close());
  const address = app.server.address();
  return { app, target: { host: '127.0.0.1', port: typeof address === 'object' && address ? address.port : 0 } };
}

/** The app on a Unix socket in a temp dir, as the daemon serves it (`attachAdminServerHandlers`). */
async function unixApp(
  overrides: Partial<AdminAppOptions> = {},
  attach: (server: Server) => void = attachAdminServerHandlers,
): Promise<NetConnectOpts> {
  const { app } = testApp({ transport: 'auto', ...overrides });
  await app.ready();
  const dir = await mkdtemp(join(tmpdir(), 'admin-slow-'));
  const server = createServer((req, res) => app.routing(req, res));
  attach(server);
  const path = join(dir, 'admin.sock');
  await new Promise<void>((resolve) => server.listen(path, resolve));
  cleanup.push(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await app.close();
    await rm(dir, { recursive: true, force: true });
  });
  return { path };
}

/** A raw client: what it read, whether and when (ms after connecting) the server closed. */
interface Conversation {
  text(): string;
  closed: Promise<{ afterMs: number } | 'still open'>;
  write(data: string): void;
  destroy(): void;
}

/** Connects, writes `first`, then `trickle` every `everyMs` until the server closes or `BOUND_MS` passes. */
function converse(target: NetConnectOpts, first: string, trickle?: { piece: string; everyMs: number }): Conversation {
  const socket = connect(target);
  let data = '';
  let started = 0;
  let timer: NodeJS.Timeout | undefined;
  socket.setEncoding('latin1');
  socket.on('data', (chunk: string) => {
    data += chunk;
  });
  socket.on('error', () => {});
  socket.once('connect', () => {
    started = performance.now();
    if (first !== '') socket.write(first);
    if (trickle !== undefined) {
      timer = setInterval(() => {
        if (socket.writable) socket.write(trickle.piece);
      }, trickle.everyMs);
    }
  });
  const closed = new Promise<{ afterMs: number } | 'still open'>((resolve) => {
    const bound = setTimeout(() => {
      resolve('still open');
      socket.destroy();
    }, BOUND_MS);
    socket.once('close', () => {
      clearTimeout(bound);
      clearInterval(timer);
      resolve({ afterMs: performance.now() - started });
    });
  });
  return {
    text: () => data,
    closed,
    write: (chunk) => socket.write(chunk),
    destroy: () => socket.destroy(),
  };
}

const post = (headers: string, length: number) =>
  `POST /routes HTTP/1.1\r\nHost: admin\r\n${headers}Content-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;
const auth = `Authorization: Bearer ${TOKEN}\r\n`;

describe('an early answer that leaves the body unread closes the connection (issue 20)', () => {
  it('401 to a client that trickles its body: Connection: close, and the server closes', async () => {
    const { target } = await tcpApp();
    const c = converse(target, post('', 65_536), { piece: ' ', everyMs: 50 });
    const closed = await c.closed;
    expect(closed).not.toBe('still open');
    expect(c.text()).toMatch(/^HTTP\/1\.1 401 /);
    expect(c.text().toLowerCase()).toContain('\r\nconnection: close\r\n');
    expect(c.text()).toMatch(/\r\n\r\n\{"error":"unauthorized"\}$/);
  });

  it('413 for a declared length over 64 KB closes the connection, on TCP and on the Unix socket', async () => {
    const { target } = await tcpApp();
    const unix = await unixApp();
    for (const [where, headers] of [
      [target, auth],
      [unix, ''],
    ] as const) {
      const c = converse(where, post(headers, 70_000), { piece: ' ', everyMs: 50 });
      expect(await c.closed, JSON.stringify(where)).not.toBe('still open');
      expect(c.text()).toMatch(/^HTTP\/1\.1 413 /);
      expect(c.text()).toMatch(/\r\n\r\n\{"error":"request body too large"\}$/);
    }
  });

  it('a 401 whose body arrived whole keeps the connection: the next request is answered on it', async () => {
    const { target } = await tcpApp();
    const body = '{"domain":"a.test","upstream":"127.0.0.1:80","tls":false}';
    const c = converse(target, `${post('', body.length)}${body}`);
    for (let i = 0; i < 100 && !c.text().includes('unauthorized'); i++) await new Promise((r) => setTimeout(r, 20));
    expect(c.text()).toMatch(/^HTTP\/1\.1 401 /);
    expect(c.text().toLowerCase()).not.toContain('connection: close');
    c.write('GET /health HTTP/1.1\r\nHost: admin\r\n\r\n');
    for (let i = 0; i < 100 && !c.text().includes('"status":"ok"'); i++) await new Promise((r) => setTimeout(r, 20));
    expect(c.text()).toContain('"status":"ok"');
    c.destroy();
  });
});
