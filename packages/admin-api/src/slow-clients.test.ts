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

/** Small timeouts so that every cut comes well inside `BOUND_MS`. */
const SMALL = { headersMs: 300, requestMs: 600, idleMs: 300, keepAliveMs: 200, checkIntervalMs: 50 };
const opts = { timeouts: SMALL };
const attachSmall = (server: Server) => attachAdminServerHandlers(server, opts);

describe('connection timeouts, after nginx (issue 20)', () => {
  it('a connection that sends nothing is closed after the idle timeout, on TCP and on the Unix socket', async () => {
    const { target } = await tcpApp(opts);
    const unix = await unixApp(opts, attachSmall);
    for (const where of [target, unix]) {
      const c = converse(where, '');
      expect(await c.closed, JSON.stringify(where)).not.toBe('still open');
    }
  });

  it('header slowloris (a header line every 100 ms) is cut at the header timeout with a 408 envelope', async () => {
    const { target } = await tcpApp(opts);
    const unix = await unixApp(opts, attachSmall);
    for (const where of [target, unix]) {
      const c = converse(where, 'GET /routes HTTP/1.1\r\nHost: admin\r\n', { piece: 'X-Pad: x\r\n', everyMs: 100 });
      expect(await c.closed, JSON.stringify(where)).not.toBe('still open');
      expect(c.text()).toMatch(/^HTTP\/1\.1 408 /);
      expect(c.text()).toMatch(/\r\n\r\n\{"error":"request timeout"\}$/);
    }
  });

  it('an authenticated body that stalls is cut at the idle timeout', async () => {
    const { target } = await tcpApp(opts);
    const c = converse(target, `${post(auth, 100)}{"domain":`);
    expect(await c.closed).not.toBe('still open');
    expect(c.text()).not.toMatch(/^HTTP\/1\.1 2/);
  });

  it('an authenticated body trickled a byte every 100 ms is cut at the request timeout with a 408', async () => {
    const { target } = await tcpApp(opts);
    const c = converse(target, post(auth, 65_536), { piece: ' ', everyMs: 100 });
    const closed = await c.closed;
    expect(closed).not.toBe('still open');
    expect(c.text()).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('an idle keep-alive connection is closed after the keep-alive timeout (Node adds 1 s)', async () => {
    const { target } = await tcpApp(opts);
    const c = converse(target, 'GET /health HTTP/1.1\r\nHost: admin\r\n\r\n');
    expect(await c.closed).not.toBe('still open');
    expect(c.text()).toMatch(/^HTTP\/1\.1 200 /);
  });

  it('a handler slower than the idle timeout is not cut: the app working is not the client idling', async () => {
    const reload = {
      reload: async () => {
        await new Promise((r) => setTimeout(r, 1_000));
        return { ok: true as const, message: 'reloaded' };
      },
    };
    const { target } = await tcpApp({ ...opts, reload });
    const c = converse(target, `POST /reload HTTP/1.1\r\nHost: admin\r\n${auth}Content-Length: 0\r\n\r\n`);
    for (let i = 0; i < 250 && !c.text().includes('reloaded'); i++) await new Promise((r) => setTimeout(r, 20));
    expect(c.text()).toMatch(/^HTTP\/1\.1 200 /);
    expect(c.text()).toContain('{"message":"reloaded"}');
    c.destroy();
  });

  it('refuses timeouts that are not whole numbers > 0, and a header timeout over the request timeout', () => {
    expect(() => testApp({ timeouts: { idleMs: 0 } })).toThrow(/idleMs/);
    expect(() => testApp({ timeouts: { headersMs: 2_000, requestMs: 1_000 } })).toThrow(/headersMs/);
  });
});

/** Connects (from `localAddress`, on TCP) and asks for /health: `accepted` (answered, left open) or `refused` (closed unanswered). */
function probe(
  target: NetConnectOpts,
  localAddress?: string,
): { result: Promise<'accepted' | 'refused'>; end(): void } {
  const from = localAddress === undefined ? target : ({ ...target, localAddress } as NetConnectOpts);
  const c = converse(from, 'GET /health HTTP/1.1\r\nHost: admin\r\n\r\n');
  const result = (async () => {
    for (let i = 0; i < 250; i++) {
      if (c.text().includes('"status":"ok"')) return 'accepted' as const;
      const closed = await Promise.race([c.closed, new Promise((r) => setTimeout(() => r('waiting'), 20))]);
      if (closed !== 'waiting' && !c.text().includes('"status":"ok"')) return 'refused' as const;
    }
    return c.text().includes('"status":"ok"') ? ('accepted' as const) : ('refused' as const);
  })();
  return { result, end: () => c.destroy() };
}

describe('connection limits on the TCP listener (issue 20)', () => {
  it('closes a connection over the per-client limit or the total at once, and logs it once a minute', async () => {
    const warnings: unknown[][] = [];
    const noop = () => {};
    const logger = {
      level: 'info',
      info: noop,
      error: noop,
      debug: noop,
      trace: noop,
      fatal: noop,
      silent: noop,
      warn: (...args: unknown[]) => warnings.push(args),
      child: () => logger,
    } as unknown as NonNullable<AdminAppOptions['logger']>;
    const { app, target } = await tcpApp({ connectionLimits: { perClient: 2, total: 3 }, logger });
    const open = async () => new Promise<number>((resolve) => app.server.getConnections((_e, n) => resolve(n)));
    const a1 = probe(target, '127.0.0.1');
    const a2 = probe(target, '127.0.0.1');
    expect([await a1.result, await a2.result]).toEqual(['accepted', 'accepted']);
    // A third from the same address is over its limit; another address still gets in, up to the total.
    expect(await probe(target, '127.0.0.1').result).toBe('refused');
    const b1 = probe(target, '127.0.0.2');
    expect(await b1.result).toBe('accepted');
    expect(await probe(target, '127.0.0.3').result).toBe('refused');
    // One closes: its address may connect again.
    a1.end();
    for (let i = 0; i < 250 && (await open()) > 2; i++) await new Promise((r) => setTimeout(r, 20));
    const a3 = probe(target, '127.0.0.1');
    expect(await a3.result).toBe('accepted');
    // Two refusals, one line (the manual clock stands still): the first, per client.
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.[0]).toMatchObject({ limit: 'per_client', client: '127.0.0.1', refused: 1 });
    for (const c of [a2, a3, b1]) c.end();
  });

  it('does not limit the Unix socket per client', async () => {
    const unix = await unixApp({ connectionLimits: { perClient: 1, total: 1_024 } });
    const probes = [probe(unix), probe(unix), probe(unix)];
    expect(await Promise.all(probes.map((p) => p.result))).toEqual(['accepted', 'accepted', 'accepted']);
    for (const p of probes) p.end();
  });

  it('refuses limits that are not whole numbers ≥ 1', () => {
    expect(() => testApp({ connectionLimits: { perClient: 0 } })).toThrow(/perClient/);
    expect(() => testApp({ connectionLimits: { total: 1.5 } })).toThrow(/total/);
  });
});
