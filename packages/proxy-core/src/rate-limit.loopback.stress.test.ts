import net from 'node:net';
import { emptySite, type RouteSpec } from '@proxyd/model';
import { describe, expect, it } from 'vitest';
import { get, siteProxy } from './loopback.test-helpers.js';

// The long rate_limit run (the `stress` Vitest project): 101,000 pipelined
// requests, one distinct client each, through the real ProxyServer.

function limited(n: number): RouteSpec {
  const s = emptySite([{ scheme: 'http', host: 'app.test', port: null }]);
  s.rate_limit = n;
  s.handler = { kind: 'respond', status: 200, body: 'ok' };
  return { domain: 'app.test', origin: 'proxyfile', source: null, site: s };
}

describe('rate_limit with distinct clients over a real listener', () => {
  it('holds 100,000 distinct clients in one window; clients over the cap share one allowance', async () => {
    const clock = { t: 7_000 };
    const { port } = await siteProxy([limited(5)], { trustedProxies: ['127.0.0.1'] }, { now: () => clock.t });
    const ip = (i: number) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
    // 100,000 + 1,000 pipelined requests on a few connections, one distinct client each.
    const statuses = await pipelined(port, 100_000 + 1_000, (i) => ip(i), 8);
    const over = statuses.slice(100_000);
    expect(statuses.slice(0, 100_000).every((s) => s === 200)).toBe(true);
    // The 1,000 clients beyond the 100,000-key cap are not admitted untracked: 5 of them pass, together.
    expect(over.filter((s) => s === 200)).toHaveLength(5);
    expect(over.filter((s) => s === 429)).toHaveLength(995);
    // A client tracked before the cap is still limited on its own (4 more, then 429).
    const mine: number[] = [];
    for (let i = 0; i < 5; i++) mine.push((await get(port, 'app.test', '/', { 'x-forwarded-for': ip(12_345) })).status);
    expect(mine).toEqual([200, 200, 200, 200, 429]);
  }, 120_000);
});

/**
 * Sends `count` GET requests pipelined over `connections` keep-alive
 * connections (request i from client `clientOf(i)` through
 * `X-Forwarded-For`, in order i on connection i % connections) and returns
 * each status, in request order.
 */
async function pipelined(
  port: number,
  count: number,
  clientOf: (i: number) => string,
  connections: number,
): Promise<number[]> {
  const statuses = new Array<number>(count).fill(0);
  const lanes = Array.from({ length: connections }, (_, lane) => lane);
  await Promise.all(
    lanes.map(
      (lane) =>
        new Promise<void>((resolve, reject) => {
          const socket = net.connect(port, '127.0.0.1');
          const mine: number[] = [];
          for (let i = lane; i < count; i += connections) mine.push(i);
          let answered = 0;
          let buffered = '';
          socket.setEncoding('latin1');
          socket.on('error', reject);
          socket.on('data', (chunk: string) => {
            buffered += chunk;
            // Each answer: a status line, headers with Content-Length, a body of that length.
            for (;;) {
              const head = buffered.indexOf('\r\n\r\n');
              if (head < 0) break;
              const length = /\r\ncontent-length: *(\d+)/i.exec(buffered.slice(0, head));
              const end = head + 4 + Number(length?.[1] ?? 0);
              if (buffered.length < end) break;
              statuses[mine[answered++] as number] = Number(buffered.slice(9, 12));
              buffered = buffered.slice(end);
            }
            if (answered === mine.length) {
              socket.end();
              resolve();
            }
          });
          // Write in batches so the socket's buffer stays small.
          let i = 0;
          const pump = () => {
            let text = '';
            for (let k = 0; k < 500 && i < mine.length; k++, i++) {
              text += `GET / HTTP/1.1\r\nhost: app.test\r\nx-forwarded-for: ${clientOf(mine[i] as number)}\r\n\r\n`;
            }
            if (text === '') return;
            if (socket.write(text)) setImmediate(pump);
            else socket.once('drain', pump);
          };
          pump();
        }),
    ),
  );
  return statuses;
}
