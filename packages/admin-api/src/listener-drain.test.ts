// Issue 28: the admin, metrics and dashboard listeners stop as the data plane does.
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { trackForDrain } from './listener-drain.js';

type Outcome = { status: number | string; connection: string | undefined; body: string };

const servers: http.Server[] = [];
afterEach(() => {
  for (const server of servers.splice(0)) server.closeAllConnections();
});

/** A server tracked for drain; `handler` answers (default: reads the body, answers `ok <body>`). */
async function serve(handler?: http.RequestListener) {
  const server = http.createServer(
    handler ??
      ((req, res) => {
        let body = '';
        req.on('data', (c: Buffer) => {
          body += c.toString();
        });
        req.on('end', () => res.end(`ok ${body}`));
      }),
  );
  servers.push(server);
  const drain = trackForDrain(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, drain, port: (server.address() as AddressInfo).port };
}

/** One request on its own connection; `hold`: the body waits for `release()` (sent with `Expect: 100-continue`). */
function send(port: number, options: { body?: string; hold?: boolean } = {}) {
  let release = () => {};
  let received = () => {};
  const continued = new Promise<void>((resolve) => {
    received = resolve;
  });
  const outcome = new Promise<Outcome>((resolve) => {
    const body = options.body ?? '';
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        agent: false,
        headers: { 'content-length': Buffer.byteLength(body), ...(options.hold ? { expect: '100-continue' } : {}) },
      },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => {
          text += c.toString();
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection, body: text }));
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ status: err.code ?? 'error', connection: '', body: '' }));
    req.on('continue', received);
    if (options.hold) {
      req.flushHeaders();
      release = () => req.end(body);
    } else req.end(body);
  });
  return { outcome, continued, release: () => release() };
}

describe('trackForDrain', () => {
  it('answers a request whose handler runs and one whose body is still coming, then refuses new connections', async () => {
    let finish = () => {};
    const running = new Promise<void>((resolve) => {
      finish = resolve;
    });
    let started = () => {};
    const handlerStarted = new Promise<void>((resolve) => {
      started = resolve;
    });
    const { server, drain, port } = await serve((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => {
        body += c.toString();
      });
      req.on('end', async () => {
        if (body === 'slow') {
          started();
          await running;
        }
        res.end(`ok ${body}`);
      });
    });
    const slow = send(port, { body: 'slow' });
    const held = send(port, { body: 'late', hold: true });
    await Promise.all([handlerStarted, held.continued]);
    const drained = drain.drain(10_000);
    // Once the listener is closed, a new client is refused by the kernel.
    while (server.listening) await new Promise<void>((resolve) => setImmediate(resolve));
    expect((await send(port).outcome).status).toBe('ECONNREFUSED');
    held.release();
    finish();
    expect(await slow.outcome).toEqual({ status: 200, connection: 'close', body: 'ok slow' });
    expect(await held.outcome).toEqual({ status: 200, connection: 'close', body: 'ok late' });
    await drained;
  });

  it('accepts and answers connections the kernel completed before the stop but the process had not accepted', async () => {
    const { drain, port } = await serve();
    const clients = Array.from({ length: 20 }, (_, i) => send(port, { body: String(i) }));
    // Each client connects on the next tick; the server's next poll phase would accept them. Stopping now,
    // before that phase, is a signal handled while the connections wait in the backlog.
    await new Promise<void>((resolve) => process.nextTick(resolve));
    const drained = drain.drain(10_000);
    const outcomes = await Promise.all(clients.map((c) => c.outcome));
    expect(outcomes.map((o) => `${o.status} ${o.body}`)).toEqual(Array.from({ length: 20 }, (_, i) => `200 ok ${i}`));
    await drained;
  });

  it('reads a request that reached an idle keep-alive connection before a late idle timer ends it', async () => {
    const { server, drain, port } = await serve((_req, res) => res.end('ok'));
    const socket = net.connect(port, '127.0.0.1');
    let data = '';
    socket.on('data', (c: Buffer) => {
      data += c.toString();
    });
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.on('error', () => {});
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.write('GET /first HTTP/1.1\r\nHost: x\r\n\r\n');
    while (!data.includes('\r\n\r\nok')) await new Promise((r) => setTimeout(r, 5));
    const drained = drain.drain(10_000);
    // Once the listener closed (the idle timer starts then) the next request goes out, and the process is
    // busy past the idle time, as a loaded control plane is.
    while (server.listening) await new Promise<void>((resolve) => setImmediate(resolve));
    socket.write('GET /second HTTP/1.1\r\nHost: x\r\n\r\n');
    const busyUntil = Date.now() + 400;
    while (Date.now() < busyUntil) {
      // A synchronous stall: timers and I/O wait.
    }
    await closed;
    const answers = data.split('HTTP/1.1 200 OK');
    expect(answers).toHaveLength(3);
    expect(answers[2]).toMatch(/connection: close/i);
    await drained;
  });

  it('ends an idle connection after the idle time, and cuts what is left at the grace period', async () => {
    let arrived = () => {};
    const hungArrived = new Promise<void>((resolve) => {
      arrived = resolve;
    });
    // Never answers.
    const { drain, port } = await serve(() => arrived());
    const idle = net.connect(port, '127.0.0.1');
    idle.on('error', () => {});
    const idleClosed = new Promise<number>((resolve) => idle.once('close', () => resolve(Date.now())));
    await new Promise<void>((resolve) => idle.once('connect', () => resolve()));
    const hung = send(port);
    await hungArrived;
    const started = Date.now();
    await drain.drain(1_000);
    const took = Date.now() - started;
    expect((await idleClosed) - started).toBeLessThan(900);
    expect(took).toBeGreaterThanOrEqual(950);
    expect(took).toBeLessThan(2_000);
    expect((await hung.outcome).status).toBe('ECONNRESET');
  });
});
