import { execFile } from 'node:child_process';
import net, { type AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { get, onCleanup, proxy, rawExchange, site, wait } from '../loopback.test-helpers.js';

/**
 * An upstream on a raw socket: `answer` gets each request's first line and
 * the socket, and writes whatever bytes it likes. Counts its connections.
 */
async function rawUpstream(answer: (requestLine: string, socket: net.Socket) => void) {
  const up = { port: 0, connections: 0 };
  const open = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    up.connections++;
    open.add(socket);
    socket.on('close', () => open.delete(socket));
    socket.on('data', (d: Buffer) => answer(d.toString('latin1').split('\r\n')[0] ?? '', socket));
    socket.on('error', () => {});
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  onCleanup(
    () =>
      new Promise<void>((r) => {
        server.close(() => r());
        for (const s of open) s.destroy();
      }),
  );
  up.port = (server.address() as AddressInfo).port;
  return up;
}

const OK = 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok';

// Issue 20: "an upstream 204 with a body, or a body sent for HEAD, gives the
// client an empty reply". As nginx: status and headers go to the client
// without a body, the extra bytes are discarded and that upstream
// connection is not reused.
describe('issue 20: bodyless responses whose upstream sends a body', () => {
  it('a 204 with Content-Length and a body reaches the client as a 204 without a body', async () => {
    const up = await rawUpstream((line, s) =>
      s.write(
        line.startsWith('GET /204') ? 'HTTP/1.1 204 No Content\r\nContent-Length: 5\r\nX-Up: yes\r\n\r\nhello' : OK,
      ),
    );
    const { port } = await proxy([site('a.test', [up.port])]);
    const reply = await rawExchange(port, 'GET /204 HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n', 1000);
    expect(reply).toMatch(/^HTTP\/1\.1 204 No Content\r\n/);
    expect(reply.toLowerCase()).toContain('x-up: yes');
    expect(reply.toLowerCase()).not.toContain('content-length');
    expect(reply.endsWith('\r\n\r\n')).toBe(true);
    // The desynchronised connection is not reused: the next request opens another.
    const next = await get(port, 'a.test', '/next');
    expect(next).toMatchObject({ status: 200, body: 'ok' });
    expect(up.connections).toBe(2);
  });

  it('a HEAD answered with a body reaches the client with its status and headers, no body', async () => {
    const up = await rawUpstream((line, s) =>
      s.write(line.startsWith('HEAD') ? 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Up: yes\r\n\r\nhello' : OK),
    );
    const { port } = await proxy([site('a.test', [up.port])]);
    const reply = await rawExchange(port, 'HEAD / HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n', 1000);
    expect(reply).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(reply.toLowerCase()).toContain('content-length: 5');
    expect(reply.toLowerCase()).toContain('x-up: yes');
    expect(reply.endsWith('\r\n\r\n')).toBe(true);
    const next = await get(port, 'a.test', '/next', {}, false, 'POST', 'x');
    expect(next).toMatchObject({ status: 200, body: 'ok' });
    expect(up.connections).toBe(2);
  });

  it('a 304 with a body reaches the client as a 304 without a body', async () => {
    const up = await rawUpstream((_line, s) => s.write('HTTP/1.1 304 Not Modified\r\nETag: "e"\r\n\r\nhello'));
    const { port } = await proxy([site('a.test', [up.port])]);
    const reply = await get(port, 'a.test', '/', { 'if-none-match': '"e"' });
    expect(reply).toMatchObject({ status: 304, body: '' });
    expect(reply.headers.etag).toBe('"e"');
  });

  it('body bytes arriving after the response close the pooled connection, so no later request reads them', async () => {
    const up = await rawUpstream((line, s) => {
      if (!line.startsWith('HEAD')) return void s.write(OK);
      s.write('HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n');
      setTimeout(() => s.write('hello'), 30);
    });
    const { port } = await proxy([site('a.test', [up.port])]);
    expect(await get(port, 'a.test', '/', {}, false, 'HEAD')).toMatchObject({ status: 200, body: '' });
    await wait(100);
    expect(await get(port, 'a.test', '/', {}, false, 'POST', 'x')).toMatchObject({ status: 200, body: 'ok' });
    expect(up.connections).toBe(2);
  });

  it('curl sees the 204 and the HEAD answer with their status', async () => {
    const up = await rawUpstream((line, s) =>
      s.write(
        line.startsWith('HEAD')
          ? 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello'
          : 'HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nhello',
      ),
    );
    const { port } = await proxy([site('a.test', [up.port])]);
    const curl = (...args: string[]) =>
      promisify(execFile)('curl', ['-sS', '-o', '/dev/null', '-w', '%{http_code}', '-H', 'Host: a.test', ...args]);
    expect((await curl(`http://127.0.0.1:${port}/`)).stdout).toBe('204');
    expect((await curl('-I', `http://127.0.0.1:${port}/`)).stdout).toBe('200');
  });
});
