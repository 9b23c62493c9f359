// Issue 32: the fast path reads upstream responses into a buffer it reuses
// from read to read. Bytes the client still holds (queued behind a slow
// client, collected for a rewrite, inside a transform) must survive the
// reads after them.
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { PoolMember } from '../pool/upstream-pool.js';
import { FastUpstreams, READ_BYTES, type UpstreamClient } from './upstream-conn.js';

const PART = 200_000;
const servers: net.Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

/** An upstream answering one request with a Content-Length body of three parts (bytes 1, 2, 3), a pause between them. */
async function threeParts(): Promise<number> {
  const server = net.createServer((socket) => {
    socket.once('data', async () => {
      socket.write(`HTTP/1.1 200 OK\r\nContent-Length: ${3 * PART}\r\n\r\n`);
      for (const fill of [1, 2, 3]) {
        socket.write(Buffer.alloc(PART, fill));
        await new Promise((resolve) => setTimeout(resolve, 30));
      }
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as net.AddressInfo).port;
}

describe('issue 32: the fast path reads upstream responses into a reused buffer', () => {
  it('keeps every byte a client holds on to intact through the reads after it', async () => {
    expect(PART).toBeGreaterThan(READ_BYTES);
    const port = await threeParts();
    const upstreams = new FastUpstreams(1000, 5000);
    const member = { address: { host: '127.0.0.1', port } } as unknown as PoolMember;
    const chunks: Buffer[] = [];
    const body = await new Promise<Buffer>((resolve, reject) => {
      const client: UpstreamClient = {
        noBody: false,
        respond: () => {},
        // Kept as handed over, no copy: as a rewrite collects a body or a socket queues a write.
        data: (chunk) => {
          chunks.push(chunk);
          return true;
        },
        holds: () => true,
        pull: () => {},
        end: () => resolve(Buffer.concat(chunks)),
        fail: (code) => reject(new Error(code)),
      };
      upstreams.take(member).start(client, 'GET / HTTP/1.1\r\nHost: up\r\n\r\n');
    });
    upstreams.closeAll();
    expect(chunks.length).toBeGreaterThan(2);
    expect(body.length).toBe(3 * PART);
    for (const [i, fill] of [1, 2, 3].entries()) {
      const part = body.subarray(i * PART, (i + 1) * PART);
      expect(part.every((b) => b === fill)).toBe(true);
    }
  });
});
